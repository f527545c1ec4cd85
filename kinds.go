package edgeplane

import (
	"strings"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/store"
)

// The kinds of record the Service stores. Users, bots and API keys are
// children (ParentID) of their account; IP policy rules of their policy;
// routes of their HTTPS edge; event sources of their subscription; tunnels
// of the credential whose authtoken registered them (deleting the
// credential takes them offline). Edge modules live inside their edge or
// route record.
const (
	KindAccount               store.Kind = "account"
	KindUser                  store.Kind = "user"
	KindBot                   store.Kind = "bot"
	KindAPIKey                store.Kind = "api_key"
	KindCredential            store.Kind = "credential"
	KindIPPolicy              store.Kind = "ip_policy"
	KindIPPolicyRule          store.Kind = "ip_policy_rule"
	KindIPRestriction         store.Kind = "ip_restriction"
	KindReservedDomain        store.Kind = "reserved_domain"
	KindTLSCertificate        store.Kind = "tls_certificate"
	KindEndpointConfiguration store.Kind = "endpoint_configuration"
	KindTunnelGroupBackend    store.Kind = "tunnel_group_backend"
	KindTunnel                store.Kind = "tunnel"
	KindEventSubscription     store.Kind = "event_subscription"
	KindEventSource           store.Kind = "event_source"
	KindHTTPSEdge             store.Kind = "https_edge"
	KindHTTPSEdgeRoute        store.Kind = "https_edge_route"
	KindTLSEdge               store.Kind = "tls_edge"
	KindTCPEdge               store.Kind = "tcp_edge"
)

// eventName is a name the Service reports changes under; the event types
// are "<name>_<verb>.v0". Its values come only from the tables of this
// file (it has no literal form), so the compiler refuses a name the
// default registry does not hold.
type eventName struct{ name string }

// typ returns the event type of the change verb.
func (e eventName) typ(verb string) string { return events.TypeOf(e.name, verb) }

// kindInfo describes one kind of resource. The tables of this file are the
// one place a kind is declared: IDs (prefix), URIs (collection), messages
// (noun, describeID), event names and the default event registry are all
// derived from them.
type kindInfo struct {
	kind   store.Kind
	prefix string
	// collection is the path of the kind's collection below the base URL;
	// for a nested kind, below its parent's URI.
	collection string
	noun       string    // for messages: "IP policy"
	event      eventName // zero for kinds that report no changes
	parent     *kindInfo // the kind of ParentID, when the kind has one
	nested     bool      // the URI is {parent URI}/{collection}/{id}
}

// path returns the collection path of the kind below the base URL, for a
// record whose parent is parentID.
func (k kindInfo) path(parentID string) string {
	if k.nested {
		return k.parent.collection + "/" + parentID + "/" + k.collection
	}
	return k.collection
}

// moduleInfo describes one edge or route module: its name in paths and
// messages and the event its changes are reported under.
type moduleInfo struct {
	name  string
	event eventName
}

// The kinds, in the order of the default event registry.
var (
	accountKind           = kindInfo{kind: KindAccount, prefix: AccountPrefix, collection: "accounts", noun: "account"}
	userKind              = kindInfo{kind: KindUser, prefix: UserPrefix, collection: "users", noun: "user", parent: &accountKind}
	botKind               = kindInfo{kind: KindBot, prefix: BotPrefix, collection: "bot_users", noun: "bot user", event: eventName{"bot_user"}, parent: &accountKind}
	apiKeyKind            = kindInfo{kind: KindAPIKey, prefix: APIKeyPrefix, collection: "api_keys", noun: "API key", event: eventName{"api_key"}}
	credentialKind        = kindInfo{kind: KindCredential, prefix: credentials.IDPrefix, collection: "credentials", noun: "credential", event: eventName{"credential"}}
	ipPolicyKind          = kindInfo{kind: KindIPPolicy, prefix: ipaccess.PolicyPrefix, collection: "ip_policies", noun: "IP policy", event: eventName{"ip_policy"}}
	ipRuleKind            = kindInfo{kind: KindIPPolicyRule, prefix: ipaccess.RulePrefix, collection: "ip_policy_rules", noun: "IP policy rule", event: eventName{"ip_policy_rule"}, parent: &ipPolicyKind}
	ipRestrictionKind     = kindInfo{kind: KindIPRestriction, prefix: ipaccess.RestrictionPrefix, collection: "ip_restrictions", noun: "IP restriction", event: eventName{"ip_restriction"}}
	reservedDomainKind    = kindInfo{kind: KindReservedDomain, prefix: domains.ReservedDomainPrefix, collection: "reserved_domains", noun: "reserved domain", event: eventName{"reserved_domain"}}
	certificateKind       = kindInfo{kind: KindTLSCertificate, prefix: domains.CertificatePrefix, collection: "tls_certificates", noun: "TLS certificate", event: eventName{"tls_certificate"}}
	endpointConfigKind    = kindInfo{kind: KindEndpointConfiguration, prefix: domains.EndpointConfigurationPrefix, collection: "endpoint_configurations", noun: "endpoint configuration", event: eventName{"endpoint_configuration"}}
	backendKind           = kindInfo{kind: KindTunnelGroupBackend, prefix: backends.IDPrefix, collection: "backends/tunnel_group", noun: "tunnel group backend", event: eventName{"tunnel_group_backend"}}
	tunnelKind            = kindInfo{kind: KindTunnel, prefix: backends.TunnelPrefix, collection: "tunnels", noun: "tunnel", event: eventName{"tunnel"}, parent: &credentialKind}
	eventSubscriptionKind = kindInfo{kind: KindEventSubscription, prefix: events.SubscriptionPrefix, collection: "event_subscriptions", noun: "event subscription", event: eventName{"event_subscription"}}
	// Sources have an internal ID (evs_); their URI ends in their type.
	eventSourceKind = kindInfo{kind: KindEventSource, prefix: events.SourcePrefix, collection: "sources", noun: "event source", event: eventName{"event_source"}, parent: &eventSubscriptionKind, nested: true}
	httpsEdgeKind   = kindInfo{kind: KindHTTPSEdge, prefix: edges.HTTPSEdgePrefix, collection: "edges/https", noun: "HTTPS edge", event: eventName{"https_edge"}}
	httpsRouteKind  = kindInfo{kind: KindHTTPSEdgeRoute, prefix: edges.HTTPSRoutePrefix, collection: "routes", noun: "HTTPS edge route", event: eventName{"https_edge_route"}, parent: &httpsEdgeKind, nested: true}
	tlsEdgeKind     = kindInfo{kind: KindTLSEdge, prefix: edges.TLSEdgePrefix, collection: "edges/tls", noun: "TLS edge", event: eventName{"tls_edge"}}
	tcpEdgeKind     = kindInfo{kind: KindTCPEdge, prefix: edges.TCPEdgePrefix, collection: "edges/tcp", noun: "TCP edge", event: eventName{"tcp_edge"}}
)

