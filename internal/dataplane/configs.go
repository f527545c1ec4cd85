package dataplane

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/fence"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/store"
)

// Kinds are the Service's kinds a [Compiler] reads: the identity of
// accounts, the stored forms of the records it compiles, and the error
// the API gives for a route missing from its edge.
type Kinds struct {
	Account       *records.Kind
	HTTPSEdge     records.Form[edges.HTTPSEdge]
	HTTPSRoute    records.Form[edges.HTTPSRoute]
	TLSEdge       records.Form[edges.TLSEdge]
	TCPEdge       records.Form[edges.TCPEdge]
	IPRule        records.Form[ipaccess.Rule]
	IPRestriction records.Form[ipaccess.Restriction]
	// RouteNotFound is the error of a route that is missing, of another
	// account or of another edge.
	RouteNotFound func(edgeID, routeID string) error
}

// Compiler reads the records of the data plane's kinds through the
// Service's record machinery and returns their runtime forms. Each is a
// snapshot: a runtime part reloads it when the records it was built from
// change (their change events). The reads are host operations (a proxy
// acts for the service, not for a user): they take the account ID, not a
// principal. A Compiler is safe for concurrent use.
type Compiler struct {
	db     *records.DB
	policy *policy.Engine
	kinds  Kinds
	access *AccessCache
	fence  *fence.Fence
	now    func() time.Time
	log    *slog.Logger

	sets  policySets     // built IP policy sets, shared by every config that names a policy
	tally ipaccess.Tally // what the checks of IP restrictions decided
}

// New returns a Compiler that reads records of k's kinds through db,
// compiles stored traffic policies with engine, keeps the enforcers of
// the Service's checks in access (nil: it keeps none, every check reads
// the store) behind the read fence f (nil: reads need none), and logs to
// log with the time now.
func New(db *records.DB, engine *policy.Engine, k Kinds, access *AccessCache, f *fence.Fence, now func() time.Time, log *slog.Logger) *Compiler {
	return &Compiler{db: db, policy: engine, kinds: k, access: access, fence: f, now: now, log: log}
}

// load reads and decodes the record id of form f's kind in accountID.
func load[M any](ctx context.Context, c *Compiler, accountID string, f records.Form[M], id string) (*M, store.Record, error) {
	if !ids.Valid(accountID, c.kinds.Account.Prefix) {
		return nil, store.Record{}, c.kinds.Account.NotFound(accountID)
	}
	if !ids.Valid(id, f.Prefix) {
		return nil, store.Record{}, f.NotFound(id)
	}
	v, rec, err := f.Read(ctx, c.db, accountID, id)
	if err != nil {
		return nil, store.Record{}, c.db.StoreErr(err, f.Kind, id)
	}
	return v, rec, nil
}

// IPSet returns the combined rules of the account's IP policies. It reads
// every rule of each policy or fails: a policy with more than
// [ipaccess.MaxRulesPerPolicy] rules (which the API never makes) is an
// error, never a set built from part of its rules. Each policy's set is
// shared with every other config that names the policy with the same
// rules, so that many edges naming the same big policies hold their
// rules once.
func (c *Compiler) IPSet(ctx context.Context, accountID string, policyIDs []string) (*ipaccess.Set, error) {
	sets := make([]*ipaccess.Set, 0, len(policyIDs))
	for _, id := range policyIDs {
		recs, err := records.ListCapped(ctx, c.db, accountID, c.kinds.IPRule.Kind, id, ipaccess.MaxRulesPerPolicy)
		if err != nil {
			return nil, err
		}
		rules := make([]ipaccess.Rule, 0, len(recs))
		for _, rec := range recs {
			r, err := c.kinds.IPRule.Decode(c.db, rec)
			if err != nil {
				return nil, err
			}
			rules = append(rules, *r)
		}
		set, err := c.sets.get(accountID+"/"+id, rules)
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "internal error")
		}
		sets = append(sets, set)
	}
	if len(sets) == 1 {
		return sets[0], nil
	}
	return ipaccess.Union(sets...), nil
}

