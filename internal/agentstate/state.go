package agentstate

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/nodes"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/store"
)

// Forms are the stored forms of the kinds a [State] reads and writes,
// the values the root package declares its kinds with: [SessionForm],
// [TunnelForm] and [EndpointForm] of its kinds, and the form of
// credentials, whose ACLs and owners a State reads.
type Forms struct {
	Sessions    records.Form[SessionRecord]
	Tunnels     records.Form[backends.Tunnel]
	Endpoints   records.Form[EndpointRecord]
	Credentials records.Form[credentials.Credential]
}

// Auth is an authenticated authtoken: the account and ID of its
// credential, and the credential's ACL.
type Auth struct {
	AccountID    string
	CredentialID string
	ACL          *credentials.ACL
}

// Records is what a [State] needs of the root package: the Service's
// other kinds and its presentation, which this package does not know.
// The root implements it.
type Records interface {
	// Authenticate resolves an agent's authtoken to its credential; any
	// failure to is unauthenticated ([Config.BadToken]).
	Authenticate(ctx context.Context, token string) (Auth, error)
	// CheckAgentIP checks ip against the account's IP restrictions of
	// type agent, read from the store: an enforced one that refuses it
	// is permission denied, naming it.
	CheckAgentIP(ctx context.Context, accountID string, ip netip.Addr) error
	// CompilePolicy compiles the traffic policy value of an endpoint
	// for target, scoped to scope (the endpoint's ID), as an edge's;
	// failing, it is invalid naming field. It returns the policy as
	// stored and the IP policies it names, which the endpoint
	// references.
	CompilePolicy(ctx context.Context, accountID string, target policy.Target, scope, field, value string) (stored string, policyIDs []string, err error)
	// ReservedDomain returns the ID of the reserved domain of the
	// account that serves host (host itself or a wildcard that covers
	// it); ok is false when there is none.
	ReservedDomain(ctx context.Context, accountID, host string) (id string, ok bool, err error)
	// EndpointKeys returns the store keys an endpoint holds: its
	// hostport's, and a tcp endpoint's port's, as edges hold them.
	EndpointKeys(e *agents.Endpoint) []string
	// HostportErr returns the error of a write of endpoint id, bound to
	// hostport, that the store refused: its hostport or port taken is a
	// conflict naming it, as for edges; others are the store's errors
	// mapped as usual.
	HostportErr(err error, id, hostport string) error
	// PresentSession, PresentTunnel and PresentEndpoint fill the
	// computed fields of a model as the API shows it (URIs, Refs).
	PresentSession(r *SessionRecord)
	PresentTunnel(t *backends.Tunnel)
	PresentEndpoint(r *EndpointRecord)
}

// Config is what a [State] is built on; every field is required.
type Config struct {
	// DB is the Service's record machinery: its store (DB.Store), clock
	// (DB.Now), log (DB.Log) and kinds (DB.Kinds, for messages that name
	// an ID).
	DB *records.DB
	// Nodes are the edge nodes whose leases keep sessions online.
	Nodes *nodes.Registry
	// IDs makes the IDs of sessions, tunnels and endpoints.
	IDs *ids.Generator
	// Lease is how long a registered tunnel stays online without its
	// tunnel server renewing it.
	Lease time.Duration
	// Limits bound the sessions, tunnels and endpoints of an account's
	// agents, defaults filled in.
	Limits agents.Limits
	// Forms are the stored forms of the kinds.
	Forms Forms
	// Records is what the State needs of the root package.
	Records Records
	// BadToken is the refusal of an authtoken that names no credential
	// (Records.Authenticate's): a session or a registered tunnel whose
	// credential is deleted while it is written is refused with it.
	BadToken error
}

// State opens, reads and removes what agents hold online: tunnel
// sessions, tunnels and endpoints, each a record of the store. It holds
// nothing else, so it is safe for concurrent use, and every replica's
// State over one store sees the same records.
type State struct {
	store    store.Store
	db       *records.DB
	nodes    *nodes.Registry
	ids      *ids.Generator
	lease    time.Duration
	limits   agents.Limits
	sessions records.Form[SessionRecord]
	tunnels  records.Form[backends.Tunnel]
	ends     records.Form[EndpointRecord]
	creds    records.Form[credentials.Credential]
	recs     Records
	badToken error
}

// New returns the State that c describes.
func New(c Config) *State {
	return &State{store: c.DB.Store, db: c.DB, nodes: c.Nodes, ids: c.IDs, lease: c.Lease, limits: c.Limits,
		sessions: c.Forms.Sessions, tunnels: c.Forms.Tunnels, ends: c.Forms.Endpoints, creds: c.Forms.Credentials,
		recs: c.Records, badToken: c.BadToken}
}

// accountCap is the cap of limit records of kind in the account, what
// they are in words (for the refusal); none when limit is negative (no
// limit).
func accountCap(kind store.Kind, accountID string, limit int, what string) []records.Cap {
	if limit <= 0 {
		return nil
	}
	return []records.Cap{{Kind: kind, AccountID: accountID, Capacity: limit, Full: func() error {
		return apierr.New(apierr.ResourceExhausted, "your account is limited to %d %s; close one first", limit, what)
	}}}
}

// remove removes record id of kind k, reported as k's deleted event;
// an ID of another kind is not found.
func (s *State) remove(ctx context.Context, k *records.Kind, accountID, id string) error {
	if !ids.Valid(id, k.Prefix) {
		return k.NotFound(id)
	}
	if err := s.store.Delete(ctx, k.StoreKind, accountID, id, s.db.Note(k.Event, events.Deleted)); err != nil {
		return s.db.StoreErr(err, k, id)
	}
	return nil
}

// removeHeld removes record id of kind k, reported as k's deleted event,
// and counts it in n; one removed meanwhile is not an error.
func (s *State) removeHeld(ctx context.Context, k *records.Kind, accountID, id string, n *int) error {
	err := s.store.Delete(ctx, k.StoreKind, accountID, id, s.db.Note(k.Event, events.Deleted))
	switch {
	case err == nil:
		*n++
	case !errors.Is(err, apierr.ErrNotFound):
		return err
	}
	return nil
}

// eachChild calls visit with every record of kind whose parent is
// parentID, a page at a time, and stops at visit's first error.
func (s *State) eachChild(ctx context.Context, kind store.Kind, accountID, parentID string, visit func(store.Record) error) error {
	q := store.Query{Kind: kind, AccountID: accountID, ParentID: parentID, Limit: records.MaxPageSize}
	for {
		recs, err := s.store.List(ctx, q)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if err := visit(rec); err != nil {
				return err
			}
		}
		if len(recs) < q.Limit {
			return nil
		}
		q.BeforeID = recs[len(recs)-1].ID
	}
}
