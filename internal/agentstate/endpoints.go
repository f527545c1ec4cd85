package agentstate

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// maxPortAttempts bounds the ports a bind of a tcp endpoint without an
// address tries before it gives up.
const maxPortAttempts = 64

// bindTarget is where a bind asks an endpoint to be: its host and port
// (0: a free port of the tunnel server's range, picked when written)
// and the reserved domain that serves its host ("" for tcp).
type bindTarget struct {
	host     string
	port     int64
	domainID string
}

// BindEndpoint records an endpoint the session's agent binds (the Host's
// BindEndpoint, whose doc states the rules): a child of the session, at
// a domain or address the ACL of the session's credential as it is now
// permits, within the account's limit of endpoints. params.ID set is a
// rebind after a reconnect, which replaces the endpoint of that ID.
// Reported as the endpoint's created event (a rebind: deleted, then
// created).
func (s *State) BindEndpoint(ctx context.Context, accountID, sessionID string, params agents.EndpointParams) (*agents.Endpoint, error) {
	sess, sessRec, err := s.readSession(ctx, accountID, sessionID)
	if err != nil {
		return nil, err
	}
	if err := s.nodes.SessionLive(ctx, sessionID, sess.Node); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if params.ID != "" && !ids.Valid(params.ID, agents.EndpointPrefix) {
		return nil, apierr.Invalidf("ID", "%q is not an endpoint ID (%s followed by %d base62 characters); a rebind names the ID its first bind was given",
			records.EchoID(params.ID), agents.EndpointPrefix, ids.Len)
	}
	credentialID := sessRec.ParentID
	acl, err := s.sessionACL(ctx, accountID, sessionID, credentialID)
	if err != nil {
		return nil, err
	}
	k := s.ends.Kind
	// A rebind after a reconnect: the endpoint, if it is still there (and
	// the agent may take it over), is replaced by one under the new session, with its ID, creation time
	// and (for a tcp endpoint whose port the server picked) its address.
	var (
		old        *EndpointRecord
		oldVersion int64
	)
	if params.ID != "" {
		rec, err := s.store.Get(ctx, k.StoreKind, accountID, params.ID)
		switch {
		case errors.Is(err, apierr.ErrNotFound):
			// its session was reaped or closed: bound anew under its ID
		case err != nil:
			return nil, s.db.StoreErr(err, k, params.ID)
		default:
			if old, err = s.ends.Decode(s.db, rec); err != nil {
				return nil, err
			}
			if old.CredentialID != credentialID {
				return nil, notYourEndpoint(params.ID)
			}
			if !params.TakeOver && old.TunnelSession != nil && old.TunnelSession.ID != sessionID {
				return nil, apierr.New(apierr.FailedPrecondition, "endpoint %s is still held by tunnel session %s, and this rebind's resume token is too old to take it over; it binds once that session ends (when its heartbeat stops, at most)",
					params.ID, old.TunnelSession.ID)
			}
			oldVersion = rec.Version
			if params.Proto == agents.ProtoTCP && params.Addr == "" && old.Proto == agents.ProtoTCP {
				params.Addr = old.Hostport
			}
		}
	}
	id := params.ID
	if id == "" {
		id = s.ids.New(agents.EndpointPrefix)
	}
	target, err := s.bindTargetOf(ctx, accountID, acl, params, id)
	if err != nil {
		return nil, err
	}
	var (
		value     string
		policyIDs []string
	)
	if params.TrafficPolicy != "" {
		target := policy.TargetConnection
		if params.Proto == agents.ProtoHTTP || params.Proto == agents.ProtoHTTPS {
			target = policy.TargetHTTP
		}
		// The endpoint's ID is the policy's scope: a rebind keeps its
		// rate limiters' counts.
		if value, policyIDs, err = s.recs.CompilePolicy(ctx, accountID, target, id, "TrafficPolicy", params.TrafficPolicy); err != nil {
			return nil, err
		}
	}
	now := s.db.Timestamp()
	r := &EndpointRecord{Endpoint: agents.Endpoint{ID: id, AccountID: accountID, Region: sess.Region, CreatedAt: now, UpdatedAt: now,
		Proto: params.Proto, Host: target.host, Port: target.port, Metadata: params.Metadata, Description: params.Description,
		Domain: records.IDRef(target.domainID), UpstreamURL: params.ForwardsTo, TrafficPolicy: value,
		TunnelSession: &resource.Ref{ID: sessionID}, PassthroughTLS: params.PassthroughTLS, Node: sess.Node,
		PoolingEnabled: params.PoolingEnabled, Bindings: bindingsOf(params.Binding)}, CredentialID: credentialID}
	if old != nil {
		r.CreatedAt = old.CreatedAt
		// The store has no write of two records at once: the old record
		// goes first, then the new one is created. Between the two, the
		// hostport is free; a bind that takes it then makes this rebind
		// a conflict, and the endpoint is gone (the agent reconnects and
		// binds again).
		err := s.store.DeleteIf(ctx, k.StoreKind, accountID, id, oldVersion, s.db.Note(k.Event, events.Deleted))
		var ve *store.VersionError
		switch {
		case errors.As(err, &ve):
			return nil, apierr.New(apierr.Conflict, "endpoint %s was bound again meanwhile, by another connection of the agent", id)
		case errors.Is(err, apierr.ErrNotFound):
			// removed meanwhile (its old session closed): created anew
		case err != nil:
			return nil, s.db.StoreErr(err, k, id)
		}
	}
	if err := s.precheckNotPooled(ctx, r); err != nil {
		return nil, err
	}
	refs := store.UniqueRefs(append(nonEmpty(target.domainID), policyIDs...))
	caps := accountCap(k.StoreKind, accountID, s.limits.EndpointsPerAccount, "endpoints")
	err = records.CreateCapped(ctx, s.store, caps, func(slots []string) error {
		switch {
		case r.PoolingEnabled:
			return s.createPooled(ctx, r, refs, slots, params.TCPLow, params.TCPHigh)
		case target.port != 0:
			return s.createEndpoint(ctx, r, refs, slots)
		}
		return s.createEndpointOnFreePort(ctx, r, refs, params.TCPLow, params.TCPHigh, slots)
	})
	if err != nil {
		if !r.PoolingEnabled {
			err = s.notPooledErr(ctx, err, r)
		}
		return nil, s.endpointWriteErr(err, r)
	}
	if !r.PoolingEnabled {
		if err := s.checkNotPooled(ctx, r); err != nil {
			return nil, err
		}
	}
	s.recs.PresentEndpoint(r)
	return &r.Endpoint, nil
}

