package acmedns

import (
	"context"
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
	s, err := New(Options{Host: svc.Host(), Zones: []string{"acme.edgeplane-cname.com."}})
	if err != nil {
		t.Fatal(err)
	}
	return s, svc.Host()
}

// TestServer: over UDP and TCP, the TXT record of a pending challenge;
// NXDOMAIN for other names of the zone, REFUSED outside it; SOA and NS
// at the apex.
func TestServer(t *testing.T) {
	s, host := newServer(t)
	const name = "abc123.acme.edgeplane-cname.com"
	if err := host.PutACMEChallenge(context.Background(), edgeplane.ACMEChallenge{Type: edgeplane.ChallengeDNS01, Name: name,
		KeyAuthorization: "Zm9vYmFy-digest", ExpiresAt: time.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	addr, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
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
				got := ""
				if len(in.Answer) > 0 {
					switch rr := in.Answer[0].(type) {
					case *dns.TXT:
						got = rr.Txt[0]
					case *dns.SOA:
						got = rr.Ns
					case *dns.NS:
						got = rr.Ns
					}
				}
				if got != tc.answer {
					t.Errorf("answer %q, want %q (%v)", got, tc.answer, in.Answer)
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
	for _, o := range []Options{{Zones: []string{"a.example"}}, {Host: host}, {Host: host, Zones: []string{"*.example.com"}}, {Host: host, Zones: []string{"a..b"}}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
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
	s, _ := newServer(f)
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
	if err := host.PutACMEChallenge(context.Background(), edgeplane.ACMEChallenge{Type: edgeplane.ChallengeDNS01, Name: name,
		KeyAuthorization: "digest", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		b.Fatal(err)
	}
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
	addr, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
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
