package edgeplane

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// Endpoints (package agents has the model): a public address an agent
// binds itself in its tunnel session (a Bind of http, https, tcp or tls,
// [TunnelHost.BindEndpoint]), served by edge proxies without an edge. An
// endpoint record is a child of its session: closing the session,
// reaping it, or deleting its credential removes the endpoint in the
// same atomic step.
//
// An endpoint holds the store keys of its hostport (hostportKey, and for
// a tcp endpoint tcpPortKey of its port), the keys edges hold: a
// hostport serves one edge or endpoint in the whole store, and the store
// refuses a second one atomically. An http, https or tls endpoint's host
// is a reserved domain of the account (or a name its wildcard domain
// covers), which the record references, so the domain cannot be
// released while the endpoint is online; so are the IP policies its
// traffic policy names. The API lists and reads endpoints; only agents
// create and remove them.

// endpointDoc is the stored form of an endpoint (see package
// internal/records). Its account is its record's and its session the
// record's parent. URL, PublicURL, Scheme, Hostport and Type are
// computed from Proto, Host and Port.
type endpointDoc struct {
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	Proto          string    `json:"proto"`
	Host           string    `json:"host"`
	Port           int64     `json:"port"`
	CredentialID   string    `json:"credential_id"`
	DomainID       string    `json:"domain_id,omitempty"`
	Region         string    `json:"region,omitempty"`
	Metadata       string    `json:"metadata,omitempty"`
	Description    string    `json:"description,omitempty"`
	UpstreamURL    string    `json:"upstream_url,omitempty"`
	TrafficPolicy  string    `json:"traffic_policy,omitempty"`
	PassthroughTLS bool      `json:"passthrough_tls,omitempty"`
	Node           string    `json:"node,omitempty"`
}

// endpointRecord is an endpoint as the Service holds it: the model and
// the credential of the session that bound it, which a rebind checks and
// the API does not show.
type endpointRecord struct {
	agents.Endpoint
	CredentialID string
}

// The identity of the kind this file declares (see kindList).
var (
	endpointKind = &records.Kind{StoreKind: KindEndpoint, Prefix: agents.EndpointPrefix, Collection: "endpoints",
		Noun: "endpoint", Event: "endpoint", Parent: tunnelSessionKind}
)

var endpointForm = &kind[endpointRecord]{Form: records.PlainForm(endpointKind,
	func(r *endpointRecord) *endpointDoc {
		return &endpointDoc{CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Proto: r.Proto, Host: r.Host, Port: r.Port,
			CredentialID: r.CredentialID, DomainID: records.RefID(r.Domain), Region: r.Region, Metadata: r.Metadata,
			Description: r.Description, UpstreamURL: r.UpstreamURL, TrafficPolicy: r.TrafficPolicy, PassthroughTLS: r.PassthroughTLS, Node: r.Node}
	},
	func(d *endpointDoc, rec store.Record) *endpointRecord {
		r := &endpointRecord{Endpoint: agents.Endpoint{ID: rec.ID, AccountID: rec.AccountID, Region: d.Region,
			CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, Proto: d.Proto, Host: d.Host, Port: d.Port,
			Metadata: d.Metadata, Description: d.Description, Domain: records.IDRef(d.DomainID), UpstreamURL: d.UpstreamURL,
			TrafficPolicy: d.TrafficPolicy, TunnelSession: &resource.Ref{ID: rec.ParentID}, PassthroughTLS: d.PassthroughTLS, Node: d.Node},
			CredentialID: d.CredentialID}
		setEndpointAddress(&r.Endpoint)
		return r
	}), present: (*Service).presentEndpoint, shown: showEndpoint}

// showEndpoint shows an endpoint as the API does: without its
// credential.
func showEndpoint(_ context.Context, _ *Service, r *endpointRecord, _ store.Record) (any, error) {
	return &r.Endpoint, nil
}

func (s *Service) presentEndpoint(r *endpointRecord, _ store.Record) {
	r.URI = s.uri(endpointKind.Collection, r.ID)
	if r.Domain != nil {
		ref := s.ref(reservedDomainKind.Collection, r.Domain.ID)
		r.Domain = &ref
	}
	if r.TunnelSession != nil {
		ref := s.ref(tunnelSessionKind.Collection, r.TunnelSession.ID)
		r.TunnelSession = &ref
	}
}

// setEndpointAddress sets the fields computed from e's Proto, Host and
// Port: https://host and http://host for HTTP (their ports are the
// defaults), tls://host:443 and tcp://host:port otherwise.
func setEndpointAddress(e *agents.Endpoint) {
	e.Type = agents.EndpointType
	e.Scheme = e.Proto
	e.Hostport = net.JoinHostPort(e.Host, strconv.FormatInt(e.Port, 10))
	switch e.Proto {
	case agents.ProtoHTTP, agents.ProtoHTTPS:
		e.URL = e.Proto + "://" + e.Host
	default:
		e.URL = e.Proto + "://" + e.Hostport
	}
	e.PublicURL = e.URL
}

