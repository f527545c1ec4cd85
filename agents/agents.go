// Package agents describes agents, the programs that connect outbound to
// a tunnel server and receive public traffic through that connection: an
// agent's session ([TunnelSession]) as the API shows it, what a tunnel
// server knows when one opens ([SessionParams]) or binds a labeled tunnel
// ([LabeledTunnelParams]), and the interface through which an edge proxy
// hands a connection to an agent's tunnel ([Dialer], [ConnHeader]).
//
// It is a leaf: the root package stores sessions, package tunnel serves
// agents, and package proxy dials them, all through these types.
package agents

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/resource"
)

// SessionPrefix begins every tunnel session's ID.
const SessionPrefix = "ts_"

// Bounds of what an agent reports about itself, in bytes. The agent
// protocol carries them in one JSON message, which a tunnel server reads
// under its own bound (package tunnel); these are what is stored.
const (
	// MaxVersionBytes bounds AgentVersion.
	MaxVersionBytes = 64
	// MaxOSBytes bounds OS (and the architecture it may carry).
	MaxOSBytes = 64
	// MaxMetadataBytes bounds the session's and a tunnel's Metadata, as
	// the API bounds every metadata field.
	MaxMetadataBytes = 4096
	// MaxForwardsToBytes bounds an agent tunnel's informational
	// ForwardsTo ("app://laptop/server?pid=1234", "http://localhost:3000").
	MaxForwardsToBytes = 512
	// MaxClientTypeBytes bounds ClientType.
	MaxClientTypeBytes = 64
	// MaxDescriptionBytes bounds an endpoint's Description, as the API
	// bounds every description field.
	MaxDescriptionBytes = 255
)

// TunnelSession is an agent's session with a tunnel server: it is online
// while the connection lasts. Its shape is the original service's
// TunnelSession; Node is an extension (the edge node that holds the
// connection, whose lease keeps the session online).
type TunnelSession struct {
	// ID is the session's identifier, SessionPrefix and an opaque string.
	ID string `json:"id"`
	// URI locates the session, {base_url}/tunnel_sessions/<id>.
	URI string `json:"uri"`
	// AccountID is the account the session belongs to (its credential's).
	// Not shown: a caller only ever sees its own account's sessions.
	AccountID string `json:"-"`
	// AgentVersion is the version the agent reported ("1.12.1").
	AgentVersion string `json:"agent_version"`
	// Credential is the tunnel credential whose authtoken the agent
	// authenticated with.
	Credential resource.Ref `json:"credential"`
	// IP is the address the agent connected from.
	IP string `json:"ip"`
	// Metadata is what the agent set for its session.
	Metadata string `json:"metadata"`
	// OS is the agent's operating system and architecture ("linux/amd64").
	OS string `json:"os"`
	// Region is the tunnel server's region.
	Region string `json:"region"`
	// StartedAt is when the session was opened.
	StartedAt time.Time `json:"started_at"`
	// Transport is how the agent is connected: "ngrok/2", the agent
	// protocol's muxado over TLS, as the original service names it.
	Transport string `json:"transport"`
	// Node is the ID of the edge node (tunnel server) that holds the
	// session's connection. The session is online while the node's lease
	// is (see [Node]): when the node stops renewing it, the session is
	// removed with the node's others. An extension of the original shape.
	Node string `json:"node"`
	// StopRequested is set by a stop request (POST
	// /tunnel_sessions/{id}/stop): the session's tunnel server tells the
	// agent to stop, or closes its connection. Not shown.
	StopRequested bool `json:"-"`
}

// Transport is the value of [TunnelSession.Transport].
const Transport = "ngrok/2"

// SessionParams are what a tunnel server knows of an agent when its
// session opens.
type SessionParams struct {
	// AgentVersion, OS, ClientType and Metadata are as the agent
	// reported them (bounded: MaxVersionBytes and so on).
	AgentVersion string
	OS           string
	ClientType   string
	Metadata     string
	// IP is the agent's address.
	IP netip.Addr
	// Region is the tunnel server's region ("" for none).
	Region string
	// StopSupported says whether the agent accepts the Stop command; a
	// stop request for a session that does not is carried out by closing
	// its connection.
	StopSupported bool
	// Node is the ID of the registered node whose tunnel server holds
	// the connection (required).
	Node string
}

// Validate reports every broken rule at once, naming each field.
func (p SessionParams) Validate() error {
	var vs apierr.Violations
	vs.CheckText("agent_version", p.AgentVersion, MaxVersionBytes)
	vs.CheckText("os", p.OS, MaxOSBytes)
	vs.CheckText("client_type", p.ClientType, MaxClientTypeBytes)
	vs.CheckText("metadata", p.Metadata, MaxMetadataBytes)
	vs.CheckText("region", p.Region, MaxVersionBytes)
	if p.Node == "" {
		vs.Add("node", "is required: a session is held by a registered node")
	}
	return vs.Err()
}

