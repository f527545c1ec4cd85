package clientip

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestParsePrefixes(t *testing.T) {
	tests := []struct {
		in      string
		want    string // the prefixes joined by " "
		wantErr string
	}{
		{in: "", want: ""},
		{in: " , ", want: ""},
		{in: "10.0.0.0/8", want: "10.0.0.0/8"},
		{in: "10.1.2.3/8, 192.0.2.7 ,2001:db8::/32", want: "10.0.0.0/8 192.0.2.7/32 2001:db8::/32"},
		{in: "::1", want: "::1/128"},
		{in: "::ffff:10.0.0.1", want: "10.0.0.1/32"},
		{in: "::ffff:10.0.0.0/104", want: "10.0.0.0/8"},
		{in: "::ffff:0.0.0.0/80", wantErr: "shorter than /96"},
		{in: "10.0.0.0/33", wantErr: `trusted proxy 1: "10.0.0.0/33" is not a CIDR prefix`},
		{in: "10.0.0.0/8,proxy.local", wantErr: `trusted proxy 2: "proxy.local"`},
		{in: "fe80::1%eth0", wantErr: "is not a CIDR prefix"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseTrusted(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, p := range got {
				s = append(s, p.String())
			}
			if strings.Join(s, " ") != tc.want {
				t.Errorf("got %v, want %s", s, tc.want)
			}
		})
	}
}

func TestOf(t *testing.T) {
	trusted, err := parseTrusted("10.0.0.0/8,192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		peer      string
		xff       []string
		trusted   bool // use the trusted list
		want      string
		forwarded bool
	}{
		{name: "no trusted proxies: the peer", peer: "198.51.100.7:4000", xff: []string{"203.0.113.1"}, want: "198.51.100.7:4000"},
		{name: "untrusted peer: the peer", peer: "198.51.100.7:4000", xff: []string{"203.0.113.1"}, trusted: true, want: "198.51.100.7:4000"},
		{name: "trusted peer, one entry", peer: "10.1.1.1:4000", xff: []string{"203.0.113.1"}, trusted: true, want: "203.0.113.1:0", forwarded: true},
		{name: "right-most untrusted wins", peer: "10.1.1.1:4000", xff: []string{"6.6.6.6, 203.0.113.1, 10.2.2.2"}, trusted: true, want: "203.0.113.1:0", forwarded: true},
		{name: "several header lines", peer: "10.1.1.1:4000", xff: []string{"6.6.6.6, 203.0.113.1", "192.0.2.1"}, trusted: true, want: "203.0.113.1:0", forwarded: true},
		{name: "all trusted: the left-most", peer: "10.1.1.1:4000", xff: []string{"10.9.9.9, 192.0.2.1"}, trusted: true, want: "10.9.9.9:0", forwarded: true},
		{name: "garbage stops the walk", peer: "10.1.1.1:4000", xff: []string{"203.0.113.1, unknown, 10.2.2.2"}, trusted: true, want: "10.2.2.2:0", forwarded: true},
		{name: "garbage right away: the peer", peer: "10.1.1.1:4000", xff: []string{"203.0.113.1, <script>"}, trusted: true, want: "10.1.1.1:4000"},
		{name: "no header: the peer", peer: "10.1.1.1:4000", trusted: true, want: "10.1.1.1:4000"},
		{name: "empty entries skipped", peer: "10.1.1.1:4000", xff: []string{" , 203.0.113.1 ,, "}, trusted: true, want: "203.0.113.1:0", forwarded: true},
		{name: "entries with ports", peer: "10.1.1.1:4000", xff: []string{"[2001:db8::1]:80, 203.0.113.1:443"}, trusted: true, want: "203.0.113.1:0", forwarded: true},
		{name: "mapped peer is unmapped", peer: "[::ffff:10.1.1.1]:4000", xff: []string{"::ffff:203.0.113.1"}, trusted: true, want: "203.0.113.1:0", forwarded: true},
		{name: "IPv6 peer", peer: "[2001:db8::5]:4000", want: "[2001:db8::5]:4000"},
		{name: "no peer address", peer: "pipe", want: "invalid AddrPort"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			var tp []netip.Prefix
			if tc.trusted {
				tp = trusted
			}
			got, fwd := Of(r, tp)
			if got.String() != tc.want || fwd != tc.forwarded {
				t.Errorf("got %s (forwarded %v), want %s (%v)", got, fwd, tc.want, tc.forwarded)
			}
		})
	}
}

// FuzzOf: whatever the header, the client is the peer or an
// address the header names, never a trusted proxy's unless all are, and
// Of never panics.
func FuzzOf(f *testing.F) {
	f.Add("203.0.113.1, 10.2.2.2")
	f.Add("unknown, , [::1]:80")
	f.Add(",,,")
	f.Add("::ffff:1.2.3.4%eth0")
	trusted, _ := parseTrusted("10.0.0.0/8")
	f.Fuzz(func(t *testing.T, xff string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.1:1234"
		r.Header.Set("X-Forwarded-For", xff)
		got, fwd := Of(r, trusted)
		if !fwd {
			if got.String() != "10.0.0.1:1234" {
				t.Fatalf("not forwarded, yet %s", got)
			}
			return
		}
		if !got.Addr().IsValid() || got.Addr().Is4In6() || got.Addr().Zone() != "" || got.Port() != 0 {
			t.Fatalf("forwarded client %s", got)
		}
		found := false
		for e := range strings.SplitSeq(xff, ",") {
			if a, ok := parseForwardedAddr(strings.TrimSpace(e)); ok && a == got.Addr() {
				found = true
			}
		}
		if !found {
			t.Fatalf("client %s is in no entry of %q", got, xff)
		}
	})
}

// FuzzParsePrefixes: the flag parser never panics, and what it
// accepts are masked prefixes of unmapped addresses.
func FuzzParsePrefixes(f *testing.F) {
	f.Add("10.0.0.0/8,192.0.2.7")
	f.Add("::ffff:10.0.0.0/104")
	f.Add("fe80::1%eth0/64")
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := parseTrusted(s)
		if err != nil {
			return
		}
		for _, p := range ps {
			if !p.IsValid() || p != p.Masked() || p.Addr().Is4In6() || p.Addr().Zone() != "" {
				t.Fatalf("%q gave %s", s, p)
			}
		}
	})
}

func parseTrusted(s string) ([]netip.Prefix, error) { return ParsePrefixes(s, "trusted proxy") }