// endpointPort returns the port an http, https or tls endpoint serves.
func endpointPort(proto string) int64 {
	if proto == agents.ProtoHTTP {
		return 80
	}
	return 443
}

// endpointKeys returns the store keys of an endpoint: its hostport's,
// and for a tcp endpoint its port's, as a TCP edge's.
func endpointKeys(e *agents.Endpoint) []string {
	keys := []string{hostportKey(e.Hostport)}
	if e.Proto == agents.ProtoTCP {
		keys = append(keys, tcpPortKey(strconv.FormatInt(e.Port, 10)))
	}
	return keys
}

// GetEndpoint returns an endpoint of the account (GET /endpoints/{id}):
// an address an agent bound in one of the account's tunnel sessions. It
// reads the store, not the record cache: an endpoint is removed with its
// session's credential, two levels up, which a delete's invalidation of
// the cache reaches only through a cached session.
func (s *Service) GetEndpoint(ctx context.Context, p Principal, id string) (*agents.Endpoint, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	return s.getEndpoint(ctx, p.AccountID, id)
}

// ListEndpoints returns a page of the account's endpoints, newest first
// (GET /endpoints).
func (s *Service) ListEndpoints(ctx context.Context, p Principal, opts ListOptions) (*Page[agents.Endpoint], error) {
	return listAs(ctx, s, p, endpointForm.Form, "", endpointKind.Collection, opts,
		func(r *endpointRecord, rec store.Record) (*agents.Endpoint, error) {
			s.presentEndpoint(r, rec)
			return &r.Endpoint, nil
		}, records.LateField[agents.Endpoint]{})
}

// maxPortAttempts bounds the ports a bind of a tcp endpoint without an
// address tries before it gives up.
const maxPortAttempts = 64

// endpointTarget is where a bind asks an endpoint to be: its host and
// port (0: a free port of the tunnel server's range, picked when
// written) and the reserved domain that serves its host ("" for tcp).
type endpointTarget struct {
	host     string
	port     int64
	domainID string
}

