package edgeplane

import (
	"context"
	"net/netip"
	"sync"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/store"
)

// IP restrictions of the types the Service's own surfaces serve: api
// (checked by the transport of the management API on every
// authenticated request, [Service.CheckIPRestrictions]), agent (checked
// when a tunnel server opens an agent's session, and again by the tunnel
// server for the sessions it holds whenever a restriction or an IP
// policy of the account changes, [TunnelHost.IPRestrictions]) and
// dashboard (for a web console; none is built in yet). The type
// endpoints is the edge proxy's ([DataPlaneHost.EndpointRestrictions]).
//
// Every check reads the account's restrictions of the type, each with
// the combined rules of its IP policies, through an access cache: an
// account's compiled restrictions are kept until one of its IP
// restrictions, IP policies or rules is written, by this Service (its
// store drops them before the write returns) or by another process (the
// cache's follower of the change feed drops them, and a request's fence
// waits for it: see package internal/fence). A check that cannot read
// the restrictions fails, and the traffic with it: restrictions fail
// closed.

// maxAccessEntries bounds the access cache: past it, it is emptied.
const maxAccessEntries = 10_000

// accessCache keeps the compiled IP restrictions of an account by type.
// Every API request reads it, on every core: a hit takes no lock (as the
// authentication cache). A nil *accessCache keeps nothing: every check
// reads the store.
type accessCache struct {
	m sync.Map // accessKey -> *accessEntry

	mu  sync.Mutex // held by the writers: put, forget, clear
	gen uint64     // bumped by every forget and clear
	n   int        // entries in m
}

type accessKey struct{ account, typ string }

// accessEntry is what is kept of one account and type: its Enforcer,
// nil when it has no restriction of the type.
type accessEntry struct{ e *ipaccess.Enforcer }

// get returns what is kept of (account, typ).
func (c *accessCache) get(account, typ string) (*ipaccess.Enforcer, bool) {
	if c == nil {
		return nil, false
	}
	v, ok := c.m.Load(accessKey{account, typ})
	if !ok {
		return nil, false
	}
	return v.(*accessEntry).e, true
}

// note returns the generation to pass to put: read it before reading the
// store, so that restrictions read before a change are not kept after it.
func (c *accessCache) note() uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put keeps e for (account, typ) unless something was forgotten since
// gen was noted.
func (c *accessCache) put(account, typ string, e *ipaccess.Enforcer, gen uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.n >= maxAccessEntries {
		c.m.Clear()
		c.n = 0
	}
	if _, had := c.m.Swap(accessKey{account, typ}, &accessEntry{e}); !had {
		c.n++
	}
}

// forget drops what is kept of account.
func (c *accessCache) forget(account string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, typ := range ipaccess.Types {
		if _, had := c.m.LoadAndDelete(accessKey{account, typ}); had {
			c.n--
		}
	}
}

// clear drops everything.
func (c *accessCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.m.Clear()
	c.n = 0
}

// accessKind reports whether a change of kind k may change what an
// account's IP restrictions decide.
func accessKind(k store.Kind) bool {
	role, _ := kinds.DataPlaneRoleOf(k)
	switch role {
	case kinds.DataPlaneIPRestriction, kinds.DataPlaneIPPolicy, kinds.DataPlaneIPPolicyRule:
		return true
	}
	return false
}

// accessInvalidating is the Service's store with its writes of IP
// restrictions, policies and rules dropping their account from the access
// cache when they return (a failed write too: whether it committed may be
// unknown).
type accessInvalidating struct {
	store.Store
	cache *accessCache
}

func (st accessInvalidating) forget(kind store.Kind, account string) {
	if accessKind(kind) {
		st.cache.forget(account)
	}
}

func (st accessInvalidating) Create(ctx context.Context, rec store.Record) error {
	defer st.forget(rec.Kind, rec.AccountID)
	return st.Store.Create(ctx, rec)
}

