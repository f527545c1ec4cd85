// Package kinds names the kinds of record the Service stores, and says
// what the records of each kind mean to the runtime parts that follow
// the store's change feed (an edge proxy's configs, a tunnel server's
// sessions, a certificate manager's domains), so that those parts know
// the kinds without importing the Service.
//
// The Service (package edgeplane) declares each kind: its stored form,
// its presentation and its events; this package holds only the names,
// the data plane's roles and the store keys of where edges and endpoints
// serve (keys.go), and a test of the Service checks that both agree. It imports nothing of the module but store.
package kinds

import (
	"slices"

	"github.com/edgeplane/edgeplane/store"
)

// The kinds of record the API shows. Users, bots and API keys are
// children (ParentID) of their account; IP policy rules of their policy;
// routes of their HTTPS edge; event sources of their subscription; tunnel
// sessions of the credential whose authtoken opened them; tunnels of the
// credential whose authtoken registered them, or of the session in which
// an agent started them; endpoints of the session in which an agent bound
// them. Edge modules live inside their edge or route record.
const (
	Account               store.Kind = "account"
	User                  store.Kind = "user"
	Bot                   store.Kind = "bot"
	APIKey                store.Kind = "api_key"
	Credential            store.Kind = "credential"
	IPPolicy              store.Kind = "ip_policy"
	IPPolicyRule          store.Kind = "ip_policy_rule"
	IPRestriction         store.Kind = "ip_restriction"
	ReservedDomain        store.Kind = "reserved_domain"
	TLSCertificate        store.Kind = "tls_certificate"
	EndpointConfiguration store.Kind = "endpoint_configuration"
	TunnelGroupBackend    store.Kind = "tunnel_group_backend"
	Tunnel                store.Kind = "tunnel"
	TunnelSession         store.Kind = "tunnel_session"
	Endpoint              store.Kind = "endpoint"
	EventSubscription     store.Kind = "event_subscription"
	EventSource           store.Kind = "event_source"
	EventDestination      store.Kind = "event_destination"
	HTTPSEdge             store.Kind = "https_edge"
	HTTPSEdgeRoute        store.Kind = "https_edge_route"
	TLSEdge               store.Kind = "tls_edge"
	TCPEdge               store.Kind = "tcp_edge"
)

// The kinds the Service stores for itself, which the API never shows:
// followers of the feed pass over their changes.
const (
	// SealingCheck is the record that proves a store's sealing key.
	SealingCheck store.Kind = "sealing_check"
	// Node is an edge node that holds agents' sessions.
	Node store.Kind = "node"
	// Lease is a named lease that elects one replica of the store for
	// work that must run once (package internal/leases).
	Lease store.Kind = "lease"
	// ACMEAccount is the ACME account key of a directory.
	ACMEAccount store.Kind = "acme_account"
	// ACMEChallenge is a pending ACME challenge's answer.
	ACMEChallenge store.Kind = "acme_challenge"
	// Delivery is an event destination's delivery state.
	Delivery store.Kind = "event_delivery"
)

// Shown lists the kinds the API shows, in the order of the default
// event registry.
var Shown = []store.Kind{Account, User, Bot, APIKey, Credential, IPPolicy, IPPolicyRule, IPRestriction,
	ReservedDomain, TLSCertificate, EndpointConfiguration, TunnelGroupBackend, Tunnel, TunnelSession, Endpoint,
	EventSubscription, EventSource, HTTPSEdge, HTTPSEdgeRoute, TLSEdge, TCPEdge, EventDestination}

// internal lists the kinds the Service stores for itself.
var internal = []store.Kind{SealingCheck, Node, Lease, ACMEAccount, ACMEChallenge, Delivery}

// Internal reports whether k is a kind the Service stores for itself.
func Internal(k store.Kind) bool { return slices.Contains(internal, k) }

// DataPlaneRole is the part an edge proxy's configs take from the records
// of a kind.
type DataPlaneRole uint8

const (
	// DataPlaneNone: no config reads the kind.
	DataPlaneNone DataPlaneRole = iota
	// DataPlaneEdge: an edge (HTTPS, TLS or TCP), compiled into a config
	// of its own.
	DataPlaneEdge
	// DataPlaneRoute: a route of an HTTPS edge, compiled with its edge
	// (its ParentID).
	DataPlaneRoute
	// DataPlaneIPPolicy: an IP policy that IP restriction modules and
	// endpoint restrictions name.
	DataPlaneIPPolicy
	// DataPlaneIPPolicyRule: a rule of an IP policy (its ParentID).
	DataPlaneIPPolicyRule
	// DataPlaneIPRestriction: an account's IP restriction, applied to
	// every edge of the account when of type endpoints.
	DataPlaneIPRestriction
	// DataPlaneBackend: a backend that routes and edges forward to.
	DataPlaneBackend
	// DataPlaneDomain: a reserved domain, whose certificate edges serve.
	DataPlaneDomain
	// DataPlaneTunnel: a tunnel that backends select by its labels.
	DataPlaneTunnel
	// DataPlaneEndpoint: an endpoint an agent bound, served without an
	// edge.
	DataPlaneEndpoint
)

// roles are the kinds an edge proxy's configs read.
var roles = map[store.Kind]DataPlaneRole{
	HTTPSEdge: DataPlaneEdge, TLSEdge: DataPlaneEdge, TCPEdge: DataPlaneEdge,
	HTTPSEdgeRoute:     DataPlaneRoute,
	IPPolicy:           DataPlaneIPPolicy,
	IPPolicyRule:       DataPlaneIPPolicyRule,
	IPRestriction:      DataPlaneIPRestriction,
	TunnelGroupBackend: DataPlaneBackend,
	ReservedDomain:     DataPlaneDomain,
	Tunnel:             DataPlaneTunnel,
	Endpoint:           DataPlaneEndpoint,
}

// DataPlaneRoleOf returns the part an edge proxy's configs take from the
// records of a store kind, and false for a kind the Service does not
// store (which a follower of the feed logs). The Service's own kinds are
// known, with no part.
func DataPlaneRoleOf(k store.Kind) (DataPlaneRole, bool) {
	if r, ok := roles[k]; ok {
		return r, true
	}
	return DataPlaneNone, Internal(k) || slices.Contains(Shown, k)
}
