package acmedns

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/memstore"
)

func newServer(t testing.TB) (*Server, *edgeplane.Host) {
	t.Helper()
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	s, err := New(Options{Host: svc.Host().Certificates(), Zones: []string{"acme.edgeplane-cname.com."}})
	if err != nil {
		t.Fatal(err)
	}
	return s, svc.Host()
}

// put stores a pending DNS-01 challenge of name with value.
func put(t testing.TB, host *edgeplane.Host, name, value string) {
	t.Helper()
	if err := host.Certificates().PutACMEChallenge(context.Background(), edgeplane.ACMEChallenge{Type: edgeplane.ChallengeDNS01, Name: name,
		KeyAuthorization: value, ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
}

// listen serves s on a port of 127.0.0.1 until the test ends.
func listen(t testing.TB, s *Server) string {
	t.Helper()
	addr, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return addr
}

// longValue is a TXT value of the longest a challenge may have, more
// than the 255 bytes of a TXT string, with a backslash, which package
// dns reads as an escape.
var longValue = `\065` + strings.Repeat("k", edgeplane.MaxACMEKeyAuthorization-len(`\065`))

// TestServer: over UDP and TCP, the TXT record of a pending challenge;
// NXDOMAIN for other names of the zone, REFUSED outside it; SOA and NS
// at the apex.
func TestServer(t *testing.T) {
	s, host := newServer(t)
	const name = "abc123.acme.edgeplane-cname.com"
	put(t, host, name, "Zm9vYmFy-digest")
	put(t, host, "long.acme.edgeplane-cname.com", longValue)
	addr := listen(t, s)
	for _, network := range []string{"udp", "tcp"} {
		c := &dns.Client{Net: network, Timeout: 5 * time.Second}
		for _, tc := range []struct {
			name   string
			qname  string
			qtype  uint16
			rcode  int
			answer string // the first answer's data, "" for none
		}{
			{"the challenge", "ABC123.acme.edgeplane-cname.com.", dns.TypeTXT, dns.RcodeSuccess, "Zm9vYmFy-digest"},
			// Split in strings of 255 bytes; dns shows a backslash escaped.
			{"the longest value", "long.acme.edgeplane-cname.com.", dns.TypeTXT, dns.RcodeSuccess, strings.ReplaceAll(longValue, `\`, `\\`)},
			{"the challenge's name, another type", name + ".", dns.TypeA, dns.RcodeSuccess, ""},
			{"no challenge", "other.acme.edgeplane-cname.com.", dns.TypeTXT, dns.RcodeNameError, ""},
			{"not a challenge name", "a b.acme.edgeplane-cname.com.", dns.TypeTXT, dns.RcodeNameError, ""},
			{"outside the zone", "example.com.", dns.TypeTXT, dns.RcodeRefused, ""},
			{"the zone's parent", "edgeplane-cname.com.", dns.TypeSOA, dns.RcodeRefused, ""},
			{"apex SOA", "acme.edgeplane-cname.com.", dns.TypeSOA, dns.RcodeSuccess, "ns.acme.edgeplane-cname.com."},
			{"apex NS", "acme.edgeplane-cname.com.", dns.TypeNS, dns.RcodeSuccess, "ns.acme.edgeplane-cname.com."},
		} {
			t.Run(network+"/"+tc.name, func(t *testing.T) {
				m := new(dns.Msg)
				m.SetQuestion(tc.qname, tc.qtype)
				in, _, err := c.Exchange(m, addr)
				if err != nil {
					t.Fatal(err)
				}
				if in.Rcode != tc.rcode {
					t.Fatalf("rcode %s, want %s", dns.RcodeToString[in.Rcode], dns.RcodeToString[tc.rcode])
				}
				want := tc.answer
				if network == "udp" && len(want) > dns.MinMsgSize {
					want = "" // truncated: the client asks again over TCP
				}
				if in.Truncated != (want != tc.answer) {
					t.Errorf("truncated %t, want %t", in.Truncated, want != tc.answer)
				}
				got := ""
				if len(in.Answer) > 0 {
					switch rr := in.Answer[0].(type) {
					case *dns.TXT:
						got = strings.Join(rr.Txt, "")
					case *dns.SOA:
						got = rr.Ns
					case *dns.NS:
						got = rr.Ns
					}
				}
				if got != want {
					t.Errorf("answer %q, want %q (%v)", got, want, in.Answer)
				}
				if tc.rcode != dns.RcodeRefused && !in.Authoritative {
					t.Error("not authoritative")
				}
			})
		}
	}
}

func TestNewOptions(t *testing.T) {
	_, host := newServer(t)
	zone := []string{"acme.example"}
	for _, o := range []Options{{Zones: []string{"a.example"}}, {Host: host.Certificates()}, {Host: host.Certificates(), Zones: []string{"*.example.com"}}, {Host: host.Certificates(), Zones: []string{"a..b"}},
		{Host: host.Certificates(), Zones: zone, NS: "ns 1.example"}, {Host: host.Certificates(), Zones: zone, NS: "*.example"}, {Host: host.Certificates(), Zones: zone, NS: "ns..example"}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

// TestNSName: the zone's NS and SOA records name Options.NS, the host
// the parent zone delegates to.
func TestNSName(t *testing.T) {
	_, host := newServer(t)
	s, err := New(Options{Host: host.Certificates(), Zones: []string{"acme.edgeplane-cname.com"}, NS: "NS1.edgeplane-cname.com."})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []uint16{dns.TypeNS, dns.TypeSOA} {
		req := new(dns.Msg)
		req.SetQuestion("acme.edgeplane-cname.com.", typ)
		m := s.answer(req)
		if len(m.Answer) != 1 {
			t.Fatalf("%s: %v", dns.TypeToString[typ], m)
		}
		var got string
		switch rr := m.Answer[0].(type) {
		case *dns.NS:
			got = rr.Ns
		case *dns.SOA:
			got = rr.Ns
		}
		if got != "ns1.edgeplane-cname.com." {
			t.Errorf("%s names %q, want ns1.edgeplane-cname.com.", dns.TypeToString[typ], got)
		}
	}
}

// FuzzAnswer: any message the server can unpack gets a reply that packs.
func FuzzAnswer(f *testing.F) {
	for _, q := range []struct {
		name string
		typ  uint16
	}{{"abc.acme.edgeplane-cname.com.", dns.TypeTXT}, {"acme.edgeplane-cname.com.", dns.TypeSOA}, {"example.com.", dns.TypeA}} {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.typ)
		b, _ := m.Pack()
		f.Add(b)
	}
	s, host := newServer(f)
	put(f, host, "abc.acme.edgeplane-cname.com", longValue) // the seed's TXT query gets the longest answer
	f.Fuzz(func(t *testing.T, b []byte) {
		req := new(dns.Msg)
		if req.Unpack(b) != nil {
			return
		}
		if _, err := s.answer(req).Pack(); err != nil {
			t.Fatalf("reply does not pack: %v", err)
		}
	})
}

// BenchmarkAnswer: one TXT query for a pending challenge, answered from
// the store (memstore).
func BenchmarkAnswer(b *testing.B) {
	s, host := newServer(b)
	const name = "abc123.acme.edgeplane-cname.com"
	put(b, host, name, "digest")
	req := new(dns.Msg)
	req.SetQuestion(name+".", dns.TypeTXT)
	b.ReportAllocs()
	for b.Loop() {
		if m := s.answer(req); len(m.Answer) != 1 {
			b.Fatal(m)
		}
	}
}

// TestQueryLimit: a source beyond QueryLimit queries in QueryWindow is
// refused.
func TestQueryLimit(t *testing.T) {
	s, _ := newServer(t)
	addr := listen(t, s)
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	q := new(dns.Msg)
	q.SetQuestion("acme.edgeplane-cname.com.", dns.TypeSOA)
	refusedAt := 0
	for i := 1; i <= 2*QueryLimit && refusedAt == 0; i++ {
		in, _, err := c.Exchange(q, addr)
		if err != nil {
			t.Fatal(err)
		}
		if in.Rcode == dns.RcodeRefused {
			refusedAt = i
		}
	}
	if refusedAt != QueryLimit+1 {
		t.Errorf("first refused query: %d, want %d", refusedAt, QueryLimit+1)
	}
}
