package edgeplane

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/edgeplane/edgeplane/internal/records"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/store"
)

// The edge proxy calls: one call returns everything a proxy applies to an
// edge or route. They are host operations (a proxy acts for the service,
// not for a user), so they take the account ID instead of a Principal.
// Each returns a snapshot: a proxy reloads it when the edge, its routes or
// the IP policies and rules its modules name change (their change events).

// loadEdgeRecord reads and decodes the record id of form f's kind in
// accountID.
func loadEdgeRecord[M any](ctx context.Context, s *Service, accountID string, f records.Form[M], id string) (*M, store.Record, error) {
	if !ids.Valid(accountID, AccountPrefix) {
		return nil, store.Record{}, accountKind.NotFound(accountID)
	}
	if !ids.Valid(id, f.Prefix) {
		return nil, store.Record{}, f.NotFound(id)
	}
	v, rec, err := f.Read(ctx, s.db, accountID, id)
	if err != nil {
		return nil, store.Record{}, s.db.StoreErr(err, f.Kind, id)
	}
	return v, rec, nil
}

// ipSet returns the combined rules of the account's IP policies. It reads
// every rule of each policy or fails: a policy with more than
// ipaccess.MaxRulesPerPolicy rules (which CreateIPPolicyRule never makes)
// is an error, never a set built from part of its rules. Each policy's
// set is shared with every other config that names the policy with the
// same rules (see policySets), so that many edges naming the same big
// policies hold their rules once.
func (s *Service) ipSet(ctx context.Context, accountID string, policyIDs []string) (*ipaccess.Set, error) {
	sets := make([]*ipaccess.Set, 0, len(policyIDs))
	for _, id := range policyIDs {
		recs, err := records.ListCapped(ctx, s.db, accountID, ipRuleKind, id, ipaccess.MaxRulesPerPolicy)
		if err != nil {
			return nil, err
		}
		rules := make([]ipaccess.Rule, 0, len(recs))
		for _, rec := range recs {
			r, err := ipRuleForm.Decode(s.db, rec)
			if err != nil {
				return nil, err
			}
			rules = append(rules, *r)
		}
		set, err := s.ipSets.get(accountID+"/"+id, rules)
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

// maxPolicySets bounds the policy sets kept for sharing; past it, one is
// forgotten (its users keep it; a new user builds another).
const maxPolicySets = 4096

// policySets keeps the set built for each IP policy with the digest of
// the rules it was built from: a config that names the policy while its
// rules are the same gets the same *Set. The zero value is ready.
type policySets struct {
	mu   sync.Mutex
	sets map[string]policySet // by account/policy ID
}

type policySet struct {
	sum [sha256.Size]byte
	set *ipaccess.Set
}

// get returns the set of rules, the one already built for key when its
// rules were the same.
func (c *policySets) get(key string, rules []ipaccess.Rule) (*ipaccess.Set, error) {
	h := sha256.New()
	for _, r := range rules {
		h.Write([]byte(r.CIDR))
		h.Write([]byte{0})
		h.Write([]byte(r.Action))
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	c.mu.Lock()
	e, ok := c.sets[key]
	c.mu.Unlock()
	if ok && e.sum == sum {
		return e.set, nil
	}
	set, err := ipaccess.NewSet(rules)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sets == nil {
		c.sets = map[string]policySet{}
	}
	if _, ok := c.sets[key]; !ok && len(c.sets) >= maxPolicySets {
		for k := range c.sets { // forget one, any
			delete(c.sets, k)
			break
		}
	}
	c.sets[key] = policySet{sum: sum, set: set}
	return set, nil
}

// ipRestrictionConfig returns the runtime form of an IP restriction
// module, nil when it is not set or disabled.
func (s *Service) ipRestrictionConfig(ctx context.Context, accountID string, m *edges.IPRestriction) (*edgeconfig.IPRestriction, error) {
	if m == nil || !m.Enabled {
		return nil, nil
	}
	set, err := s.ipSet(ctx, accountID, m.PolicyIDs())
	if err != nil {
		return nil, err
	}
	return edgeconfig.NewIPRestriction(m.PolicyIDs(), set), nil
}

// httpsRouteConfig is [DataPlaneHost.HTTPSRouteConfig].
func (s *Service) httpsRouteConfig(ctx context.Context, accountID, edgeID, routeID string) (*edgeconfig.Route, error) {
	if _, _, err := loadEdgeRecord(ctx, s, accountID, httpsEdgeForm.Form, edgeID); err != nil {
		return nil, err
	}
	r, rec, err := loadEdgeRecord(ctx, s, accountID, httpsRouteForm.Form, routeID)
	if err != nil || rec.ParentID != edgeID {
		if err == nil || apierr.CodeOf(err) == apierr.NotFound {
			return nil, routeNotFound(edgeID, routeID)
		}
		return nil, err
	}
	return s.routeConfig(ctx, accountID, r)
}

// httpsEdgeConfig is [DataPlaneHost.HTTPSEdgeConfig].
func (s *Service) httpsEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.HTTPSEdge, error) {
	e, _, err := loadEdgeRecord(ctx, s, accountID, httpsEdgeForm.Form, edgeID)
	if err != nil {
		return nil, err
	}
	recs, err := records.ListCapped(ctx, s.db, accountID, httpsRouteKind, edgeID, edges.MaxRoutesPerEdge)
	if err != nil {
		return nil, err
	}
	routes := make([]*edgeconfig.Route, 0, len(recs))
	for _, rec := range recs {
		r, err := httpsRouteForm.Decode(s.db, rec)
		if err != nil {
			return nil, err
		}
		c, err := s.routeConfig(ctx, accountID, r)
		if err != nil {
			return nil, err
		}
		routes = append(routes, c)
	}
	c := edgeconfig.NewHTTPSEdge(accountID, edgeID, routes)
	c.Hostports = slices.Clone(e.Hostports)
	return c, nil
}

// tcpEdgeConfig is [DataPlaneHost.TCPEdgeConfig].
func (s *Service) tcpEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.TCPEdge, error) {
	e, _, err := loadEdgeRecord(ctx, s, accountID, tcpEdgeForm.Form, edgeID)
	if err != nil {
		return nil, err
	}
	ipr, err := s.ipRestrictionConfig(ctx, accountID, e.IPRestriction)
	if err != nil {
		return nil, err
	}
	return &edgeconfig.TCPEdge{AccountID: accountID, EdgeID: edgeID, Hostports: slices.Clone(e.Hostports),
		IPRestriction: ipr, Backend: edgeconfig.NewBackend(e.Backend)}, nil
}

// EndpointRestrictions is what an edge proxy applies to the traffic of
// every edge of an account: [ipaccess.EndpointRestrictions].
type EndpointRestrictions = ipaccess.EndpointRestrictions

// endpointRestrictions is [DataPlaneHost.EndpointRestrictions].
func (s *Service) endpointRestrictions(ctx context.Context, accountID string) (*EndpointRestrictions, error) {
	if !ids.Valid(accountID, AccountPrefix) {
		return nil, accountKind.NotFound(accountID)
	}
	e, policyIDs, err := s.restrictionsOf(ctx, accountID, ipaccess.TypeEndpoints)
	if err != nil {
		return nil, err
	}
	return &EndpointRestrictions{Enforcer: e, IPPolicyIDs: policyIDs}, nil
}

// newPolicyEngine returns engine, or when it is nil a traffic policy
// engine with the built-in actions, the Service's clock and a sink on its
// logger.
func newPolicyEngine(engine *policy.Engine, now func() time.Time, log *slog.Logger) (*policy.Engine, error) {
	if engine != nil {
		return engine, nil
	}
	engine, err := policy.NewEngine(policy.Options{Clock: now, Sink: policy.NewSlogSink(log)})
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "cannot build the default traffic policy engine") // a bug: the built-ins always register
	}
	return engine, nil
}