// LabeledTunnelParams are what an agent asks for when it starts a
// labeled tunnel.
type LabeledTunnelParams struct {
	// Labels select the tunnel for tunnel group backends (the rules of
	// backends.ValidateLabels); at least one.
	Labels map[string]string
	// ForwardsTo is informational (the agent's own upstream, or
	// "app://host/program?pid=N"): at most MaxForwardsToBytes of UTF-8.
	// The proxy never dials it.
	ForwardsTo string
	// Metadata is the tunnel's metadata, at most MaxMetadataBytes.
	Metadata string
}

// EdgeType tells an agent what kind of edge a connection came through,
// as the agent protocol's proxy header does.
type EdgeType string

// The edge types of [ConnHeader.EdgeType].
const (
	// EdgeNone: the connection reached an endpoint the agent bound
	// itself, not an edge.
	EdgeNone  EdgeType = ""
	EdgeTCP   EdgeType = "1"
	EdgeTLS   EdgeType = "2"
	EdgeHTTPS EdgeType = "3"
)

// ConnHeader is what an agent is told about a connection it is handed:
// the client's address, the protocol ("http", "https", "tcp" or
// "tls"), the edge type, and whether the bytes are the client's own TLS
// (passed through, not terminated at the edge).
type ConnHeader struct {
	ClientAddr     netip.AddrPort
	Proto          string
	EdgeType       EdgeType
	PassthroughTLS bool
}

// String returns the header's client address and protocol, for logs.
func (h ConnHeader) String() string {
	return h.Proto + " from " + h.ClientAddr.String() + " (edge type " + strconv.Quote(string(h.EdgeType)) + ")"
}

// Dialer hands connections to agents' tunnels. Package tunnel's Server
// implements it for the sessions it holds, and package hop for those of
// every node of the store; an edge proxy uses it to reach a tunnel whose
// TunnelSession is set, instead of dialing the tunnel's forwards_to.
type Dialer interface {
	// DialTunnel opens a connection to the agent that serves tunnelID
	// (a labeled tunnel's or an endpoint's ID) in a session that node
	// holds, telling it h. The error is ErrNoSession (wrapped) when the
	// Dialer cannot reach a session that serves the tunnel.
	DialTunnel(ctx context.Context, node, tunnelID string, h ConnHeader) (net.Conn, error)
}

// ErrNoSession is the error of [Dialer.DialTunnel] for a tunnel whose
// agent is not connected where the Dialer can reach it.
var ErrNoSession = noSession{}

type noSession struct{}

func (noSession) Error() string { return "no agent session here serves the tunnel" }

// EndpointPrefix begins every endpoint's ID.
const EndpointPrefix = "ep_"

// Endpoint is a public address an agent bound itself (a Bind of http,
// https, tcp or tls), served by the edge proxies directly, without an
// edge. Its shape is the original service's Endpoint; Type is always
// "agent". It is online while its session is: it is a child of the
// session, and goes with it.
type Endpoint struct {
	// ID is the endpoint's identifier, EndpointPrefix and an opaque
	// string. An agent that reconnects rebinds under the same ID.
	ID string `json:"id"`
	// URI locates the endpoint, {base_url}/endpoints/<id>.
	URI string `json:"uri"`
	// AccountID is the account the endpoint belongs to. Not shown.
	AccountID string `json:"-"`
	// Region is the tunnel server's region.
	Region string `json:"region"`
	// CreatedAt is when the endpoint was first bound.
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when the endpoint was last bound: again after the
	// agent reconnected, with its ID, URL and CreatedAt.
	UpdatedAt time.Time `json:"updated_at"`
	// PublicURL is where clients reach it: https://app.example.com,
	// http://app.example.com, tls://app.example.com:443,
	// tcp://tcp.example.com:20001.
	PublicURL string `json:"public_url"`
	// URL is the same as PublicURL.
	URL string `json:"url"`
	// Proto is http, https, tcp or tls.
	Proto string `json:"proto"`
	// Scheme is the same as Proto.
	Scheme string `json:"scheme"`
	// Hostport is Host and Port joined.
	Hostport string `json:"hostport"`
	// Host is the endpoint's domain (http, https, tls) or the host of
	// its address (tcp).
	Host string `json:"host"`
	// Port is 443 (https, tls), 80 (http), or a tcp endpoint's port.
	Port int64 `json:"port"`
	// Type is "agent": the endpoint is served through an agent session.
	Type string `json:"type"`
	// Metadata is what the agent set for the bind.
	Metadata string `json:"metadata"`
	// Description is what the agent set for the bind.
	Description string `json:"description"`
	// Domain is the reserved domain the endpoint's host is (or that
	// covers it); nil for TCP endpoints.
	Domain *resource.Ref `json:"domain,omitempty"`
	// UpstreamURL is the agent's informational forwards_to.
	UpstreamURL string `json:"upstream_url"`
	// TrafficPolicy is the bind's traffic policy document ("" for none).
	TrafficPolicy string `json:"traffic_policy"`
	// TunnelSession is the session that holds the endpoint.
	TunnelSession *resource.Ref `json:"tunnel_session,omitempty"`
	// Node is the ID of the edge node that holds the endpoint's session
	// (see [TunnelSession.Node]). An extension of the original shape.
	Node string `json:"node"`
	// PassthroughTLS, for a tls endpoint, says the client's TLS goes to
	// the agent as it is (the agent terminates it); false: the proxy
	// terminates TLS with the reserved domain's certificate. Not shown.
	PassthroughTLS bool `json:"-"`
	// PoolingEnabled says the agent bound the endpoint with pooling
	// enabled: it is a member of the pool of its URL, which every
	// endpoint of the account bound with pooling enabled on that URL
	// forms, and the edge proxies spread the URL's connections over the
	// pool's members (the original's field).
	PoolingEnabled bool `json:"pooling_enabled"`
	// Pool, for an endpoint with pooling enabled, is the pool it is a
	// member of, as it was when the endpoint was read. An extension of
	// the original shape.
	Pool *EndpointPool `json:"pool,omitempty"`
	// Bindings are where the endpoint is reachable from, as the original
	// shape lists them: ["public"] (a listener of the edge proxies
	// serves it) or ["internal"] (no listener does; only a
	// forward-internal traffic-policy action of the same account's
	// edges and endpoints reaches it, see [BindingInternal]).
	Bindings []string `json:"bindings"`
}

