package agentstate

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// Endpoint pools (see the package doc's # Endpoint pools).

// indexPool is the secondary index of the endpoints bound with pooling
// enabled, by their pool's key ([State.poolKey]).
const indexPool = "endpoint_pool"

// maxPoolRead bounds the members a check of a pool reads: a pool is
// bounded by the account's endpoints, and a check that reads this many
// has seen enough to decide.
const maxPoolRead = records.MaxPageSize

// poolKey returns the key of the pool of e (its Proto, Host and Port
// set): the store key the endpoint holds when it is not pooled that
// names where the proxy serves it: its hostport's, or a tcp endpoint's
// port's (a TCP client names no host).
func (s *State) poolKey(e *agents.Endpoint) string {
	keys := s.endpointKeys(e)
	return keys[len(keys)-1]
}

// alreadyOnline is the refusal of a bind whose URL an endpoint of the
// other kind holds: a pooled bind on an endpoint bound without pooling
// (pooled false), or a bind without pooling on a pool (pooled true).
// The words are the original's (its ERR_NGROK_334); the code is
// Conflict's.
func alreadyOnline(url string, pooled bool) error {
	if pooled {
		return apierr.New(apierr.Conflict, "the endpoint '%s' is already online as a pool of endpoints with pooling enabled. Either 1. stop the pool's endpoints first, or 2. start this endpoint with pooling enabled too to join the pool and load balance between them", url)
	}
	return apierr.New(apierr.Conflict, "the endpoint '%s' is already online without pooling. Either 1. stop your existing endpoint first, or 2. start both endpoints with pooling enabled to load balance between them", url)
}

// createPooled stores r, bound with pooling enabled, as a member of the
// pool of its URL. The record first takes the keys of its hostport, as
// an endpoint without pooling does: the store then says atomically that
// no edge and no endpoint without pooling holds them (a tcp endpoint
// without an address gets its free port that way); then it gives the
// keys back and enters the pool's index, in one update. A record that
// holds the keys while it does so is a member joining (a pooled
// endpoint of the account, with the same protocol): r joins without
// them. Last, [State.checkPool] checks the pool as it now is.
func (s *State) createPooled(ctx context.Context, r *EndpointRecord, refs, slots []string, low, high int) error {
	var err error
	if r.Port != 0 {
		err = s.createEndpoint(ctx, r, refs, slots)
	} else {
		err = s.createEndpointOnFreePort(ctx, r, refs, low, high, slots)
	}
	var dup *store.DuplicateError
	switch {
	case err == nil:
		k := s.ends.Kind
		_, err = s.store.Update(ctx, k.StoreKind, r.AccountID, r.ID, func(rec *store.Record) error {
			rec.Keys = slices.Clone(slots)
			rec.Indexes = []store.IndexEntry{{Name: indexPool, Value: s.poolKey(&r.Endpoint)}}
			return nil
		})
		if err != nil {
			return err
		}
	case errors.As(err, &dup) && slices.Contains(s.endpointKeys(&r.Endpoint), dup.Key):
		holder, ok, lerr := s.endpointHolding(ctx, dup.Key)
		switch {
		case lerr != nil:
			return lerr
		case !ok:
			return err // an edge's: the hostport is taken
		case !holder.PoolingEnabled:
			return alreadyOnline(r.URL, false)
		case holder.AccountID != r.AccountID:
			return err // another account's pool
		}
		// A member of the pool holds the keys for the instant of its
		// own bind: r joins.
		if err := s.createMember(ctx, r, refs, slots); err != nil {
			return err
		}
	default:
		return err
	}
	return s.checkPool(ctx, r)
}

// createMember stores r as a member of its pool without the keys of
// its hostport.
func (s *State) createMember(ctx context.Context, r *EndpointRecord, refs, slots []string) error {
	k := s.ends.Kind
	setEndpointAddress(&r.Endpoint)
	rec := store.Record{Kind: k.StoreKind, AccountID: r.AccountID, ID: r.ID, ParentID: r.TunnelSession.ID, Keys: slices.Clone(slots),
		Refs: refs, Indexes: []store.IndexEntry{{Name: indexPool, Value: s.poolKey(&r.Endpoint)}}, Note: s.db.Note(k.Event, events.Created)}
	if err := s.ends.Encode(s.db, r, &rec); err != nil {
		return err
	}
	return s.store.Create(ctx, rec)
}

// checkPool checks the pool r has just joined: every other member must
// be the account's, at the same hostport, with the same protocol, TLS
// passthrough and traffic policy (the proxy applies one policy to the
// pool's connections). When one is not, r leaves the pool and its bind
// is refused: two binds that race each other are both refused rather
// than both served.
func (s *State) checkPool(ctx context.Context, r *EndpointRecord) error {
	members, err := s.poolMembers(ctx, "", s.poolKey(&r.Endpoint))
	if err != nil {
		return s.leavePool(ctx, r, err)
	}
	for _, m := range members {
		if m.ID == r.ID {
			continue
		}
		var reason error
		switch {
		case m.AccountID != r.AccountID:
			reason = apierr.New(apierr.Conflict, "the address of the endpoint '%s' is already used by another account's endpoint", r.URL)
		case m.Hostport != r.Hostport:
			reason = apierr.New(apierr.Conflict, "the port of the endpoint '%s' is already used by the pool of %s; a TCP client names no host, so a port serves one pool", r.URL, m.URL)
		case m.Proto != r.Proto || m.PassthroughTLS != r.PassthroughTLS:
			reason = apierr.New(apierr.Conflict, "the endpoint '%s' is already online as a pool of %s endpoints%s; the endpoints of a pool share their protocol", r.URL, m.Proto, passthroughWords(m.PassthroughTLS && m.Proto == agents.ProtoTLS))
		case m.TrafficPolicy != r.TrafficPolicy:
			reason = apierr.Invalidf("TrafficPolicy", "must be the traffic policy of the pool of '%s' (the one its endpoint %s was bound with): the endpoints of a pool share one traffic policy", r.URL, m.ID)
		}
		if reason != nil {
			return s.leavePool(ctx, r, reason)
		}
	}
	return nil
}

