package dataplane

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

// maxAccessEntries bounds the access cache: past it, it is emptied.
const maxAccessEntries = 10_000

// AccessCache keeps the compiled IP restrictions of an account by type.
// Every API request reads it, on every core: a hit takes no lock (as the
// authentication cache). The zero value is ready; a nil *AccessCache
// keeps nothing: every check reads the store.
type AccessCache struct {
	m sync.Map // accessKey -> *accessEntry

	mu  sync.Mutex // held by the writers: put, Forget, Clear
	gen uint64     // bumped by every Forget and Clear
	n   int        // entries in m
}

type accessKey struct{ account, typ string }

// accessEntry is what is kept of one account and type: its Enforcer,
// nil when it has no restriction of the type.
type accessEntry struct{ e *ipaccess.Enforcer }

// get returns what is kept of (account, typ).
func (c *AccessCache) get(account, typ string) (*ipaccess.Enforcer, bool) {
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
func (c *AccessCache) note() uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put keeps e for (account, typ) unless something was forgotten since
// gen was noted.
func (c *AccessCache) put(account, typ string, e *ipaccess.Enforcer, gen uint64) {
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

// Forget drops what is kept of account.
func (c *AccessCache) Forget(account string) {
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

// Clear drops everything.
func (c *AccessCache) Clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.m.Clear()
	c.n = 0
}

// AccessKind reports whether a change of kind k may change what an
// account's IP restrictions decide: a follower of the change feed drops
// the account of such a change from the [AccessCache].
func AccessKind(k store.Kind) bool {
	role, _ := kinds.DataPlaneRoleOf(k)
	switch role {
	case kinds.DataPlaneIPRestriction, kinds.DataPlaneIPPolicy, kinds.DataPlaneIPPolicyRule:
		return true
	}
	return false
}

// Invalidating returns st with its writes of IP restrictions, policies
// and rules dropping their account from c when they return (a failed
// write too: whether it committed may be unknown); st itself when c is
// nil.
func Invalidating(st store.Store, c *AccessCache) store.Store {
	if c == nil {
		return st
	}
	return accessInvalidating{Store: st, cache: c}
}

type accessInvalidating struct {
	store.Store
	cache *AccessCache
}

func (st accessInvalidating) forget(kind store.Kind, account string) {
	if AccessKind(kind) {
		st.cache.Forget(account)
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

// Restrictions reads the account's IP restrictions of type typ from the
// store and returns their Enforcer (nil when there are none) and the IP
// policies they use, sorted and without repeats. At most
// [ipaccess.MaxRestrictionsPerAccount] restrictions are read; a store
// with more is a failed precondition.
func (c *Compiler) Restrictions(ctx context.Context, accountID, typ string) (*ipaccess.Enforcer, []string, error) {
	recs, err := records.ListCapped(ctx, c.db, accountID, c.kinds.IPRestriction.Kind, "", ipaccess.MaxRestrictionsPerAccount)
	if err != nil {
		return nil, nil, err
	}
	var (
		rs   []ipaccess.Restriction
		sets []*ipaccess.Set
	)
	for _, rec := range recs {
		r, err := c.kinds.IPRestriction.Decode(c.db, rec)
		if err != nil {
			return nil, nil, err
		}
		if r.Type != typ {
			continue
		}
		set, err := c.IPSet(ctx, accountID, records.RefIDs(r.IPPolicies))
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

// enforcer returns the Enforcer of the account's restrictions of type
// typ (nil: none), from the access cache when it is current.
func (c *Compiler) enforcer(ctx context.Context, accountID, typ string) (*ipaccess.Enforcer, error) {
	cached := c.access != nil && c.fence.Wait(ctx) == nil
	var gen uint64
	if cached {
		if e, ok := c.access.get(accountID, typ); ok {
			return e, nil
		}
		gen = c.access.note()
	}
	e, _, err := c.Restrictions(ctx, accountID, typ)
	if err != nil {
		return nil, err
	}
	if cached {
		c.access.put(accountID, typ, e, gen)
	}
	return e, nil
}

// Check checks ip against the account's IP restrictions of type typ
// (api, agent or dashboard: endpoints are the edge proxy's): nil when
// they let it through (logging a warning, at most once per restriction
// and address per [ipaccess.WarnInterval], for each restriction that is
// not enforced and would refuse it), a PermissionDenied error naming the
// enforced restriction that refuses it otherwise, and an Internal error
// when the restrictions cannot be read (restrictions fail closed).
// cached reads the restrictions through the access cache: the API's
// check of every request does; a runtime part that acts on a change of
// the restrictions it saw in the feed reads them from the store, since
// the Service's own write may not have dropped them from the cache yet.
func (c *Compiler) Check(ctx context.Context, accountID, typ string, ip netip.Addr, cached bool) error {
	if typeOK := typ == ipaccess.TypeAPI || typ == ipaccess.TypeAgent || typ == ipaccess.TypeDashboard; !typeOK {
		return apierr.Invalidf("type", "must be %s, %s or %s: restrictions of type %s are the edge proxy's (DataPlaneHost.EndpointRestrictions)",
			ipaccess.TypeAPI, ipaccess.TypeAgent, ipaccess.TypeDashboard, ipaccess.TypeEndpoints)
	}
	if !ids.Valid(accountID, c.kinds.Account.Prefix) {
		return c.kinds.Account.NotFound(accountID)
	}
	var (
		e   *ipaccess.Enforcer
		err error
	)
	if cached {
		e, err = c.enforcer(ctx, accountID, typ)
	} else {
		e, _, err = c.Restrictions(ctx, accountID, typ)
	}
	if err != nil {
		c.log.Error("IP restrictions cannot be read; the traffic they restrict is refused", "account", accountID, "type", typ, "err", err)
		return apierr.Wrap(apierr.Internal, err, "internal error")
	}
	ip = ip.Unmap()
	refusedBy, warnings := e.Check(ip)
	now := c.now()
	for _, id := range warnings {
		if c.tally.Warned(typ, id, ip, now) {
			c.log.Warn("an IP restriction that is not enforced would refuse this address; let through", "type", typ,
				"ip_restriction", id, "account", accountID, "ip", ipaccess.AddrString(ip))
		}
	}
	if refusedBy == "" {
		return nil
	}
	c.tally.Refused(typ)
	c.log.Info("refused by an IP restriction", "type", typ, "ip_restriction", refusedBy, "account", accountID, "ip", ipaccess.AddrString(ip))
	return refusal(typ, refusedBy, ip)
}

// IPRestrictionCounts returns how many requests and sessions the checks
// ([Compiler.Check]) refused, and let through with a warning, by type.
func (c *Compiler) IPRestrictionCounts() []ipaccess.TypeCount { return c.tally.Counts() }

// refusal is the PermissionDenied error of traffic of type typ from ip
// refused by restriction id.
func refusal(typ, id string, ip netip.Addr) error {
	from := ipaccess.AddrString(ip)
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