func (st accessInvalidating) Update(ctx context.Context, kind store.Kind, accountID, id string, fn func(*store.Record) error) (store.Record, error) {
	defer st.forget(kind, accountID)
	return st.Store.Update(ctx, kind, accountID, id, fn)
}

func (st accessInvalidating) Replace(ctx context.Context, rec store.Record) (store.Record, error) {
	defer st.forget(rec.Kind, rec.AccountID)
	return st.Store.Replace(ctx, rec)
}

func (st accessInvalidating) Delete(ctx context.Context, kind store.Kind, accountID, id string, note store.Note) error {
	defer st.forget(kind, accountID)
	return st.Store.Delete(ctx, kind, accountID, id, note)
}

func (st accessInvalidating) DeleteIf(ctx context.Context, kind store.Kind, accountID, id string, version int64, note store.Note) error {
	defer st.forget(kind, accountID)
	return st.Store.DeleteIf(ctx, kind, accountID, id, version, note)
}

// restrictionsOf reads the account's IP restrictions of type typ and
// returns their Enforcer (nil when there are none) and the IP policies
// they use, sorted and without repeats.
func (s *Service) restrictionsOf(ctx context.Context, accountID, typ string) (*ipaccess.Enforcer, []string, error) {
	recs, err := records.ListCapped(ctx, s.db, accountID, ipRestrictionKind, "", ipaccess.MaxRestrictionsPerAccount)
	if err != nil {
		return nil, nil, err
	}
	var (
		rs   []ipaccess.Restriction
		sets []*ipaccess.Set
	)
	for _, rec := range recs {
		r, err := ipRestrictionForm.Decode(s.db, rec)
		if err != nil {
			return nil, nil, err
		}
		if r.Type != typ {
			continue
		}
		set, err := s.ipSet(ctx, accountID, records.RefIDs(r.IPPolicies))
		if err != nil {
			return nil, nil, err
		}
		rs = append(rs, *r)
		sets = append(sets, set)
	}
	if len(rs) == 0 {
		return nil, nil, nil
	}
	return ipaccess.NewEnforcer(rs, sets), ipaccess.PolicyIDs(rs), nil
}

// enforcerOf returns the Enforcer of the account's restrictions of type
// typ (nil: none), from the access cache when it is current.
func (s *Service) enforcerOf(ctx context.Context, accountID, typ string) (*ipaccess.Enforcer, error) {
	cached := s.access != nil && s.fence.Wait(ctx) == nil
	var gen uint64
	if cached {
		if e, ok := s.access.get(accountID, typ); ok {
			return e, nil
		}
		gen = s.access.note()
	}
	e, _, err := s.restrictionsOf(ctx, accountID, typ)
	if err != nil {
		return nil, err
	}
	if cached {
		s.access.put(accountID, typ, e, gen)
	}
	return e, nil
}

// checkIPRestrictions is [Service.CheckIPRestrictions] (cached: true) and
// the check of an agent's session when it opens (cached: false). A
// runtime part that acts on a change of the restrictions it saw in the
// feed reads them from the store: this Service's own write may not have
// dropped them from the access cache yet.
func (s *Service) checkIPRestrictions(ctx context.Context, accountID, typ string, ip netip.Addr, cached bool) error {
	if typeOK := typ == ipaccess.TypeAPI || typ == ipaccess.TypeAgent || typ == ipaccess.TypeDashboard; !typeOK {
		return apierr.Invalidf("type", "must be %s, %s or %s: restrictions of type %s are the edge proxy's (DataPlaneHost.EndpointRestrictions)",
			ipaccess.TypeAPI, ipaccess.TypeAgent, ipaccess.TypeDashboard, ipaccess.TypeEndpoints)
	}
	if !ids.Valid(accountID, AccountPrefix) {
		return accountKind.NotFound(accountID)
	}
	var (
		e   *ipaccess.Enforcer
		err error
	)
	if cached {
		e, err = s.enforcerOf(ctx, accountID, typ)
	} else {
		e, _, err = s.restrictionsOf(ctx, accountID, typ)
	}
	if err != nil {
		s.log.Error("IP restrictions cannot be read; the traffic they restrict is refused", "account", accountID, "type", typ, "err", err)
		return apierr.Wrap(apierr.Internal, err, "internal error")
	}
	ip = ip.Unmap()
	refusedBy, warnings := e.Check(ip)
	now := s.now()
	for _, id := range warnings {
		if s.ipTally.Warned(typ, id, ip, now) {
			s.log.Warn("an IP restriction that is not enforced would refuse this address; let through", "type", typ,
				"ip_restriction", id, "account", accountID, "ip", addrString(ip))
		}
	}
	if refusedBy == "" {
		return nil
	}
	s.ipTally.Refused(typ)
	s.log.Info("refused by an IP restriction", "type", typ, "ip_restriction", refusedBy, "account", accountID, "ip", addrString(ip))
	return refusal(typ, refusedBy, ip)
}

