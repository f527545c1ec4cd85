// Package hop carries connections between the edge nodes of one store:
// one hop from the node a client reached to the node that holds the
// agent's session.
//
// Many edge nodes share a store, and every labeled tunnel and endpoint
// record names the node whose tunnel server holds its agent's session
// ([agents.TunnelSession.Node]). A request that reaches node B for a
// tunnel held by node A runs B's policy, then [Hop.DialTunnel] carries
// it to A over one authenticated, multiplexed connection and A hands it
// to the agent's session with the client's original address. The hop
// carries bytes only: policy ran on B.
//
// A [Hop] is both ends. As an [agents.Dialer] it is what an edge proxy
// dials agents through: a tunnel of this node goes to the local tunnel
// server ([Options.Local]), any other over the hop to its node, found
// with [Options.Resolve] (the host wires it to the node records,
// [agents.Node.Addr]). [Hop.Serve] accepts the other nodes' connections
// and serves the streams they forward.
//
// # Authentication
//
// Only nodes of the same store can use the hop. The host derives an
// Ed25519 key from the store's sealing key with HKDF (edgeplane's
// NodeHost.NodeKey), so every node of a store, and nothing else, holds the
// same key. [Identity] turns it into a self-signed certificate whose
// fields are all fixed, the same on every node. Both ends present it
// over TLS 1.3 (the server requires a client certificate) and accept the
// peer only when its certificate's public key is the key's own: the
// 32 bytes are compared in constant time, and TLS 1.3's
// CertificateVerify proves the peer holds the private key. There is no
// CA, so the usual chain verification is off, and that check alone
// decides. A peer that presents no certificate, a certificate of another
// key (a node of another store, or one given another sealing key), or
// that does not speak TLS is refused, logged with its address (never a
// key) and counted (reason auth).
//
// Since every node holds the key, a node is trusted with any stream:
// the key is as secret as the sealing key it comes from.
//
// # Connections
//
// A node keeps one connection to each peer it forwards to, dialed when
// the first stream needs it (concurrent callers share one dial) and
// reused for every stream, muxado (golang.ngrok.com/muxado/v2) over TLS,
// the dialing node in muxado's client role. Both ends send heartbeats
// ([Options.HeartbeatInterval]) and close a connection whose peer stops
// answering. A connection that ended is dialed again by the next stream;
// one that died unnoticed (the peer restarted) fails the next stream's
// open, which dials again once. When Resolve gives a node a new address,
// new streams go over a new connection and the old one closes when its
// last stream does. A connection's dialer only ever opens streams on it:
// the accepting node opens none, so each direction between two nodes
// has its own connection.
//
// # Wire protocol
//
// After the TLS handshake the connection is a muxado session. A stream
// is one connection to an agent. Its opener writes, in one frame:
//
//	stream type  4 bytes, big-endian: 1 (muxado's typed streams; the
//	             heartbeat is muxado's own type 0xFFFFFFFF)
//	length       4 bytes, big-endian: the JSON's, at most MaxHeaderBytes
//	header       JSON: {"from": "nd_…", "tunnel": "tn_…" or "ep_…",
//	             "client_addr": "203.0.113.7:51234", "proto": "https",
//	             "edge_type": "3", "passthrough_tls": false}
//
// from is the forwarding node (at most MaxNodeIDBytes, the same on every
// stream of a connection); tunnel the tunnel's or endpoint's ID (not
// empty, at most MaxTunnelIDBytes); client_addr the client's address and
// port (at most MaxClientAddrBytes); proto (at most MaxProtoBytes), edge_type (MaxEdgeTypeBytes) and
// passthrough_tls are the [agents.ConnHeader] the agent is told. Unknown
// fields are ignored. A header over the bound is refused unread; one
// that is not such JSON, or breaks a rule, is refused with a message
// that names the field. The serving node bounds the header's arrival
// ([Options.HandshakeTimeout]).
//
// The serving node then dials its own tunnel server, Local, for the
// tunnel (bounded by [Options.DialTimeout]), and answers one status:
//
//	0  ok: from here the stream carries the connection's raw bytes,
//	   both ways
//	1  refused, 2  no agent session of this node serves the tunnel:
//	   2 bytes of length, big-endian, then a message of at most
//	   MaxMessageBytes, and the stream closes
//
// The dialing node's DialTunnel returns the stream on ok, and a
// [*RefusedError] otherwise, which for status 2 wraps
// [agents.ErrNoSession]. The message is the serving node's own text: a
// local dial's error is logged there, not sent. After ok, each side
// copies until both directions end; a half-close (CloseWrite) carries
// over as the other side's EOF.
//
// # Never twice
//
// A stream that arrives over the hop is served by Local, for this node,
// or refused: it is never forwarded again, so a stale record can cost a
// refusal but never a loop. The node a record names holds the session,
// or no one does.
//
// # Metrics
//
// [Metrics] counts streams and their bytes by peer node and direction
// (out: forwarded to the peer; in: served for it), failures by reason
// (auth, dial, refused, bad_header, local), and the connections open to
// and from peers.
//
// # Imports
//
// A Hop needs no Service: its node, the key every node derives from the
// sealing key, the local [agents.Dialer] and a resolver of node IDs are
// its Options. It imports the leaves agents and apierr (and
// internal/muxframe), never the root package or the policy engine;
// internal/layering's tests keep it so.
package hop