// bindEndpoint is [TunnelHost.BindEndpoint].
func (s *Service) bindEndpoint(ctx context.Context, accountID, sessionID string, params agents.EndpointParams) (*agents.Endpoint, error) {
	sess, sessRec, err := s.readTunnelSession(ctx, accountID, sessionID)
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
	// A rebind after a reconnect: the endpoint, if it is still there (and
	// the agent may take it over), is replaced by one under the new session, with its ID, creation time
	// and (for a tcp endpoint whose port the server picked) its address.
	var (
		old        *endpointRecord
		oldVersion int64
	)
	if params.ID != "" {
		rec, err := s.store.Get(ctx, KindEndpoint, accountID, params.ID)
		switch {
		case errors.Is(err, apierr.ErrNotFound):
			// its session was reaped or closed: bound anew under its ID
		case err != nil:
			return nil, s.db.StoreErr(err, endpointKind, params.ID)
		default:
			if old, err = endpointForm.Decode(s.db, rec); err != nil {
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
	target, err := s.endpointTarget(ctx, accountID, acl, params)
	if err != nil {
		return nil, err
	}
	id := params.ID
	if id == "" {
		id = s.ids.New(agents.EndpointPrefix)
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
		if value, policyIDs, err = s.compilePolicy(ctx, accountID, target, id, "TrafficPolicy", params.TrafficPolicy); err != nil {
			return nil, err
		}
	}
	now := s.timestamp()
	r := &endpointRecord{Endpoint: agents.Endpoint{ID: id, AccountID: accountID, Region: sess.Region, CreatedAt: now, UpdatedAt: now,
		Proto: params.Proto, Host: target.host, Port: target.port, Metadata: params.Metadata, Description: params.Description,
		Domain: records.IDRef(target.domainID), UpstreamURL: params.ForwardsTo, TrafficPolicy: value,
		TunnelSession: &resource.Ref{ID: sessionID}, PassthroughTLS: params.PassthroughTLS, Node: sess.Node}, CredentialID: credentialID}
	if old != nil {
		r.CreatedAt = old.CreatedAt
		// The store has no write of two records at once: the old record
		// goes first, then the new one is created. Between the two, the
		// hostport is free; a bind that takes it then makes this rebind
		// a conflict, and the endpoint is gone (the agent reconnects and
		// binds again).
		err := s.store.DeleteIf(ctx, KindEndpoint, accountID, id, oldVersion, s.db.Note(endpointKind.Event, events.Deleted))
		var ve *store.VersionError
		switch {
		case errors.As(err, &ve):
			return nil, apierr.New(apierr.Conflict, "endpoint %s was bound again meanwhile, by another connection of the agent", id)
		case errors.Is(err, apierr.ErrNotFound):
			// removed meanwhile (its old session closed): created anew
		case err != nil:
			return nil, s.db.StoreErr(err, endpointKind, id)
		}
	}
	refs := store.UniqueRefs(append(nonEmpty(target.domainID), policyIDs...))
	caps := s.accountCap(KindEndpoint, accountID, s.limits.EndpointsPerAccount, "endpoints")
	err = records.CreateCapped(ctx, s.store, caps, func(slots []string) error {
		if target.port != 0 {
			return s.createEndpoint(ctx, r, refs, slots)
		}
		return s.createEndpointOnFreePort(ctx, r, refs, params.TCPLow, params.TCPHigh, slots)
	})
	if err != nil {
		return nil, s.endpointWriteErr(err, r)
	}
	s.presentEndpoint(r, store.Record{})
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

// endpointTarget resolves and checks where params ask the endpoint to
// be: for http, https and tls, a domain the ACL allows that is a
// reserved domain of the account (or that a wildcard one covers); for
// tcp, an address the ACL allows whose port is in the tunnel server's
// range, or, without an address, a port of the range to be picked when
// written (which only an ACL that allows everything permits: the
// credential cannot name the address it would get).
func (s *Service) endpointTarget(ctx context.Context, accountID string, acl *credentials.ACL, params agents.EndpointParams) (endpointTarget, error) {
	if params.Proto != agents.ProtoTCP {
		if params.Addr != "" {
			return endpointTarget{}, apierr.Invalidf("Addr", "applies only to tcp endpoints; an %s endpoint names its Domain", params.Proto)
		}
		if params.Domain == "" {
			return endpointTarget{}, apierr.Invalidf("Domain", "is required for an %s endpoint: a reserved domain of the account, or a name its wildcard domain covers", params.Proto)
		}
		domain, err := domains.ParseName(params.Domain)
		if err != nil {
			return endpointTarget{}, apierr.Invalidf("Domain", "%s", err.Error())
		}
		if !acl.AllowsDomain(domain) {
			return endpointTarget{}, apierr.New(apierr.PermissionDenied, "the credential's ACL does not permit binding the domain %s; it needs the rule %s",
				domain, strings.Join(domainRules(domain), " or "))
		}
		id, ok, err := s.reservedDomainOf(ctx, accountID, domain)
		if err != nil {
			return endpointTarget{}, err
		}
		if !ok {
			return endpointTarget{}, apierr.New(apierr.FailedPrecondition, "the domain %s is not a reserved domain of this account; reserve it, or a wildcard domain that covers it, first", domain)
		}
		return endpointTarget{host: domain, port: endpointPort(params.Proto), domainID: id}, nil
	}
	if params.Domain != "" {
		return endpointTarget{}, apierr.Invalidf("Domain", "applies only to http, https and tls endpoints; a tcp endpoint names its Addr")
	}
	if params.TCPLow == 0 {
		return endpointTarget{}, apierr.New(apierr.FailedPrecondition, "this tunnel server serves no TCP ports; bind an http, https or tls endpoint")
	}
	if params.Addr == "" {
		if params.TCPHost == "" {
			return endpointTarget{}, apierr.New(apierr.FailedPrecondition, "this tunnel server names no TCP host; name the address (host:port) to bind")
		}
		if !acl.AllowsAll() {
			return endpointTarget{}, apierr.New(apierr.PermissionDenied,
				"the credential's ACL does not permit binding a TCP port the server picks (only an ACL that permits everything does); name the address, which needs a rule bind:<host>:<port>")
		}
		return endpointTarget{host: strings.ToLower(params.TCPHost)}, nil
	}
	host, port, reason := parseTCPAddr(params.Addr)
	if reason != "" {
		return endpointTarget{}, apierr.Invalidf("Addr", "%s", reason)
	}
	if port < params.TCPLow || port > params.TCPHigh {
		return endpointTarget{}, apierr.Invalidf("Addr", "port %d is not one this tunnel server serves: it must be from %d to %d", port, params.TCPLow, params.TCPHigh)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if !acl.AllowsAll() && !acl.AllowsAddr(addr) {
		return endpointTarget{}, apierr.New(apierr.PermissionDenied, "the credential's ACL does not permit binding the address %s; it needs the rule bind:%s", addr, addr)
	}
	return endpointTarget{host: host, port: int64(port)}, nil
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
func (s *Service) createEndpoint(ctx context.Context, r *endpointRecord, refs, slots []string) error {
	setEndpointAddress(&r.Endpoint)
	rec := store.Record{Kind: KindEndpoint, AccountID: r.AccountID, ID: r.ID, ParentID: r.TunnelSession.ID,
		Keys: append(endpointKeys(&r.Endpoint), slots...), Refs: refs, Note: s.db.Note(endpointKind.Event, events.Created)}
	if err := endpointForm.Encode(s.db, r, &rec); err != nil {
		return err
	}
	return s.store.Create(ctx, rec)
}

// createEndpointOnFreePort creates r on a port from low to high that no
// edge or endpoint holds: from a random port of the range, each port in
// turn (wrapping) until one is free, at most [maxPortAttempts] of them.
// Other errors are the store's, as they are.
func (s *Service) createEndpointOnFreePort(ctx context.Context, r *endpointRecord, refs []string, low, high int, slots []string) error {
	n := high - low + 1
	if n < 1 {
		return apierr.New(apierr.FailedPrecondition, "this tunnel server's TCP ports (%d to %d) are no range", low, high)
	}
	start := rand.IntN(n)
	attempts := min(n, maxPortAttempts)
	for i := range attempts {
		r.Port = int64(low + (start+i)%n)
		err := s.createEndpoint(ctx, r, refs, slots)
		if err == nil {
			return nil
		}
		var dup *store.DuplicateError
		if errors.As(err, &dup) && (dup.Key == tcpPortKey(strconv.FormatInt(r.Port, 10)) || dup.Key == hostportKey(r.Hostport)) {
			continue // taken: the next port
		}
		return err
	}
	return apierr.New(apierr.ResourceExhausted, "no free TCP port among %d tried of %d to %d; name a free address, or retry later", attempts, low, high)
}

// endpointWriteErr turns the store error of creating r into the agent's:
// its hostport or port taken is a conflict naming it (as for edges); its
// session gone is not found; its domain released meanwhile a failed
// precondition; its ID another account's is the error of another
// credential's.
func (s *Service) endpointWriteErr(err error, r *endpointRecord) error {
	var (
		dup  *store.DuplicateError
		miss *store.MissingRefError
	)
	switch {
	case errors.As(err, &dup) && dup.Key == r.ID:
		return notYourEndpoint(r.ID)
	case errors.As(err, &miss) && miss.ID == r.TunnelSession.ID:
		return tunnelSessionKind.NotFound(miss.ID) // closed, reaped or deleted with its credential meanwhile
	case errors.As(err, &miss) && r.Domain != nil && miss.ID == r.Domain.ID:
		return apierr.New(apierr.FailedPrecondition, "the domain %s is no longer reserved by this account; reserve it first", r.Host)
	case errors.As(err, &miss):
		return apierr.Invalidf("TrafficPolicy", "%s not found in this account", describeID(miss.ID))
	}
	return s.edgeWriteErr(err, endpointKind, r.ID, []string{r.Hostport}, nil)
}

// unbindEndpoint is [TunnelHost.UnbindEndpoint].
func (s *Service) unbindEndpoint(ctx context.Context, accountID, id string) error {
	if !ids.Valid(id, agents.EndpointPrefix) {
		return endpointKind.NotFound(id)
	}
	if err := s.store.Delete(ctx, KindEndpoint, accountID, id, s.db.Note(endpointKind.Event, events.Deleted)); err != nil {
		return s.db.StoreErr(err, endpointKind, id)
	}
	return nil
}

// getEndpoint is [TunnelHost.GetEndpoint]: a read of the store, not the
// record cache.
func (s *Service) getEndpoint(ctx context.Context, accountID, id string) (*agents.Endpoint, error) {
	if !ids.Valid(id, agents.EndpointPrefix) || !ids.Valid(accountID, AccountPrefix) {
		return nil, endpointKind.NotFound(id)
	}
	rec, err := s.store.Get(ctx, KindEndpoint, accountID, id)
	if err != nil {
		return nil, s.db.StoreErr(err, endpointKind, id)
	}
	r, err := endpointForm.Decode(s.db, rec)
	if err != nil {
		return nil, err
	}
	s.presentEndpoint(r, rec)
	return &r.Endpoint, nil
}

// listEndpoints is [DataPlaneHost.ListEndpoints].
func (s *Service) listEndpoints(ctx context.Context, opts ListOptions) ([]agents.Endpoint, string, error) {
	return records.HostList(ctx, s.db, endpointKind, listQuery(opts), func(rec store.Record) (agents.Endpoint, error) {
		r, err := endpointForm.Decode(s.db, rec)
		if err != nil {
			return agents.Endpoint{}, err
		}
		s.presentEndpoint(r, rec)
		return r.Endpoint, nil
	})
}