// passthroughWords names the TLS passthrough of a pool of tls endpoints.
func passthroughWords(passthrough bool) string {
	if passthrough {
		return " whose agents terminate TLS"
	}
	return ""
}

// leavePool removes r, whose bind is refused with err.
func (s *State) leavePool(ctx context.Context, r *EndpointRecord, err error) error {
	k := s.ends.Kind
	if derr := s.store.Delete(ctx, k.StoreKind, r.AccountID, r.ID, s.db.Note(k.Event, events.Deleted)); derr != nil && !errors.Is(derr, apierr.ErrNotFound) {
		s.db.Log.Error("an endpoint refused from its pool could not be removed", "endpoint", r.ID, "err", derr)
	}
	return err
}

// checkNotPooled checks, once r (bound without pooling) holds the keys
// of its hostport, that no pool has members there (a member gives the
// keys back once it is in the pool's index): when one has, r is removed
// and its bind refused.
func (s *State) checkNotPooled(ctx context.Context, r *EndpointRecord) error {
	members, err := s.poolMembers(ctx, "", s.poolKey(&r.Endpoint))
	switch {
	case err != nil:
		return s.leavePool(ctx, r, err)
	case len(members) > 0:
		return s.leavePool(ctx, r, alreadyOnline(r.URL, true))
	}
	return nil
}

// precheckNotPooled refuses r, bound without pooling at an address
// known before it is written, when a pool has members there (before
// it is written: see [State.checkNotPooled] for after).
func (s *State) precheckNotPooled(ctx context.Context, r *EndpointRecord) error {
	if r.PoolingEnabled || r.Port == 0 {
		return nil
	}
	setEndpointAddress(&r.Endpoint)
	members, err := s.poolMembers(ctx, "", s.poolKey(&r.Endpoint))
	switch {
	case err != nil:
		return err
	case len(members) > 0:
		return alreadyOnline(r.URL, true)
	}
	return nil
}

// notPooledErr returns the refusal of a bind without pooling that the
// store refused with err: when the endpoint holding its hostport's key
// is a pooled one (for the instant of its bind), the words of a pooled
// URL; else err as it is.
func (s *State) notPooledErr(ctx context.Context, err error, r *EndpointRecord) error {
	var dup *store.DuplicateError
	if !errors.As(err, &dup) || !slices.Contains(s.endpointKeys(&r.Endpoint), dup.Key) {
		return err
	}
	holder, ok, lerr := s.endpointHolding(ctx, dup.Key)
	if lerr != nil || !ok || !holder.PoolingEnabled || holder.AccountID != r.AccountID {
		return err
	}
	return alreadyOnline(r.URL, true)
}

// endpointHolding returns the endpoint holding store key key, if an
// endpoint does (ok false: none, or an edge).
func (s *State) endpointHolding(ctx context.Context, key string) (*EndpointRecord, bool, error) {
	rec, err := s.store.Lookup(ctx, s.ends.StoreKind, key)
	switch {
	case errors.Is(err, apierr.ErrNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, s.db.StoreErr(err, s.ends.Kind, "")
	}
	r, err := s.ends.Decode(s.db, rec)
	if err != nil {
		return nil, false, err
	}
	return r, true, nil
}

// poolMembers returns the members of the pool of key, oldest first
// (at most maxPoolRead): of account accountID, or of every account
// when it is "" (a check of the whole store).
func (s *State) poolMembers(ctx context.Context, accountID, key string) ([]*EndpointRecord, error) {
	recs, err := s.store.List(ctx, store.Query{Kind: s.ends.StoreKind, AccountID: accountID, Index: indexPool, Value: key, Limit: maxPoolRead})
	if err != nil {
		return nil, s.db.StoreErr(err, s.ends.Kind, "")
	}
	out := make([]*EndpointRecord, 0, len(recs))
	for i := len(recs) - 1; i >= 0; i-- { // lists are newest first
		r, err := s.ends.Decode(s.db, recs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// presentPool fills the Pool of e, an endpoint of the account with
// pooling enabled: its URL and its members as they are now, each a
// reference as the API shows it.
func (s *State) presentPool(ctx context.Context, e *agents.Endpoint) error {
	if !e.PoolingEnabled {
		return nil
	}
	members, err := s.poolMembers(ctx, e.AccountID, s.poolKey(e))
	if err != nil {
		return err
	}
	p := &agents.EndpointPool{URL: e.URL, Endpoints: make([]resource.Ref, 0, len(members))}
	for _, m := range members {
		if m.Hostport != e.Hostport {
			continue
		}
		s.recs.PresentEndpoint(m)
		p.Endpoints = append(p.Endpoints, resource.Ref{ID: m.ID, URI: m.URI})
	}
	e.Pool = p
	return nil
}

// PresentPool fills the Pool of an endpoint of the account that has
// pooling enabled (see [agents.Endpoint].Pool): the API's lists of
// endpoints call it for each one they show.
func (s *State) PresentPool(ctx context.Context, e *agents.Endpoint) error {
	if e == nil || !strings.HasPrefix(e.ID, agents.EndpointPrefix) {
		return nil
	}
	return s.presentPool(ctx, e)
}
