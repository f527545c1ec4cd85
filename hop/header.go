package hop

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"golang.ngrok.com/muxado/v2"
)

// Bounds of a stream's header, in bytes.
const (
	// MaxHeaderBytes bounds a stream header's JSON: a larger one is
	// refused unread.
	MaxHeaderBytes = 4096
	// MaxNodeIDBytes bounds a node ID ([Options.Node], the header's from).
	MaxNodeIDBytes = 64
	// MaxTunnelIDBytes bounds the header's tunnel.
	MaxTunnelIDBytes = 64
	// MaxProtoBytes bounds the header's proto.
	MaxProtoBytes = 16
	// MaxEdgeTypeBytes bounds the header's edge_type.
	MaxEdgeTypeBytes = 16
	// MaxClientAddrBytes bounds the header's client_addr (an IPv6
	// address with a zone and a port).
	MaxClientAddrBytes = 128
	// MaxMessageBytes bounds the message of a refusal.
	MaxMessageBytes = 512
)

// streamType is the muxado stream type of a hop stream (version 1 of
// the stream protocol). Heartbeats are muxado's own type.
const streamType muxado.StreamType = 1

// The status a serving node answers a stream's header with.
const (
	statusOK        byte = 0 // the agent's connection is open: raw bytes follow both ways
	statusRefused   byte = 1 // refused: a bad header, or the local dial failed
	statusNoSession byte = 2 // no agent session of this node serves the tunnel
)

// header is what a stream's opener tells the serving node.
type header struct {
	from   string // the node that forwards the stream
	tunnel string // the tunnel or endpoint ID
	conn   agents.ConnHeader
}

// wireHeader is the JSON form of header.
type wireHeader struct {
	From           string `json:"from"`
	Tunnel         string `json:"tunnel"`
	ClientAddr     string `json:"client_addr"`
	Proto          string `json:"proto"`
	EdgeType       string `json:"edge_type"`
	PassthroughTLS bool   `json:"passthrough_tls"`
}

// errHeaderJSON refuses a header that is not JSON of the expected shape.
var errHeaderJSON = apierr.Invalidf("header", "must be a JSON object with the fields from, tunnel, client_addr, proto, edge_type and passthrough_tls")

// parseHeader parses and validates a header's JSON (without its length
// prefix). The error lists every broken rule, naming each field as the
// JSON does ("tunnel", "client_addr").
func parseHeader(b []byte) (header, error) {
	var w wireHeader
	if err := json.Unmarshal(b, &w); err != nil {
		return header{}, errHeaderJSON
	}
	var vs apierr.Violations
	checkText(&vs, "from", w.From, MaxNodeIDBytes, true)
	checkText(&vs, "tunnel", w.Tunnel, MaxTunnelIDBytes, true)
	checkText(&vs, "proto", w.Proto, MaxProtoBytes, false)
	checkText(&vs, "edge_type", w.EdgeType, MaxEdgeTypeBytes, false)
	ap, err := netip.ParseAddrPort(w.ClientAddr)
	switch {
	case len(w.ClientAddr) > MaxClientAddrBytes:
		vs.Add("client_addr", "must be at most %d bytes, got %d", MaxClientAddrBytes, len(w.ClientAddr))
	case err != nil:
		vs.Add("client_addr", "must be an IP address and port (\"203.0.113.7:51234\", \"[2001:db8::1]:443\"), got %q", apierr.Truncate(w.ClientAddr, 64))
	}
	if err := vs.Err(); err != nil {
		return header{}, err
	}
	return header{from: w.From, tunnel: w.Tunnel, conn: agents.ConnHeader{
		ClientAddr: ap, Proto: w.Proto, EdgeType: agents.EdgeType(w.EdgeType), PassthroughTLS: w.PassthroughTLS,
	}}, nil
}

// validate checks h as parseHeader checks what it parses, before h is
// sent.
func (h *header) validate() error {
	var vs apierr.Violations
	checkText(&vs, "from", h.from, MaxNodeIDBytes, true)
	checkText(&vs, "tunnel", h.tunnel, MaxTunnelIDBytes, true)
	checkText(&vs, "proto", h.conn.Proto, MaxProtoBytes, false)
	checkText(&vs, "edge_type", string(h.conn.EdgeType), MaxEdgeTypeBytes, false)
	if !h.conn.ClientAddr.IsValid() {
		vs.Add("client_addr", "must be an IP address and port, got none")
	} else if zone := h.conn.ClientAddr.Addr().Zone(); len(zone) > MaxClientAddrBytes-len("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff%]:65535") {
		vs.Add("client_addr", "must be at most %d bytes, got an IPv6 zone of %d", MaxClientAddrBytes, len(zone))
	} else if !utf8.ValidString(zone) {
		vs.Add("client_addr", "must be UTF-8")
	}
	return vs.Err()
}