// EndpointPool is the pool of endpoints one URL has: every endpoint of
// an account bound with pooling enabled on that URL.
type EndpointPool struct {
	// URL is the pool's URL, its members' PublicURL.
	URL string `json:"url"`
	// Endpoints are the pool's members, oldest first: the endpoint
	// itself among them.
	Endpoints []resource.Ref `json:"endpoints"`
}

// The bindings of endpoints ([Endpoint.Bindings], [EndpointParams.Binding]).
const (
	// BindingPublic: the edge proxies' listeners serve the endpoint.
	BindingPublic = "public"
	// BindingInternal: no listener serves the endpoint; its host ends
	// in [InternalSuffix], and only the forward-internal action of a
	// traffic policy of the same account reaches it.
	BindingInternal = "internal"
)

// InternalSuffix ends the host of every internal endpoint, and of no
// public one.
const InternalSuffix = ".internal"

// IsInternal reports whether e is an internal endpoint.
func (e *Endpoint) IsInternal() bool {
	return len(e.Bindings) == 1 && e.Bindings[0] == BindingInternal
}

// EndpointType is the value of [Endpoint.Type].
const EndpointType = "agent"

// The protocols of endpoints ([Endpoint.Proto], [EndpointParams.Proto]).
const (
	ProtoHTTP  = "http"
	ProtoHTTPS = "https"
	ProtoTCP   = "tcp"
	ProtoTLS   = "tls"
)

// EndpointParams are what an agent asks for when it binds an endpoint.
type EndpointParams struct {
	// ID is the endpoint's ID when the agent binds it again after a
	// reconnect ("" for a new endpoint).
	ID string
	// TakeOver lets a rebind (ID set) replace the endpoint of that ID
	// while another session of the credential still holds it: the agent
	// brought a resume token young enough to take things over. Without
	// it such a rebind is refused (FailedPrecondition) until that session
	// ends; an ID that no session holds is bound again either way.
	TakeOver bool
	// Proto is http, https, tcp or tls.
	Proto string
	// Domain is the host of an http, https or tls endpoint: a reserved
	// domain of the account, or a name a wildcard one covers.
	Domain string
	// Addr is a tcp endpoint's host:port; "" asks for a free port of
	// TCPPorts.
	Addr string
	// TCPHost is the public host of tcp endpoints without Addr, and
	// TCPLow to TCPHigh (inclusive) the ports a tcp endpoint may have:
	// the tunnel server's edge proxy listens there. TCPLow 0: the
	// server serves no tcp endpoints.
	TCPHost         string
	TCPLow, TCPHigh int
	// TrafficPolicy is the bind's traffic policy document, "" for none.
	TrafficPolicy string
	// ForwardsTo is informational, as a labeled tunnel's (at most
	// MaxForwardsToBytes); Metadata and Description are at most
	// MaxMetadataBytes and MaxDescriptionBytes. All are UTF-8.
	ForwardsTo  string
	Metadata    string
	Description string
	// PassthroughTLS, for a tls endpoint, says the agent terminates TLS.
	PassthroughTLS bool
	// PoolingEnabled makes the endpoint a member of the pool of its
	// URL (the SDK's WithPoolingEnabled): endpoints of one account
	// bound with pooling enabled on one URL share it. A bind with
	// pooling enabled on the URL of an endpoint bound without it is
	// refused, and the reverse.
	PoolingEnabled bool
	// Binding is [BindingPublic] ("" means it too) or [BindingInternal].
	// An internal endpoint's Domain ends in [InternalSuffix] (a public
	// one's never does); it needs no reserved domain, its name is the
	// account's own (two accounts may each have api.internal), and Port,
	// when not 0, is the port its URL names (default 443, 80 for http).
	Binding string
	// Port is the port of an internal endpoint's URL; 0: the default of
	// its protocol. Public http, https and tls endpoints serve 80 or 443.
	Port int
	// DomainBase, when not "", is the tunnel server's base domain of
	// endpoints that name no domain: a public http or https endpoint
	// without Domain is given <label>.DomainBase, the label derived
	// from the endpoint's ID (so a rebind under that ID gets the same
	// name). "" refuses such a bind, saying that a domain is needed.
	DomainBase string
}

