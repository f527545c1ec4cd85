package hop

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/netip"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
)

func TestParseHeader(t *testing.T) {
	tests := []struct {
		name   string
		json   string
		want   header
		fields []string // the violations' fields; nil: valid
	}{
		{name: "valid", json: `{"from":"nd_b","tunnel":"tn_1","client_addr":"203.0.113.7:51234","proto":"https","edge_type":"3","passthrough_tls":true}`,
			want: header{from: "nd_b", tunnel: "tn_1", conn: agents.ConnHeader{ClientAddr: netip.MustParseAddrPort("203.0.113.7:51234"),
				Proto: "https", EdgeType: agents.EdgeHTTPS, PassthroughTLS: true}}},
		{name: "IPv6 and optional fields left out", json: `{"from":"nd_b","tunnel":"ep_1","client_addr":"[2001:db8::1]:443"}`,
			want: header{from: "nd_b", tunnel: "ep_1", conn: agents.ConnHeader{ClientAddr: netip.MustParseAddrPort("[2001:db8::1]:443")}}},
		{name: "unknown fields ignored", json: `{"from":"nd_b","tunnel":"tn_1","client_addr":"203.0.113.7:1","future":{"x":[1,2]}}`,
			want: header{from: "nd_b", tunnel: "tn_1", conn: agents.ConnHeader{ClientAddr: netip.MustParseAddrPort("203.0.113.7:1")}}},
		{name: "bounds", json: `{"from":"` + strings.Repeat("n", MaxNodeIDBytes) + `","tunnel":"` + strings.Repeat("t", MaxTunnelIDBytes) +
			`","client_addr":"203.0.113.7:1","proto":"` + strings.Repeat("p", MaxProtoBytes) + `","edge_type":"` + strings.Repeat("e", MaxEdgeTypeBytes) + `"}`,
			want: header{from: strings.Repeat("n", MaxNodeIDBytes), tunnel: strings.Repeat("t", MaxTunnelIDBytes), conn: agents.ConnHeader{
				ClientAddr: netip.MustParseAddrPort("203.0.113.7:1"), Proto: strings.Repeat("p", MaxProtoBytes), EdgeType: agents.EdgeType(strings.Repeat("e", MaxEdgeTypeBytes))}}},
		{name: "not JSON", json: `{"from":`, fields: []string{"header"}},
		{name: "trailing data", json: `{"from":"nd_b","tunnel":"tn_1","client_addr":"203.0.113.7:1"} {}`, fields: []string{"header"}},
		{name: "wrong type", json: `{"from":"nd_b","tunnel":1,"client_addr":"203.0.113.7:1"}`, fields: []string{"header"}},
		{name: "empty", json: `{}`, fields: []string{"from", "tunnel", "client_addr"}},
		{name: "over the bounds", json: `{"from":"` + strings.Repeat("n", MaxNodeIDBytes+1) + `","tunnel":"` + strings.Repeat("t", MaxTunnelIDBytes+1) +
			`","client_addr":"203.0.113.7:1","proto":"` + strings.Repeat("p", MaxProtoBytes+1) + `","edge_type":"` + strings.Repeat("e", MaxEdgeTypeBytes+1) + `"}`,
			fields: []string{"from", "tunnel", "proto", "edge_type"}},
		{name: "client address without port", json: `{"from":"nd_b","tunnel":"tn_1","client_addr":"203.0.113.7"}`, fields: []string{"client_addr"}},
		{name: "client address a name", json: `{"from":"nd_b","tunnel":"tn_1","client_addr":"example.com:80"}`, fields: []string{"client_addr"}},
		{name: "not UTF-8", json: "{\"from\":\"nd_b\",\"tunnel\":\"tn_\\udc00\",\"client_addr\":\"203.0.113.7:1\"}", want: header{from: "nd_b", tunnel: "tn_\ufffd",
			conn: agents.ConnHeader{ClientAddr: netip.MustParseAddrPort("203.0.113.7:1")}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseHeader([]byte(tc.json))
			if tc.fields == nil {
				if err != nil || got != tc.want {
					t.Fatalf("parseHeader = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			var fields []string
			for _, v := range apierr.ViolationsOf(err) {
				fields = append(fields, v.Field)
			}
			if strings.Join(fields, ",") != strings.Join(tc.fields, ",") {
				t.Errorf("parseHeader: %v; want violations of %v", err, tc.fields)
			}
			for _, f := range tc.fields {
				if !strings.Contains(err.Error(), f+": ") {
					t.Errorf("the message %q does not name %s", err, f)
				}
			}
		})
	}
}

func TestReadHeader(t *testing.T) {
	valid := appendRequest(nil, &header{from: "nd_b", tunnel: "tn_1", conn: agents.ConnHeader{ClientAddr: netip.MustParseAddrPort("203.0.113.7:1")}})[4:]
	tests := []struct {
		name  string
		in    []byte
		err   error  // an error of the reader
		field string // a refusal of field
	}{
		{name: "valid", in: valid},
		{name: "over the bound", in: binary.BigEndian.AppendUint32(nil, MaxHeaderBytes+1), field: "header"},
		{name: "no length", in: []byte{0, 0}, err: io.ErrUnexpectedEOF},
		{name: "short", in: valid[:len(valid)-1], err: io.ErrUnexpectedEOF},
		{name: "nothing", in: nil, err: io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readHeader(bytes.NewReader(tc.in))
			switch {
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Errorf("readHeader: %v, want %v", err, tc.err)
				}
			case tc.field != "":
				if vs := apierr.ViolationsOf(err); len(vs) != 1 || vs[0].Field != tc.field || !strings.Contains(vs[0].Reason, "4096") {
					t.Errorf("readHeader: %v, want a refusal of %s that names the bound", err, tc.field)
				}
			case err != nil:
				t.Errorf("readHeader: %v", err)
			}
		})
	}
}

func TestAppendRequest(t *testing.T) {
	h := header{from: "nd_\"b\\", tunnel: "tn_\x00\x1f\n\r\t\u2028é😀</>&", conn: agents.ConnHeader{
		ClientAddr: netip.MustParseAddrPort("[fe80::1%eth\"0]:443"), Proto: "http", EdgeType: agents.EdgeTCP, PassthroughTLS: true}}
	if err := h.validate(); err != nil {
		t.Fatal(err)
	}
	b := appendRequest(nil, &h)
	if typ := binary.BigEndian.Uint32(b); typ != uint32(streamType) {
		t.Errorf("stream type %d", typ)
	}
	if n := binary.BigEndian.Uint32(b[4:]); int(n) != len(b)-8 {
		t.Errorf("length %d, want %d", n, len(b)-8)
	}
	if !json.Valid(b[8:]) {
		t.Fatalf("not JSON: %s", b[8:])
	}
	got, err := readHeader(bytes.NewReader(b[4:]))
	if err != nil || got != h {
		t.Fatalf("read back %+v, %v; want %+v", got, err, h)
	}
	if n := testing.AllocsPerRun(100, func() { b = appendRequest(b[:0], &h) }); n != 0 {
		t.Errorf("appendRequest allocates %v times into a buffer large enough", n)
	}
}

func TestStatus(t *testing.T) {
	long := strings.Repeat("é", MaxMessageBytes)
	tests := []struct {
		name   string
		in     []byte
		status byte
		msg    string
		err    error
	}{
		{name: "ok", in: appendStatus(nil, statusOK, "ignored"), status: statusOK},
		{name: "refused", in: appendStatus(nil, statusRefused, "tunnel: must not be empty"), status: statusRefused, msg: "tunnel: must not be empty"},
		{name: "no session", in: appendStatus(nil, statusNoSession, "none"), status: statusNoSession, msg: "none"},
		{name: "long message truncated", in: appendStatus(nil, statusRefused, long), status: statusRefused, msg: apierr.Truncate(long, MaxMessageBytes-len("…"))},
		{name: "unknown status", in: []byte{7}, err: errBadStatus},
		{name: "message over the bound", in: []byte{statusRefused, 0xff, 0xff}, err: errBadStatus},
		{name: "short message", in: []byte{statusRefused, 0, 9, 'x'}, err: io.ErrUnexpectedEOF},
		{name: "nothing", in: nil, err: io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, msg, err := readStatus(bytes.NewReader(tc.in))
			if !errors.Is(err, tc.err) || status != tc.status || msg != tc.msg {
				t.Errorf("readStatus = %d, %q, %v; want %d, %q, %v", status, msg, err, tc.status, tc.msg, tc.err)
			}
			if len(msg) > MaxMessageBytes {
				t.Errorf("message of %d bytes", len(msg))
			}
		})
	}
}