// checkText records a violation of field when s is longer than max
// bytes, not UTF-8, or empty when required.
func checkText(vs *apierr.Violations, field, s string, max int, required bool) {
	if required && s == "" {
		vs.Add(field, "must not be empty")
		return
	}
	vs.CheckText(field, s, max)
}

// appendRequest appends what a stream's opener writes first, in one
// frame: the stream type (4 bytes, big-endian), the header's length (4
// bytes, big-endian) and the header's JSON. h must be valid.
func appendRequest(b []byte, h *header) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(streamType))
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	b = append(b, `{"from":`...)
	b = appendJSONString(b, h.from)
	b = append(b, `,"tunnel":`...)
	b = appendJSONString(b, h.tunnel)
	var addr [64]byte
	b = append(b, `,"client_addr":`...)
	b = appendJSONString(b, h.conn.ClientAddr.AppendTo(addr[:0]))
	b = append(b, `,"proto":`...)
	b = appendJSONString(b, h.conn.Proto)
	b = append(b, `,"edge_type":`...)
	b = appendJSONString(b, string(h.conn.EdgeType))
	if h.conn.PassthroughTLS {
		b = append(b, `,"passthrough_tls":true}`...)
	} else {
		b = append(b, `,"passthrough_tls":false}`...)
	}
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

// appendJSONString appends s as a JSON string (not jsonenc.AppendString,
// which takes a string: this one takes the client address's bytes
// without allocating one, which TestAppendRequest counts). s is UTF-8 (validate
// checked it): only the quote, the backslash and control characters are
// escaped.
func appendJSONString[T string | []byte](b []byte, s T) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// readHeader reads a header's length and JSON from r (the stream type
// read already) and parses it. A length over MaxHeaderBytes is refused
// without reading the JSON. An error from r is returned as it is; a
// refusal is an [*apierr.Error] that names the field.
func readHeader(r io.Reader) (header, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return header{}, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > MaxHeaderBytes {
		return header{}, apierr.Invalidf("header", "must be at most %d bytes, got %d", MaxHeaderBytes, size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return header{}, err
	}
	return parseHeader(b)
}

// appendStatus appends a status and, for a refusal, its message (2
// bytes of length, big-endian, then at most MaxMessageBytes).
func appendStatus(b []byte, status byte, msg string) []byte {
	b = append(b, status)
	if status == statusOK {
		return b
	}
	msg = apierr.Truncate(msg, MaxMessageBytes-len("…"))
	b = binary.BigEndian.AppendUint16(b, uint16(len(msg)))
	return append(b, msg...)
}

// errBadStatus is the error of a status that is not one of the
// protocol's, or a message over MaxMessageBytes.
var errBadStatus = errors.New("hop: the peer answered with a status the protocol does not have")

// readStatus reads a status and, for a refusal, its message.
func readStatus(r io.Reader) (status byte, msg string, err error) {
	var b [3]byte
	if _, err := io.ReadFull(r, b[:1]); err != nil {
		return 0, "", err
	}
	switch b[0] {
	case statusOK:
		return statusOK, "", nil
	case statusRefused, statusNoSession:
	default:
		return 0, "", errBadStatus
	}
	if _, err := io.ReadFull(r, b[1:3]); err != nil {
		return 0, "", err
	}
	n := binary.BigEndian.Uint16(b[1:3])
	if n > MaxMessageBytes {
		return 0, "", errBadStatus
	}
	m := make([]byte, n)
	if _, err := io.ReadFull(r, m); err != nil {
		return 0, "", err
	}
	return b[0], string(m), nil
}

// RefusedError is the error of [Hop.DialTunnel] when the node that holds
// the tunnel's session refused the stream: no agent session there serves
// the tunnel (it unwraps to [agents.ErrNoSession]), or the node's dial to
// the agent failed, or it found the stream's header wrong.
type RefusedError struct {
	// Node is the node that refused.
	Node string
	// NoSession says no agent session of Node serves the tunnel.
	NoSession bool
	// Message is the node's reason, at most MaxMessageBytes.
	Message string
}

// Error returns the refusal with the node and its reason.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("hop: node %s refused the stream: %s", e.Node, e.Message)
}

// Unwrap returns [agents.ErrNoSession] when NoSession is set.
func (e *RefusedError) Unwrap() error {
	if e.NoSession {
		return agents.ErrNoSession
	}
	return nil
}