// notYourEndpoint is the error of a rebind that names an endpoint of
// another credential, or of another account.
func notYourEndpoint(id string) error {
	return apierr.New(apierr.PermissionDenied, "endpoint %s was bound with another credential; an agent binds again only the endpoints its own credential bound", id)
}

// nonEmpty returns a list of id, or none when id is "".
func nonEmpty(id string) []string {
	if id == "" {
		return nil
	}
	return []string{id}
}

// resolveTarget resolves and checks where params ask the endpoint to
// be: for http, https and tls, a domain the ACL allows that is a
// reserved domain of the account (or that a wildcard one covers); for
// tcp, an address the ACL allows whose port is in the tunnel server's
// range, or, without an address, a port of the range to be picked when
// written (which only an ACL that allows everything permits: the
// credential cannot name the address it would get).
func (s *State) resolveTarget(ctx context.Context, accountID string, acl *credentials.ACL, params agents.EndpointParams) (bindTarget, error) {
	if params.Proto != agents.ProtoTCP {
		if params.Addr != "" {
			return bindTarget{}, apierr.Invalidf("Addr", "applies only to tcp endpoints; an %s endpoint names its Domain", params.Proto)
		}
		if params.Domain == "" {
			return bindTarget{}, apierr.Invalidf("Domain", "is required for an %s endpoint: a reserved domain of the account, or a name its wildcard domain covers", params.Proto)
		}
		domain, err := domains.ParseName(params.Domain)
		if err != nil {
			return bindTarget{}, apierr.Invalidf("Domain", "%s", err.Error())
		}
		if !acl.AllowsDomain(domain) {
			return bindTarget{}, apierr.New(apierr.PermissionDenied, "the credential's ACL does not permit binding the domain %s; it needs the rule %s",
				domain, strings.Join(domainRules(domain), " or "))
		}
		id, ok, err := s.recs.ReservedDomain(ctx, accountID, domain)
		if err != nil {
			return bindTarget{}, err
		}
		if !ok {
			return bindTarget{}, apierr.New(apierr.FailedPrecondition, "the domain %s is not a reserved domain of this account; reserve it, or a wildcard domain that covers it, first", domain)
		}
		return bindTarget{host: domain, port: endpointPort(params.Proto), domainID: id}, nil
	}
	if params.Domain != "" {
		return bindTarget{}, apierr.Invalidf("Domain", "applies only to http, https and tls endpoints; a tcp endpoint names its Addr")
	}
	if params.TCPLow == 0 {
		return bindTarget{}, apierr.New(apierr.FailedPrecondition, "this tunnel server serves no TCP ports; bind an http, https or tls endpoint")
	}
	if params.Addr == "" {
		if params.TCPHost == "" {
			return bindTarget{}, apierr.New(apierr.FailedPrecondition, "this tunnel server names no TCP host; name the address (host:port) to bind")
		}
		if !acl.AllowsAll() {
			return bindTarget{}, apierr.New(apierr.PermissionDenied,
				"the credential's ACL does not permit binding a TCP port the server picks (only an ACL that permits everything does); name the address, which needs a rule bind:<host>:<port>")
		}
		return bindTarget{host: strings.ToLower(params.TCPHost)}, nil
	}
	host, port, reason := parseTCPAddr(params.Addr)
	if reason != "" {
		return bindTarget{}, apierr.Invalidf("Addr", "%s", reason)
	}
	if port < params.TCPLow || port > params.TCPHigh {
		return bindTarget{}, apierr.Invalidf("Addr", "port %d is not one this tunnel server serves: it must be from %d to %d", port, params.TCPLow, params.TCPHigh)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if !acl.AllowsAll() && !acl.AllowsAddr(addr) {
		return bindTarget{}, apierr.New(apierr.PermissionDenied, "the credential's ACL does not permit binding the address %s; it needs the rule bind:%s", addr, addr)
	}
	return bindTarget{host: host, port: int64(port)}, nil
}

// endpointPort returns the port an http, https or tls endpoint serves.
func endpointPort(proto string) int64 {
	if proto == agents.ProtoHTTP {
		return 80
	}
	return 443
}

// domainRules returns the ACL rules that permit binding the canonical
// domain: the domain itself and the wildcard on its parent, or for a
// wildcard domain the wildcard itself.
func domainRules(domain string) []string {
	if domains.IsWildcard(domain) {
		return []string{"bind:" + domain}
	}
	rules := []string{"bind:" + domain}
	if _, parent, ok := strings.Cut(domain, "."); ok && strings.Contains(parent, ".") {
		rules = append(rules, "bind:*."+parent)
	}
	return rules
}

// parseTCPAddr parses a tcp endpoint's host:port: host a DNS name (no
// wildcard) or an IP address, port from 1 to 65535. It returns the host
// in canonical form (lowercase, an IP address as netip writes it), or
// the reason it is not one.
func parseTCPAddr(addr string) (host string, port int, reason string) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, "must be host:port, such as tcp.example.com:20001"
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 || p[0] < '1' || p[0] > '9' {
		return "", 0, "the port must be a number from 1 to 65535"
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		if ip.Zone() != "" {
			return "", 0, "the host must not have an IPv6 zone"
		}
		return ip.Unmap().String(), n, ""
	}
	name, err := domains.ParseName(h)
	if err != nil {
		return "", 0, "the host " + err.Error()
	}
	if domains.IsWildcard(name) {
		return "", 0, "the host must be an exact name or an IP address, not a wildcard"
	}
	return name, n, ""
}

