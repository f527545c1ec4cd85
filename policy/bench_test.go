package policy

import (
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchPolicy is the typical 5-rule condition-only inbound policy of the
// performance targets: equality on the method, a prefix on the path, a
// regex, an in-list and a CIDR check on the client IP. The benchmark
// request matches none of them, so every condition is evaluated.
const benchPolicy = `{"inbound":[
 {"name":"no-delete","expressions":["req.method == 'DELETE'"],"actions":[{"type":"deny"}]},
 {"name":"admin","expressions":["req.url.path.startsWith('/admin')"],"actions":[{"type":"deny"}]},
 {"name":"legacy","expressions":["req.url.path.matches('^/v[0-9]+/internal/')"],"actions":[{"type":"deny","config":{"status_code":404}}]},
 {"name":"hosts","expressions":["req.host in ['internal.example.com', 'admin.example.com', 'staff.example.com']"],"actions":[{"type":"deny"}]},
 {"name":"lan","expressions":["inCidrRange(conn.client_ip, '10.0.0.0/8')"],"actions":[{"type":"deny"}]}
]}`

func benchRequest() *Request {
	return &Request{
		Method:   "GET",
		Scheme:   "https",
		Host:     "www.example.com",
		Path:     "/api/v1/items",
		RawQuery: "page=2",
		Header: http.Header{
			"User-Agent": {"Mozilla/5.0 (X11; Linux x86_64) Firefox/126.0"},
			"Accept":     {"*/*"},
		},
		ContentLength: -1,
		Proto:         "HTTP/1.1",
		Conn: Conn{
			ClientAddr: netip.MustParseAddrPort("203.0.113.7:51234"),
			ServerAddr: netip.MustParseAddrPort("192.0.2.1:443"),
		},
		Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func mustCompileB(b *testing.B, doc string) *Policy {
	b.Helper()
	e, err := NewEngine(Options{})
	if err != nil {
		b.Fatal(err)
	}
	p, err := e.CompileJSON([]byte(doc), CompileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func BenchmarkEvaluate5Rules(b *testing.B) {
	p := mustCompileB(b, benchPolicy)
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Inbound(req); res.Verdict != Continue {
			b.Fatal(res.Verdict)
		}
	}
}

// handWritten5Rules is the hand-written Go twin of benchPolicy.
type handWritten5Rules struct {
	legacy *regexp.Regexp
	hosts  []string
	lan    netip.Prefix
}

func (h *handWritten5Rules) eval(r *Request) (Verdict, int) {
	if r.Method == "DELETE" {
		return Respond, 403
	}
	if strings.HasPrefix(r.Path, "/admin") {
		return Respond, 403
	}
	if h.legacy.MatchString(r.Path) {
		return Respond, 404
	}
	if slices.Contains(h.hosts, r.Host) {
		return Respond, 403
	}
	if h.lan.Contains(r.Conn.ClientAddr.Addr().Unmap()) {
		return Respond, 403
	}
	return Continue, 0
}

func BenchmarkEvaluate5RulesHandWritten(b *testing.B) {
	h := &handWritten5Rules{
		legacy: regexp.MustCompile("^/v[0-9]+/internal/"),
		hosts:  []string{"internal.example.com", "admin.example.com", "staff.example.com"},
		lan:    netip.MustParsePrefix("10.0.0.0/8"),
	}
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if v, _ := h.eval(req); v != Continue {
			b.Fatal(v)
		}
	}
}

func BenchmarkEvaluate1Rule(b *testing.B) {
	p := mustCompileB(b, `{"inbound":[{"expressions":["req.method == 'DELETE'"],"actions":[{"type":"deny"}]}]}`)
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Inbound(req); res.Verdict != Continue {
			b.Fatal(res.Verdict)
		}
	}
}

func BenchmarkCompile5Rules(b *testing.B) {
	e, err := NewEngine(Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.CompileJSON([]byte(benchPolicy), CompileOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
