package ratelimit

import (
	"encoding/binary"
	"net/netip"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
)

// KeyElementKind says where a bucket key element takes its value from.
type KeyElementKind int

// The kinds of bucket key element.
const (
	// KeyHost is the request's host: "req.host".
	KeyHost KeyElementKind = iota + 1
	// KeyClientIP is the connection's client IP: "conn.client_ip".
	KeyClientIP
	// KeyHeader is a request header: "req.headers['x-api-key']" or
	// "getReqHeader('X-Api-Key')".
	KeyHeader
	// KeyClientIPPrefix is the connection's client IP masked to a network
	// prefix: "conn.client_ip_prefix". It is an extension of SPEC 2.8, so
	// that a client rotating addresses inside its own network (an IPv6 /64)
	// keeps one bucket; see [AppendPrefixKeyPart].
	KeyClientIPPrefix
)

// Default prefix lengths of [KeyClientIPPrefix]: a whole IPv4 address, an
// IPv6 /64 (the usual assignment to one subscriber or LAN).
const (
	DefaultIPv4PrefixBits = 32
	DefaultIPv6PrefixBits = 64
)

// String returns the kind's name: "host", "client_ip" or "header".
func (k KeyElementKind) String() string {
	switch k {
	case KeyHost:
		return "host"
	case KeyClientIP:
		return "client_ip"
	case KeyHeader:
		return "header"
	case KeyClientIPPrefix:
		return "client_ip_prefix"
	}
	return "invalid"
}

// KeyElement is one parsed bucket key element.
type KeyElement struct {
	// Kind says where the value comes from.
	Kind KeyElementKind
	// Header is the lower-cased header name when Kind is KeyHeader, and
	// empty otherwise.
	Header string
}

// String returns the element's canonical form, which [ParseKeyElement]
// parses back to the same element: "req.host", "conn.client_ip" or
// "req.headers['x-api-key']".
func (e KeyElement) String() string {
	switch e.Kind {
	case KeyHost:
		return "req.host"
	case KeyClientIP:
		return "conn.client_ip"
	case KeyHeader:
		return "req.headers['" + e.Header + "']"
	case KeyClientIPPrefix:
		return "conn.client_ip_prefix"
	}
	return "invalid"
}

const keyElementForms = `"req.host", "conn.client_ip", "conn.client_ip_prefix", "req.headers['<header-name>']" or "getReqHeader('<Header-Name>')"`

// ParseKeyElement parses a bucket key element. The allowed forms are
//
//	req.host
//	conn.client_ip
//	conn.client_ip_prefix
//	req.headers['x-api-key']
//	getReqHeader('X-Api-Key')
//
// where the quotes may be single or double and the header name must be a
// valid HTTP token (RFC 9110); header names are case-insensitive, and the
// parsed name is lower-cased. conn.client_ip_prefix is an extension of
// SPEC 2.8 (see [KeyClientIPPrefix]); the other four are its forms. No surrounding or inner spaces are allowed.
// A failure is an [*apierr.Error] with code [apierr.InvalidArgument] and one
// violation whose field is empty (callers prefix it, as [Config.Validate]
// does with "bucket_key[i]").
func ParseKeyElement(s string) (KeyElement, error) {
	switch s {
	case "":
		return KeyElement{}, apierr.Invalidf("", "must not be empty: use one of %s", keyElementForms)
	case "req.host":
		return KeyElement{Kind: KeyHost}, nil
	case "conn.client_ip":
		return KeyElement{Kind: KeyClientIP}, nil
	case "conn.client_ip_prefix":
		return KeyElement{Kind: KeyClientIPPrefix}, nil
	}
	var inner string
	switch {
	case strings.HasPrefix(s, "req.headers[") && strings.HasSuffix(s, "]"):
		inner = s[len("req.headers[") : len(s)-1]
	case strings.HasPrefix(s, "getReqHeader(") && strings.HasSuffix(s, ")"):
		inner = s[len("getReqHeader(") : len(s)-1]
	default:
		return KeyElement{}, apierr.Invalidf("", "must be one of %s, got %s", keyElementForms, quoteShort(s))
	}
	if len(inner) < 2 || (inner[0] != '\'' && inner[0] != '"') || inner[len(inner)-1] != inner[0] {
		return KeyElement{}, apierr.Invalidf("", "must quote the header name in matching single or double quotes, got %s", quoteShort(s))
	}
	name := inner[1 : len(inner)-1]
	if strings.IndexByte(name, inner[0]) >= 0 {
		return KeyElement{}, apierr.Invalidf("", "must quote the header name in matching single or double quotes, got %s", quoteShort(s))
	}
	if name == "" {
		return KeyElement{}, apierr.Invalidf("", "must name a header, got %s", quoteShort(s))
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return KeyElement{}, apierr.Invalidf("", "must name a header with a valid HTTP token (letters, digits and !#$%%&'*+-.^_`|~), got %s", quoteShort(s))
		}
	}
	return KeyElement{Kind: KeyHeader, Header: strings.ToLower(name)}, nil
}

// isTokenChar reports whether c is a tchar of RFC 9110 section 5.6.2.
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// AppendKeyPart appends one part of a multi-part bucket key to dst and
// returns the extended slice. The part is encoded as its length (an
// unsigned varint, as [binary.AppendUvarint] writes it) followed by its
// bytes. The encoding is prefix-free, so the concatenation of encoded parts
// decodes to exactly one tuple: two different tuples of parts never build the
// same key ("a","bc" and "ab","c" differ; so do "" and no part at all).
// It does not allocate when dst has room for len(part)+10 more bytes.
func AppendKeyPart(dst []byte, part string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(part)))
	return append(dst, part...)
}

// AppendPrefixKeyPart appends to dst, as [AppendKeyPart] would, the text of
// the network prefix of ip: ip masked to v4Bits (0 to 32) when it is an
// IPv4 address (an IPv4-mapped IPv6 address counts as IPv4), to v6Bits (0
// to 128) when it is IPv6, for example "198.51.100.0/24" or
// "2001:db8:1:2::/64". A zone is dropped. An invalid ip, or a length out
// of range, appends the empty part. It does not allocate when dst has room
// for 45 more bytes.
func AppendPrefixKeyPart(dst []byte, ip netip.Addr, v4Bits, v6Bits int) []byte {
	if !ip.IsValid() {
		return AppendKeyPart(dst, "")
	}
	ip = ip.Unmap().WithZone("")
	bits := v6Bits
	if ip.Is4() {
		bits = v4Bits
	}
	p, err := ip.Prefix(bits)
	if err != nil {
		return AppendKeyPart(dst, "")
	}
	// The text is at most 43 bytes ("ffff:...:ffff/128"), so its length
	// is a one-byte uvarint: append it in place after that byte.
	n := len(dst)
	dst = p.AppendTo(append(dst, 0))
	dst[n] = byte(len(dst) - n - 1)
	return dst
}