// createEndpoint stores r as a new record under its session, with the
// keys of its hostport, its slots and refs, reported as an
// endpoint_created event. It returns the store's error as it is.
func (s *State) createEndpoint(ctx context.Context, r *EndpointRecord, refs, slots []string) error {
	k := s.ends.Kind
	setEndpointAddress(&r.Endpoint)
	rec := store.Record{Kind: k.StoreKind, AccountID: r.AccountID, ID: r.ID, ParentID: r.TunnelSession.ID,
		Keys: append(s.endpointKeys(&r.Endpoint), slots...), Refs: refs, Note: s.db.Note(k.Event, events.Created)}
	if err := s.ends.Encode(s.db, r, &rec); err != nil {
		return err
	}
	return s.store.Create(ctx, rec)
}

// createEndpointOnFreePort creates r on a port from low to high that no
// edge or endpoint holds: from a random port of the range, each port in
// turn (wrapping) until one is free, at most [maxPortAttempts] of them.
// Other errors are the store's, as they are.
func (s *State) createEndpointOnFreePort(ctx context.Context, r *EndpointRecord, refs []string, low, high int, slots []string) error {
	n := high - low + 1
	if n < 1 {
		return apierr.New(apierr.FailedPrecondition, "this tunnel server's TCP ports (%d to %d) are no range", low, high)
	}
	start := rand.IntN(n)
	attempts := min(n, maxPortAttempts)
	for i := range attempts {
		r.Port = int64(low + (start+i)%n)
		if pooled, err := s.poolAtPort(ctx, r); err != nil {
			return err
		} else if pooled {
			continue // a pool's port (its members hold no key): the next port
		}
		err := s.createEndpoint(ctx, r, refs, slots)
		if err == nil {
			return nil
		}
		var dup *store.DuplicateError
		if errors.As(err, &dup) && slices.Contains(s.recs.EndpointKeys(&r.Endpoint), dup.Key) {
			continue // its hostport or its port taken: the next port
		}
		return err
	}
	return apierr.New(apierr.ResourceExhausted, "no free TCP port among %d tried of %d to %d; name a free address, or retry later", attempts, low, high)
}