// FuzzReadHeader reads any bytes as a stream's header (after the stream
// type): it never panics, a header it accepts is valid and survives
// being written and read again, and a refusal names a field.
func FuzzReadHeader(f *testing.F) {
	f.Add(appendRequest(nil, &header{from: "nd_b", tunnel: "tn_1", conn: agents.ConnHeader{
		ClientAddr: netip.MustParseAddrPort("203.0.113.7:51234"), Proto: "https", EdgeType: agents.EdgeHTTPS}})[4:])
	f.Add(binary.BigEndian.AppendUint32(nil, 2))
	f.Add([]byte("\x00\x00\x00\x05{}{}{"))
	f.Add(append(binary.BigEndian.AppendUint32(nil, 40), `{"tunnel":"\u0000","client_addr":"[::1%a]:0"}`...))
	f.Add(binary.BigEndian.AppendUint32(nil, MaxHeaderBytes+1))
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := readHeader(bytes.NewReader(in))
		if err != nil {
			var ae *apierr.Error
			if errors.As(err, &ae) {
				for _, v := range ae.Violations {
					if v.Field == "" || v.Reason == "" {
						t.Fatalf("a violation without a field or reason: %+v", v)
					}
				}
			}
			return
		}
		if err := h.validate(); err != nil {
			t.Fatalf("accepted %+v, which validate refuses: %v", h, err)
		}
		again, err := readHeader(bytes.NewReader(appendRequest(nil, &h)[4:]))
		if err != nil || again != h {
			t.Fatalf("read %+v, then %+v, %v", h, again, err)
		}
	})
}