// Validate reports the broken rules that need nothing but p: the
// protocol, and the bounds and encoding of the agent's texts. Each
// violation names its field as EndpointParams does ("Proto",
// "Metadata"). Addresses and policies are the Service's to check.
func (p EndpointParams) Validate() error {
	var vs apierr.Violations
	switch p.Proto {
	case ProtoHTTP, ProtoHTTPS, ProtoTCP, ProtoTLS:
	default:
		vs.Add("Proto", "must be http, https, tcp or tls, got %q", apierr.Truncate(p.Proto, 16))
	}
	vs.CheckText("ForwardsTo", p.ForwardsTo, MaxForwardsToBytes)
	vs.CheckText("Metadata", p.Metadata, MaxMetadataBytes)
	vs.CheckText("Description", p.Description, MaxDescriptionBytes)
	if p.PassthroughTLS && p.Proto != ProtoTLS {
		vs.Add("PassthroughTLS", "applies only to tls endpoints")
	}
	switch p.Binding {
	case "", BindingPublic, BindingInternal:
	default:
		vs.Add("Binding", "must be public or internal, got %q", apierr.Truncate(p.Binding, 16))
	}
	if p.Port < 0 || p.Port > 65535 || (p.Port != 0 && p.Binding != BindingInternal) {
		vs.Add("Port", "applies only to internal endpoints, as a port from 1 to 65535")
	}
	return vs.Err()
}

// NodePrefix begins every node's ID.
const NodePrefix = "nd_"

// Bounds of a node's registration, in bytes.
const (
	// MaxNodeAddrBytes bounds Node.Addr (host:port).
	MaxNodeAddrBytes = 255
)

// Node is an edge node: one tunnel server (an `edgeplane proxy` process,
// or `serve -proxy`) of the store. It registers itself and renews one
// lease for all the sessions it holds: liveness costs one store write per
// node per renewal, whatever the number of sessions. A node that stops
// renewing is reaped when its lease ends, with its sessions, their
// tunnels and endpoints. The API does not show nodes; `edgeplane admin
// list-nodes` does.
type Node struct {
	// ID is the node's identifier, NodePrefix and an opaque string. A
	// node that restarts, or lost its lease, registers under a new ID.
	ID string `json:"id"`
	// Addr is where other nodes reach it for the hop (package hop),
	// host:port; "" when it takes no hop.
	Addr string `json:"addr"`
	// Region and Version are the node's tunnel server's.
	Region  string `json:"region"`
	Version string `json:"version"`
	// StartedAt is when the node registered.
	StartedAt time.Time `json:"started_at"`
	// ExpiresAt is when its lease ends unless renewed.
	ExpiresAt time.Time `json:"expires_at"`
}

// NodeParams are what a node registers.
type NodeParams struct {
	// Addr is the node's hop address, host:port with a numeric port, or
	// "" for none.
	Addr string
	// Region and Version: see [Node].
	Region, Version string
}

// Validate reports every broken rule at once, naming each field.
func (p NodeParams) Validate() error {
	var vs apierr.Violations
	if p.Addr != "" {
		if len(p.Addr) > MaxNodeAddrBytes {
			vs.Add("addr", "must be at most %d bytes, got %d", MaxNodeAddrBytes, len(p.Addr))
		} else if host, port, err := net.SplitHostPort(p.Addr); err != nil || host == "" {
			vs.Add("addr", "must be host:port, got %q", apierr.Truncate(p.Addr, 64))
		} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			vs.Add("addr", "must have a port from 1 to 65535, got %q", apierr.Truncate(port, 16))
		}
	}
	vs.CheckText("region", p.Region, MaxVersionBytes)
	vs.CheckText("version", p.Version, MaxVersionBytes)
	return vs.Err()
}