// poolAtPort reports whether a pool of any account serves at r's port
// (r a tcp endpoint with its Port set).
func (s *State) poolAtPort(ctx context.Context, r *EndpointRecord) (bool, error) {
	setEndpointAddress(&r.Endpoint)
	recs, err := s.store.List(ctx, store.Query{Kind: s.ends.StoreKind, Index: indexPool, Value: s.poolKey(&r.Endpoint), Limit: 1})
	if err != nil {
		return false, s.db.StoreErr(err, s.ends.Kind, "")
	}
	return len(recs) > 0, nil
}

// endpointWriteErr turns the store error of creating r into the agent's:
// its hostport or port taken is a conflict naming it (as for edges); its
// session gone is not found; its domain released meanwhile a failed
// precondition; its ID another account's is the error of another
// credential's.
func (s *State) endpointWriteErr(err error, r *EndpointRecord) error {
	var (
		dup  *store.DuplicateError
		miss *store.MissingRefError
	)
	if ierr, ok := internalWriteErr(err, r); ok {
		return ierr
	}
	switch {
	case errors.As(err, &dup) && dup.Key == r.ID:
		return notYourEndpoint(r.ID)
	case errors.As(err, &miss) && miss.ID == r.TunnelSession.ID:
		return s.sessions.NotFound(miss.ID) // closed, reaped or deleted with its credential meanwhile
	case errors.As(err, &miss) && r.Domain != nil && miss.ID == r.Domain.ID:
		return apierr.New(apierr.FailedPrecondition, "the domain %s is no longer reserved by this account; reserve it first", r.Host)
	case errors.As(err, &miss):
		return apierr.Invalidf("TrafficPolicy", "%s not found in this account", s.db.Kinds.Describe(miss.ID))
	}
	return s.recs.HostportErr(err, r.ID, r.Hostport)
}

// UnbindEndpoint removes an endpoint of the account, reported as its deleted
// event (the Host's UnbindEndpoint).
func (s *State) UnbindEndpoint(ctx context.Context, accountID, id string) error {
	return s.remove(ctx, s.ends.Kind, accountID, id)
}

// Endpoint returns an endpoint of the account, read from the store, not
// the record cache (the Host's GetEndpoint, and the API's).
func (s *State) Endpoint(ctx context.Context, accountID, id string) (*agents.Endpoint, error) {
	k := s.ends.Kind
	if !ids.Valid(id, agents.EndpointPrefix) || !ids.Valid(accountID, identity.AccountPrefix) {
		return nil, k.NotFound(id)
	}
	rec, err := s.store.Get(ctx, k.StoreKind, accountID, id)
	if err != nil {
		return nil, s.db.StoreErr(err, k, id)
	}
	r, err := s.ends.Decode(s.db, rec)
	if err != nil {
		return nil, err
	}
	s.recs.PresentEndpoint(r)
	if err := s.presentPool(ctx, &r.Endpoint); err != nil {
		return nil, err
	}
	return &r.Endpoint, nil
}

// Endpoints returns one page of the endpoints of every account, newest
// first, and the cursor of the next page ("" at the end), as
// [records.HostList] pages (the Host's ListEndpoints).
func (s *State) Endpoints(ctx context.Context, q records.Query) ([]agents.Endpoint, string, error) {
	return records.HostList(ctx, s.db, s.ends.Kind, q, func(rec store.Record) (agents.Endpoint, error) {
		r, err := s.ends.Decode(s.db, rec)
		if err != nil {
			return agents.Endpoint{}, err
		}
		s.recs.PresentEndpoint(r)
		return r.Endpoint, nil
	})
}
