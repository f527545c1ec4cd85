package policy

import (
	"net/http"
	"net/netip"
	"testing"
)

// TestStateReuse evaluates requests in turn on one goroutine, so that each
// evaluation reuses the pooled state of the one before: nothing computed
// for a request (its client IP text, its header map as CEL sees it, its
// header edits, its rewritten URL) may show in the next.
func TestStateReuse(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"on_http_request":[
		{"expressions":["'x-user' in req.headers"],"actions":[{"type":"add-headers","config":{"headers":{"x-seen":"${conn.client_ip}"}}}]},
		{"expressions":["req.url.query.contains('old')"],"actions":[{"type":"url-rewrite","config":{"from":"old","to":"new"}}]},
		{"expressions":["'x-seen' in req.headers && req.headers['x-seen'][0] == '198.51.100.7'"],"actions":[{"type":"deny","config":{"status_code":451}}]}]}`,
		CompileOptions{})
	req := func(client string, query string, header ...string) *Request {
		r := &Request{Method: "GET", Host: "example.com", Path: "/p", RawQuery: query, Header: http.Header{}}
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		r.Conn.ClientAddr = netip.MustParseAddrPort(client)
		return r
	}
	steps := []struct {
		name    string
		req     *Request
		verdict Verdict
		status  int
		edits   int
		rewrite string
	}{
		{"x-user from the denied address", req("198.51.100.7:1000", "v=old", "X-User", "a"), Respond, 451, 1, "/p?v=new"},
		{"no x-user: no edit, no deny", req("198.51.100.7:1000", "v=1"), Continue, 0, 0, ""},
		{"x-user from another address", req("203.0.113.9:1000", "v=old", "X-User", "b"), Continue, 0, 1, "/p?v=new"},
		{"nothing at all", req("203.0.113.9:1000", ""), Continue, 0, 0, ""},
		{"the denied address again", req("198.51.100.7:1000", "", "X-User", "c"), Respond, 451, 1, ""},
	}
	for round := range 2 {
		for _, s := range steps {
			res := p.Inbound(s.req)
			if res.Verdict != s.verdict || res.StatusCode != s.status || len(res.HeaderEdits) != s.edits || res.RewriteURI != s.rewrite {
				t.Errorf("round %d, %s: got verdict %v status %d edits %v rewrite %q", round, s.name, res.Verdict, res.StatusCode, res.HeaderEdits, res.RewriteURI)
			}
		}
	}
}