// refusal is the PermissionDenied error of traffic of type typ from ip
// refused by restriction id.
func refusal(typ, id string, ip netip.Addr) error {
	from := addrString(ip)
	if from == "" {
		from = "an unknown address"
	}
	switch typ {
	case ipaccess.TypeAPI:
		return apierr.New(apierr.PermissionDenied,
			"API requests from %s are refused by IP restriction %s of this account; send them from an address its IP policies allow, or ask an admin of the account to change the restriction", from, id)
	case ipaccess.TypeAgent:
		return apierr.New(apierr.PermissionDenied,
			"agents may not connect from %s: IP restriction %s of this account refuses the address; connect from an address its IP policies allow, or change the restriction", from, id)
	default:
		return apierr.New(apierr.PermissionDenied,
			"the console refuses %s: IP restriction %s of this account does not allow the address; sign in from an address its IP policies allow", from, id)
	}
}

// CheckIPRestrictions checks ip, the address a request of p comes from,
// against the IP restrictions of p's account of type typ:
// [ipaccess.TypeAPI] for the management API, [ipaccess.TypeDashboard]
// for a web console. It returns nil when they let the request through
// (logging a warning, at most once per restriction and address per
// [ipaccess.WarnInterval], for each restriction that is not enforced and
// would refuse it) and a PermissionDenied error naming the enforced
// restriction that refuses it otherwise; an error reading the
// restrictions refuses too. An invalid ip (unknown) is refused by any
// enforced restriction. Transports call it once per authenticated
// request, before acting on it.
func (s *Service) CheckIPRestrictions(ctx context.Context, p Principal, typ string, ip netip.Addr) error {
	if err := p.Check(); err != nil {
		return err
	}
	return s.checkIPRestrictions(ctx, p.AccountID, typ, ip, true)
}

// IPRestrictionCounts returns how many requests and sessions the
// Service's checks of IP restrictions refused, and let through with a
// warning, by type (for metrics).
func (s *Service) IPRestrictionCounts() []ipaccess.TypeCount { return s.ipTally.Counts() }

// checkSelfLockout refuses an enforced restriction of type api that
// would refuse the address of the request that writes it (p.ClientIP,
// when the transport knows it): an account cannot lock itself out of
// the API with one call.
func (s *Service) checkSelfLockout(ctx context.Context, p Principal, r *ipaccess.Restriction) error {
	if r.Type != ipaccess.TypeAPI || !r.Enforced || !p.ClientIP.IsValid() {
		return nil
	}
	set, err := s.ipSet(ctx, p.AccountID, records.RefIDs(r.IPPolicies))
	if err != nil {
		return err
	}
	ip := p.ClientIP.Unmap()
	if set.Allowed(ip) {
		return nil
	}
	return apierr.Invalidf("enforced",
		"this restriction would refuse the address this request comes from (%s) and lock the account out of the API; "+
			"to restrict the API on purpose, write it with enforced: false, then set enforced: true from an address its IP policies allow", ip)
}
