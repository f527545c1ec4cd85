package edgeplane

import (
	"context"
	"strings"

	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/cachesync"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/store"
)

// The kinds of record the Service stores, named by package kinds. Users, bots and API keys are
// children (ParentID) of their account; IP policy rules of their policy;
// routes of their HTTPS edge; event sources of their subscription; tunnel
// sessions of the credential whose authtoken opened them; tunnels of the
// credential whose authtoken registered them, or of the session in which
// an agent started them; endpoints of the session in which an agent bound
// them (deleting the credential takes them all offline). Edge modules
// live inside their edge or route record.
const (
	KindAccount               = kinds.Account
	KindUser                  = kinds.User
	KindBot                   = kinds.Bot
	KindAPIKey                = kinds.APIKey
	KindCredential            = kinds.Credential
	KindIPPolicy              = kinds.IPPolicy
	KindIPPolicyRule          = kinds.IPPolicyRule
	KindIPRestriction         = kinds.IPRestriction
	KindReservedDomain        = kinds.ReservedDomain
	KindTLSCertificate        = kinds.TLSCertificate
	KindEndpointConfiguration = kinds.EndpointConfiguration
	KindTunnelGroupBackend    = kinds.TunnelGroupBackend
	KindTunnel                = kinds.Tunnel
	KindTunnelSession         = kinds.TunnelSession
	KindEndpoint              = kinds.Endpoint
	KindEventSubscription     = kinds.EventSubscription
	KindEventSource           = kinds.EventSource
	KindEventDestination      = kinds.EventDestination
	KindHTTPSEdge             = kinds.HTTPSEdge
	KindHTTPSEdgeRoute        = kinds.HTTPSEdgeRoute
	KindTLSEdge               = kinds.TLSEdge
	KindTCPEdge               = kinds.TCPEdge
)

// kindList is every kind the Service stores, in the order of the default
// event registry: the one list every table of kinds is derived from (IDs,
// URIs, messages, the default event registry, path prefixes, the event
// presentation of a change, and what a change means to caches and edge
// proxies). Each kind is declared once, in the file named after it: a
// *records.Kind (its store kind, ID prefix, collection, noun and event
// name) and a *kind value holding it with its stored form, its
// presentation and its traits. (The *records.Kind is a value of its own
// so that presentation code can name a collection without an
// initialization cycle through the declaration that holds it.)
var kindList = []declared{accountForm, userForm, botUserForm, apiKeyForm, credentialForm, ipPolicyForm, ipRuleForm,
	ipRestrictionForm, reservedDomainForm, certificateForm, endpointConfigForm, backendForm, tunnelForm,
	tunnelSessionForm, endpointForm, eventSubscriptionForm, eventSourceForm, httpsEdgeForm, httpsRouteForm, tlsEdgeForm, tcpEdgeForm,
	eventDestinationForm}

// kind is one kind of resource as the Service declares it: its identity
// and stored form (a [records.Form] over its *records.Kind), how a stored
// record is shown (present, and shown when what the API shows is not the
// model itself), and what its changes mean outside the Service (traits).
type kind[M any] struct {
	records.Form[M]
	// present fills the computed fields of a model as the API shows it
	// (URIs, empty lists); nil for a kind the API does not show (accounts
	// and users are the host's).
	present func(s *Service, m *M, rec store.Record)
	// shown, when set, returns what the API shows of a presented model,
	// when that is not the model itself (a bot user's BotUser) or needs
	// more reads (a backend's tunnels).
	shown func(ctx context.Context, s *Service, m *M, rec store.Record) (any, error)
	// traits are what the kind's changes mean to caches and edge proxies.
	traits traits
	// deletedAsShown says that a deleted record is reported as shown,
	// not as its Ref: its records have no ID of their own (an event
	// source is addressed by its type).
	deletedAsShown bool
}

// declared is a kind of any model, as kindList holds it.
type declared interface {
	info() *records.Kind
	// showRecord returns the stored record rec as the API shows it.
	showRecord(ctx context.Context, s *Service, rec store.Record) (any, error)
	traitsOf() traits
	// shownWhenDeleted says that a delete is reported with the record as
	// shown rather than its Ref.
	shownWhenDeleted() bool
	// presents says the kind fills its models' computed fields.
	presents() bool
}

func (k *kind[M]) info() *records.Kind    { return k.Kind }
func (k *kind[M]) traitsOf() traits       { return k.traits }
func (k *kind[M]) shownWhenDeleted() bool { return k.deletedAsShown }
func (k *kind[M]) presents() bool         { return k.present != nil }

func (k *kind[M]) showRecord(ctx context.Context, s *Service, rec store.Record) (any, error) {
	m, err := k.Decode(s.db, rec)
	if err != nil {
		return nil, err
	}
	return k.show(ctx, s, m, rec)
}