// The modules, in the order of the default event registry.
var (
	routeOIDCModule            = moduleInfo{edges.ModuleOIDC, eventName{"https_edge_route_oidc_module"}}
	routeBackendModule         = moduleInfo{edges.ModuleBackend, eventName{"https_edge_route_backend_module"}}
	routeResponseHeadersModule = moduleInfo{edges.ModuleResponseHeaders, eventName{"https_edge_route_response_headers_module"}}
	routeCompressionModule     = moduleInfo{edges.ModuleCompression, eventName{"https_edge_route_compression_module"}}
	routeTrafficPolicyModule   = moduleInfo{edges.ModuleTrafficPolicy, eventName{"https_edge_route_traffic_policy_module"}}
	tlsIPRestrictionModule     = moduleInfo{edges.ModuleIPRestriction, eventName{"tls_edge_ip_restriction_module"}}
	tlsTrafficPolicyModule     = moduleInfo{edges.ModuleTrafficPolicy, eventName{"tls_edge_traffic_policy_module"}}
	tlsTerminationModule       = moduleInfo{edges.ModuleTLSTermination, eventName{"tls_edge_tls_termination_module"}}
	tcpIPRestrictionModule     = moduleInfo{edges.ModuleIPRestriction, eventName{"tcp_edge_ip_restriction_module"}}
	tcpBackendModule           = moduleInfo{edges.ModuleBackend, eventName{"tcp_edge_backend_module"}}
	tlsBackendModule           = moduleInfo{edges.ModuleBackend, eventName{"tls_edge_backend_module"}} // not in SPEC 2.7: see edges.TLSEdge.Backend
)

// kindTable and moduleTable list every kind and module, in order.
var (
	kindTable = []*kindInfo{&accountKind, &userKind, &botKind, &apiKeyKind, &credentialKind, &ipPolicyKind, &ipRuleKind,
		&ipRestrictionKind, &reservedDomainKind, &certificateKind, &endpointConfigKind, &backendKind, &tunnelKind,
		&eventSubscriptionKind, &eventSourceKind, &httpsEdgeKind, &httpsRouteKind, &tlsEdgeKind, &tcpEdgeKind}
	moduleTable = []*moduleInfo{&routeOIDCModule, &routeBackendModule, &routeResponseHeadersModule, &routeCompressionModule,
		&routeTrafficPolicyModule, &tlsIPRestrictionModule, &tlsTrafficPolicyModule, &tlsTerminationModule,
		&tcpIPRestrictionModule, &tcpBackendModule, &tlsBackendModule}
)

// kindOf returns the table entry of a store kind.
func kindOf(k store.Kind) (*kindInfo, bool) {
	for _, ki := range kindTable {
		if ki.kind == k {
			return ki, true
		}
	}
	return nil, false
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
	var names []eventName
	for _, k := range kindTable {
		if k.event != (eventName{}) {
			names = append(names, k.event)
		}
	}
	for _, m := range moduleTable {
		names = append(names, m.event)
	}
	var out []string
	for _, n := range names {
		for _, v := range events.Verbs() {
			out = append(out, n.typ(v))
		}
	}
	return out
}

// describeID returns "IP policy ipp_…" for an ID with a known prefix.
func describeID(id string) string {
	best := ""
	noun := ""
	for _, k := range kindTable {
		if strings.HasPrefix(id, k.prefix) && len(k.prefix) > len(best) {
			best, noun = k.prefix, k.noun
		}
	}
	if noun == "" {
		return id
	}
	return noun + " " + id
}

// IDPrefixForPath returns the ID prefix of the resource a path parameter
// names, given the request path before it ("/credentials",
// "/edges/https/{edge_id}/routes"), or "" when it names no kind of the
// table (an event type, say). Transports derive their path parameter
// patterns (the OpenAPI document) from it, so they cannot disagree with
// the IDs the Service makes.
func IDPrefixForPath(before string) string {
	before = strings.TrimPrefix(before, "/")
	for _, k := range kindTable {
		switch {
		case k == &eventSourceKind:
			continue // addressed by its type, not its (internal) ID
		case !k.nested && before == k.collection:
			return k.prefix
		case k.nested && strings.HasPrefix(before, k.parent.collection+"/") && strings.HasSuffix(before, "/"+k.collection) &&
			strings.Count(strings.TrimSuffix(strings.TrimPrefix(before, k.parent.collection+"/"), "/"+k.collection), "/") == 0:
			return k.prefix
		}
	}
	return ""
}