// FuzzHeaderRoundTrip writes any header that validate accepts and reads
// it back unchanged: appendRequest's JSON is what encoding/json reads.
func FuzzHeaderRoundTrip(f *testing.F) {
	f.Add("nd_b", "tn_1", "203.0.113.7:51234", "https", "3", true)
	f.Add("nd_\"", "tn_\\\x00\x7f", "[fe80::1%e\"th0]:1", "\t", "\u2028", false)
	f.Fuzz(func(t *testing.T, from, tunnel, addr, proto, edge string, passthrough bool) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return
		}
		h := header{from: from, tunnel: tunnel, conn: agents.ConnHeader{ClientAddr: ap, Proto: proto, EdgeType: agents.EdgeType(edge), PassthroughTLS: passthrough}}
		if h.validate() != nil {
			return
		}
		b := appendRequest(nil, &h)
		if !json.Valid(b[8:]) {
			t.Fatalf("not JSON: %q", b[8:])
		}
		if len(b)-8 > MaxHeaderBytes {
			t.Fatalf("a valid header of %d bytes, over the bound", len(b)-8)
		}
		got, err := readHeader(bytes.NewReader(b[4:]))
		if err != nil || got != h {
			t.Fatalf("read back %+v, %v; want %+v", got, err, h)
		}
	})
}