// show presents m, a model of rec, and returns what the API shows of it.
func (k *kind[M]) show(ctx context.Context, s *Service, m *M, rec store.Record) (any, error) {
	if k.present != nil {
		k.present(s, m, rec)
	}
	if k.shown != nil {
		return k.shown(ctx, s, m, rec)
	}
	return m, nil
}

// traits say what the changes of a kind mean outside the records
// themselves, to the cache of authentications. (What they mean to an
// edge proxy's configs is package kinds' DataPlaneRoleOf.) The zero
// traits mean nothing.
type traits struct {
	auth cachesync.AuthEffect // what a change does to cached authentications
}

// isInternal reports whether k is a kind the Service stores for itself
// and the API never shows (the sealing check, bootstrap.go; nodes,
// package internal/nodes; leases, package internal/leases; ACME account
// keys and challenges, package internal/acmestate; event delivery
// states, package internal/delivery). They are known to the followers of
// the feed, which pass over their changes: they have no declaration, no
// events and nothing cached.
func isInternal(k store.Kind) bool { return kinds.Internal(k) }

// declOf returns the declaration of a store kind.
func declOf(k store.Kind) (declared, bool) {
	for _, d := range kindList {
		if d.info().StoreKind == k {
			return d, true
		}
	}
	return nil, false
}

// allKinds returns the identity of every kind, for messages that name an
// ID ([records.Kinds.Describe]).
func allKinds() records.Kinds {
	out := make(records.Kinds, len(kindList))
	for i, d := range kindList {
		out[i] = d.info()
	}
	return out
}

// describeID returns "IP policy ipp_…" for an ID with a known prefix.
func describeID(id string) string { return allKinds().Describe(id) }

// moduleInfo describes one edge or route module: its name in paths and
// messages and the event its changes are reported under.
type moduleInfo struct {
	name  string
	event string
}

// DefaultEventTypes returns the event types of the changes the Service
// reports, the default registry of [Options].Events: for each resource
// kind that reports changes and each edge module, "<name>_created.v0",
// "<name>_updated.v0" and "<name>_deleted.v0". A host that publishes its
// own types ([Host.Publish]) adds them to these:
//
//	reg, err := events.NewRegistry(append(edgeplane.DefaultEventTypes(), "agent_connected.v0")...)
//
// A new slice is returned on each call.
func DefaultEventTypes() []string {
	var names []string
	for _, d := range kindList {
		if ev := d.info().Event; ev != "" {
			names = append(names, ev)
		}
	}
	for _, m := range moduleTable {
		names = append(names, m.event)
	}
	var out []string
	for _, n := range names {
		for _, v := range events.Verbs() {
			out = append(out, events.TypeOf(n, v))
		}
	}
	return out
}

// IDPrefixForPath returns the ID prefix of the resource a path parameter
// names, given the request path before it ("/credentials",
// "/edges/https/{edge_id}/routes"), or "" when it names no kind of the
// list (an event type, say). Transports derive their path parameter
// patterns (the OpenAPI document) from it, so they cannot disagree with
// the IDs the Service makes.
func IDPrefixForPath(before string) string {
	before = strings.TrimPrefix(before, "/")
	for _, d := range kindList {
		k := d.info()
		switch {
		case k.StoreKind == KindEventSource:
			continue // addressed by its type, not its (internal) ID
		case !k.Nested && before == k.Collection:
			return k.Prefix
		case k.Nested && strings.HasPrefix(before, k.Parent.Collection+"/") && strings.HasSuffix(before, "/"+k.Collection) &&
			strings.Count(strings.TrimSuffix(strings.TrimPrefix(before, k.Parent.Collection+"/"), "/"+k.Collection), "/") == 0:
			return k.Prefix
		}
	}
	return ""
}

// KindInfo is what a transport may know of a kind of resource, so that
// its tables (routes, path patterns, tests) derive from the Service's.
type KindInfo struct {
	// Kind is the store kind.
	Kind store.Kind
	// Prefix starts the kind's IDs.
	Prefix string
	// Collection is the path of the kind's collection below the base URL;
	// for a nested kind, below its parent's URI.
	Collection string
	// Noun names the kind in messages.
	Noun string
	// Event is the name its changes are reported under, "" for none.
	Event string
	// Parent is the kind of the records' parent, "" for none.
	Parent store.Kind
	// Nested says that the kind's URIs are below its parent's.
	Nested bool
}

// Kinds returns every kind of resource the Service stores, in the order
// of the default event registry. A new slice is returned on each call.
func Kinds() []KindInfo {
	out := make([]KindInfo, len(kindList))
	for i, d := range kindList {
		k := d.info()
		out[i] = KindInfo{Kind: k.StoreKind, Prefix: k.Prefix, Collection: k.Collection, Noun: k.Noun, Event: k.Event, Nested: k.Nested}
		if k.Parent != nil {
			out[i].Parent = k.Parent.StoreKind
		}
	}
	return out
}