// ipRestriction returns the runtime form of an IP restriction module,
// nil when it is not set or disabled.
func (c *Compiler) ipRestriction(ctx context.Context, accountID string, m *edges.IPRestriction) (*edgeconfig.IPRestriction, error) {
	if m == nil || !m.Enabled {
		return nil, nil
	}
	set, err := c.IPSet(ctx, accountID, m.PolicyIDs())
	if err != nil {
		return nil, err
	}
	return edgeconfig.NewIPRestriction(m.PolicyIDs(), set), nil
}

// HTTPSRoute returns what an edge proxy applies to the requests of one
// route of an HTTPS edge, its traffic policy compiled for HTTP with the
// route ID as its scope; a route of another edge is not found.
func (c *Compiler) HTTPSRoute(ctx context.Context, accountID, edgeID, routeID string) (*edgeconfig.Route, error) {
	if _, _, err := load(ctx, c, accountID, c.kinds.HTTPSEdge, edgeID); err != nil {
		return nil, err
	}
	r, rec, err := load(ctx, c, accountID, c.kinds.HTTPSRoute, routeID)
	if err != nil || rec.ParentID != edgeID {
		if err == nil || apierr.CodeOf(err) == apierr.NotFound {
			return nil, c.kinds.RouteNotFound(edgeID, routeID)
		}
		return nil, err
	}
	return c.route(ctx, accountID, r)
}

// HTTPSEdge returns what an edge proxy applies to an HTTPS edge: every
// route, as [Compiler.HTTPSRoute] gives it, in matching order.
func (c *Compiler) HTTPSEdge(ctx context.Context, accountID, edgeID string) (*edgeconfig.HTTPSEdge, error) {
	e, _, err := load(ctx, c, accountID, c.kinds.HTTPSEdge, edgeID)
	if err != nil {
		return nil, err
	}
	recs, err := records.ListCapped(ctx, c.db, accountID, c.kinds.HTTPSRoute.Kind, edgeID, edges.MaxRoutesPerEdge)
	if err != nil {
		return nil, err
	}
	routes := make([]*edgeconfig.Route, 0, len(recs))
	for _, rec := range recs {
		r, err := c.kinds.HTTPSRoute.Decode(c.db, rec)
		if err != nil {
			return nil, err
		}
		rc, err := c.route(ctx, accountID, r)
		if err != nil {
			return nil, err
		}
		routes = append(routes, rc)
	}
	cfg := edgeconfig.NewHTTPSEdge(accountID, edgeID, routes)
	cfg.Hostports = slices.Clone(e.Hostports)
	return cfg, nil
}

// TCPEdge returns what an edge proxy applies to a TCP edge: its IP
// restriction and its backend.
func (c *Compiler) TCPEdge(ctx context.Context, accountID, edgeID string) (*edgeconfig.TCPEdge, error) {
	e, _, err := load(ctx, c, accountID, c.kinds.TCPEdge, edgeID)
	if err != nil {
		return nil, err
	}
	ipr, err := c.ipRestriction(ctx, accountID, e.IPRestriction)
	if err != nil {
		return nil, err
	}
	return &edgeconfig.TCPEdge{AccountID: accountID, EdgeID: edgeID, Hostports: slices.Clone(e.Hostports),
		IPRestriction: ipr, Backend: edgeconfig.NewBackend(e.Backend)}, nil
}

// EndpointRestrictions returns the account's IP restrictions of type
// endpoints, which an edge proxy applies to the traffic of every edge of
// the account, read from the store now.
func (c *Compiler) EndpointRestrictions(ctx context.Context, accountID string) (*ipaccess.EndpointRestrictions, error) {
	if !ids.Valid(accountID, c.kinds.Account.Prefix) {
		return nil, c.kinds.Account.NotFound(accountID)
	}
	e, policyIDs, err := c.Restrictions(ctx, accountID, ipaccess.TypeEndpoints)
	if err != nil {
		return nil, err
	}
	return &ipaccess.EndpointRestrictions{Enforcer: e, IPPolicyIDs: policyIDs}, nil
}