// compileStored compiles the stored traffic policy module m of the edge or
// route id (of kind noun) for target, with id as the policy's scope: a
// recompilation of the same edge or route keeps its rate limiters' counts,
// while two edges or routes with the same config count separately. It
// returns nil when m is not set or disabled. IP policies named by
// restrict-ips actions are read now.
func (s *Service) compileStored(ctx context.Context, accountID string, m *edges.TrafficPolicy, target policy.Target, noun, id string) (*policy.Policy, error) {
	if m == nil || !m.Enabled {
		return nil, nil
	}
	var failure error
	resolve := func(list []string) (policy.IPChecker, error) {
		set, err := s.ipSet(ctx, accountID, list)
		if err != nil {
			failure = err
			return nil, err
		}
		return ipSetChecker{set}, nil
	}
	pol, err := s.policy.CompileJSON([]byte(m.Value), policy.CompileOptions{Target: target, Scope: id, IPPolicies: resolve})
	switch {
	case failure != nil:
		return nil, failure
	case err != nil:
		// Stored documents compiled when they were written; only a
		// different engine (other custom actions) gets here.
		s.log.Error("stored traffic policy does not compile", "id", id, "err", err)
		return nil, apierr.Wrap(apierr.FailedPrecondition, err,
			"the traffic policy of "+noun+" "+id+" does not compile with this service's policy engine; replace it")
	}
	return pol, nil
}

// routeConfig returns the runtime form of a stored route, its traffic
// policy compiled for HTTP.
func (s *Service) routeConfig(ctx context.Context, accountID string, r *edges.HTTPSRoute) (*edgeconfig.Route, error) {
	pol, err := s.compileStored(ctx, accountID, r.TrafficPolicy, policy.TargetHTTP, httpsRouteKind.Noun, r.ID)
	if err != nil {
		return nil, err
	}
	c := edgeconfig.NewRoute(accountID, r)
	c.TrafficPolicy = pol
	if pol != nil {
		c.IPPolicyIDs = slices.Compact(slices.Sorted(slices.Values(r.TrafficPolicy.IPPolicyIDs)))
	}
	return c, nil
}

// ipSetChecker is an [ipaccess.Set] as the policy package's IP checker.
type ipSetChecker struct{ set *ipaccess.Set }

func (c ipSetChecker) AllowedIP(ip netip.Addr) bool { return c.set.Allowed(ip) }

// tlsEdgeConfig is [DataPlaneHost.TLSEdgeConfig].
func (s *Service) tlsEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.TLSEdge, error) {
	e, _, err := loadEdgeRecord(ctx, s, accountID, tlsEdgeForm.Form, edgeID)
	if err != nil {
		return nil, err
	}
	ipr, err := s.ipRestrictionConfig(ctx, accountID, e.IPRestriction)
	if err != nil {
		return nil, err
	}
	pol, err := s.compileStored(ctx, accountID, e.TrafficPolicy, policy.TargetConnection, tlsEdgeKind.Noun, edgeID)
	if err != nil {
		return nil, err
	}
	c := edgeconfig.NewTLSEdge(accountID, e, ipr, pol)
	c.Hostports = slices.Clone(e.Hostports)
	if pol != nil {
		c.PolicyIPPolicyIDs = slices.Clone(e.TrafficPolicy.IPPolicyIDs)
	}
	return c, nil
}