// compileStored compiles the stored traffic policy module m of the edge or
// route id (of kind noun) for target, with id as the policy's scope: a
// recompilation of the same edge or route keeps its rate limiters' counts,
// while two edges or routes with the same config count separately. It
// returns nil when m is not set or disabled. IP policies named by
// restrict-ips actions are read now.
func (c *Compiler) compileStored(ctx context.Context, accountID string, m *edges.TrafficPolicy, target policy.Target, noun, id string) (*policy.Policy, error) {
	if m == nil || !m.Enabled {
		return nil, nil
	}
	var failure error
	resolve := func(list []string) (policy.IPChecker, error) {
		set, err := c.IPSet(ctx, accountID, list)
		if err != nil {
			failure = err
			return nil, err
		}
		return ipSetChecker{set}, nil
	}
	pol, err := c.policy.CompileJSON([]byte(m.Value), policy.CompileOptions{Target: target, Scope: id, IPPolicies: resolve})
	switch {
	case failure != nil:
		return nil, failure
	case err != nil:
		// Stored documents compiled when they were written; only a
		// different engine (other custom actions) gets here.
		c.log.Error("stored traffic policy does not compile", "id", id, "err", err)
		return nil, apierr.Wrap(apierr.FailedPrecondition, err,
			"the traffic policy of "+noun+" "+id+" does not compile with this service's policy engine; replace it")
	}
	return pol, nil
}

// route returns the runtime form of a stored route, its traffic policy
// compiled for HTTP.
func (c *Compiler) route(ctx context.Context, accountID string, r *edges.HTTPSRoute) (*edgeconfig.Route, error) {
	pol, err := c.compileStored(ctx, accountID, r.TrafficPolicy, policy.TargetHTTP, c.kinds.HTTPSRoute.Noun, r.ID)
	if err != nil {
		return nil, err
	}
	rc := edgeconfig.NewRoute(accountID, r)
	rc.TrafficPolicy = pol
	if pol != nil {
		rc.IPPolicyIDs = slices.Compact(slices.Sorted(slices.Values(r.TrafficPolicy.IPPolicyIDs)))
	}
	return rc, nil
}

// ipSetChecker is an [ipaccess.Set] as the policy package's IP checker.
type ipSetChecker struct{ set *ipaccess.Set }

func (c ipSetChecker) AllowedIP(ip netip.Addr) bool { return c.set.Allowed(ip) }

// TLSEdge returns what an edge proxy applies to a TLS edge: its IP
// restriction, its traffic policy compiled for connection traffic with
// the edge ID as its scope, and where TLS terminates.
func (c *Compiler) TLSEdge(ctx context.Context, accountID, edgeID string) (*edgeconfig.TLSEdge, error) {
	e, _, err := load(ctx, c, accountID, c.kinds.TLSEdge, edgeID)
	if err != nil {
		return nil, err
	}
	ipr, err := c.ipRestriction(ctx, accountID, e.IPRestriction)
	if err != nil {
		return nil, err
	}
	pol, err := c.compileStored(ctx, accountID, e.TrafficPolicy, policy.TargetConnection, c.kinds.TLSEdge.Noun, edgeID)
	if err != nil {
		return nil, err
	}
	cfg := edgeconfig.NewTLSEdge(accountID, e, ipr, pol)
	cfg.Hostports = slices.Clone(e.Hostports)
	if pol != nil {
		cfg.PolicyIPPolicyIDs = slices.Clone(e.TrafficPolicy.IPPolicyIDs)
	}
	return cfg, nil
}

// HostportKey is the store key of a canonical hostport
// ([kinds.HostportKey]): an edge's record holds one per hostport, and an
// agent's endpoint its own, so that a hostport serves one of them in the
// whole store; an edge proxy finds the edge that serves a hostport by it.
func HostportKey(hostport string) string { return kinds.HostportKey(hostport) }
