package httpapi_test

// Issue 12 items 7 to 10: requests refused on their headers are answered
// without reading their bodies, duplicate keys are refused, what the
// server echoes is bounded, and CORS sends credentials only to the
// origins the host lists.

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane/httpapi"
)

// rawRequest writes head (a request line and headers, each ending in
// CRLF, without the blank line) to a new connection to s, then the blank
// line and body, and reads the response. The deadline bounds a server
// that never answers; it is not a timing assertion. The returned
// function reports what the connection does next: io.EOF when the
// server closed it.
func rawRequest(t *testing.T, s *server, head, body string) (*http.Response, []byte, func() error) {
	t.Helper()
	conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, head+"Host: api.example.test\r\n\r\n"+body); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("no answer within the deadline: the server waits for the body it should not read")
		}
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	next := func() error {
		_, err := br.ReadByte()
		return err
	}
	return resp, b, next
}

// Item 7: a request refused on its headers (version, authentication, rate
// limit, path, method, a body too large by its Content-Length) or served
// by a route that reads no body is answered at once, though its body
// never comes, and the connection is closed after the answer, the body
// unread. With Content-Length or chunked.
func TestE2ERefusedWithoutReadingTheBody(t *testing.T) {
	s := newE2E(t)
	limited := newServer(t, httpapi.Options{RateLimit: 1})
	if r := limited.do("GET", "/credentials", limited.keyA, ""); r.status != 200 {
		t.Fatalf("first request: %d %s", r.status, r.body)
	}
	auth := func(key string) string { return "Authorization: Bearer " + key + "\r\n" }
	const v2, json = "Service-Version: 2\r\n", "Content-Type: application/json\r\n"
	tests := []struct {
		name   string
		s      *server
		head   string
		status int
	}{
		{"no authorization", s, "POST /credentials HTTP/1.1\r\n" + v2 + json, 401},
		{"unknown key", s, "POST /credentials HTTP/1.1\r\n" + v2 + json + auth("epk_"+strings.Repeat("0", 43)), 401},
		{"no version", s, "POST /credentials HTTP/1.1\r\n" + json + auth(s.keyA), 400},
		{"rate limited", limited, "POST /credentials HTTP/1.1\r\n" + v2 + json + auth(limited.keyA), 429},
		{"no such path", s, "POST /nothing HTTP/1.1\r\n" + v2 + json + auth(s.keyA), 404},
		{"method not allowed", s, "PUT /credentials HTTP/1.1\r\n" + v2 + json + auth(s.keyA), 405},
		{"route without a body", s, "GET /credentials HTTP/1.1\r\n" + v2 + auth(s.keyA), 200},
	}
	for _, framing := range []string{"Content-Length: 100\r\n", "Transfer-Encoding: chunked\r\n"} {
		for _, tc := range tests {
			t.Run(tc.name+" "+strings.Fields(framing)[0], func(t *testing.T) {
				resp, _, next := rawRequest(t, tc.s, tc.head+framing, "")
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
				}
				if !resp.Close {
					t.Errorf("no Connection: close; the unread body would be taken for the next request")
				}
				if err := next(); err != io.EOF {
					t.Errorf("after the answer the connection gives %v, want io.EOF (closed)", err)
				}
			})
		}
	}
	t.Run("body larger than the limit by its Content-Length", func(t *testing.T) {
		resp, b, _ := rawRequest(t, s, "POST /credentials HTTP/1.1\r\n"+v2+json+auth(s.keyA)+"Content-Length: "+strconv.Itoa(2<<20)+"\r\n", "")
		if resp.StatusCode != 413 || !resp.Close {
			t.Errorf("status %d close %v, want 413 and Connection: close; body %s", resp.StatusCode, resp.Close, b)
		}
	})
	// Behind a middleware whose ResponseWriter hides net/http's, the
	// connection cannot be closed at once, but the answer still comes
	// without waiting for the body.
	t.Run("behind a middleware", func(t *testing.T) {
		h, err := httpapi.New(s.svc, httpapi.Options{})
		if err != nil {
			t.Fatal(err)
		}
		wrapped := *s
		wrapped.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(struct{ http.ResponseWriter }{w}, r)
		}))
		t.Cleanup(wrapped.srv.Close)
		resp, b, _ := rawRequest(t, &wrapped, "POST /credentials HTTP/1.1\r\n"+v2+json+"Content-Length: 100\r\n", "")
		if resp.StatusCode != 401 || !resp.Close {
			t.Errorf("status %d close %v, want 401 and Connection: close; body %s", resp.StatusCode, resp.Close, b)
		}
	})
	// A request whose body was read keeps its connection.
	t.Run("body read", func(t *testing.T) {
		body := `{"description":"kept"}`
		resp, b, _ := rawRequest(t, s, "POST /credentials HTTP/1.1\r\n"+v2+json+auth(s.keyA)+"Content-Length: "+strconv.Itoa(len(body))+"\r\n", body)
		if resp.StatusCode != 201 || resp.Close {
			t.Errorf("status %d close %v, want 201 and the connection kept; body %s", resp.StatusCode, resp.Close, b)
		}
	})
}

// Item 8: a key that appears twice in one object is refused at every
// nesting level, naming its JSON path, and nothing is stored; a front end
// reading the first key and the server the last can no longer disagree.
func TestE2EDuplicateKeys(t *testing.T) {
	s := newE2E(t)
	f := newFixture(t, s, s.keyA, "fixture")
	before := snapshot(t, s, s.keyA)
	for _, tc := range []struct {
		name, method, path, body string
		fields                   []string
	}{
		{"top level", "POST", "/credentials", `{"acl":["bind:x.example.com"],"acl":["*"]}`, []string{"acl"}},
		{"escaped spelling", "POST", "/credentials", `{"acl":["bind:x.example.com"],"\u0061cl":["*"]}`, []string{"acl"}},
		{"same value", "PATCH", "/credentials/" + f.cred, `{"description":"a","description":"a"}`, []string{"description"}},
		{"nested object", "PATCH", "/reserved_domains/" + f.rd,
			`{"certificate_management_policy":{"authority":"letsencrypt","authority":"custom"}}`, []string{"certificate_management_policy.authority"}},
		{"map", "POST", "/backends/tunnel_group", `{"labels":{"app":"web","app":"api"}}`, []string{`labels["app"]`}},
		{"map in a module", "PUT", f.routePath("response_headers"), `{"add":{"X-A":"1","X-A":"2"}}`, []string{`add["X-A"]`}},
		{"three times", "POST", "/ip_policies", `{"description":"a","description":"b","description":"c"}`, []string{"description", "description"}},
		{"inside an unknown field", "POST", "/credentials", `{"Acl":{"x":[{"y":1,"y":2}]}}`, []string{"Acl", "Acl.x[0].y"}},
		{"with an unknown field", "POST", "/credentials", `{"bogus":1,"acl":[],"acl":[]}`, []string{"bogus", "acl"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, s, tc.method, tc.path, s.keyA, tc.body)
			checkError(t, r, apiError{status: 400, code: errInvalid, fields: tc.fields})
			if !strings.Contains(string(r.body), "more than once") {
				t.Errorf("the answer does not say the key is duplicated: %s", r.body)
			}
		})
	}
	// Past the cap duplicates are counted, not kept.
	t.Run("250 duplicates", func(t *testing.T) {
		r := call(t, s, "POST", "/ip_policies", s.keyA, `{"description":"a"`+strings.Repeat(`,"description":"a"`, 250)+`}`)
		checkError(t, r, apiError{status: 400, code: errInvalid, fields: strings.Fields(strings.Repeat("description ", httpapi.MaxViolations)),
			msg: []string{"; and 249 more violations"}})
		if got := r.json["violations_omitted"]; got != float64(250-httpapi.MaxViolations) {
			t.Errorf("violations_omitted %v, want %d", got, 250-httpapi.MaxViolations)
		}
	})
	unchanged(t, s, s.keyA, before)
}

// Item 9: an error lists at most httpapi.MaxViolations violations, each
// once, with the number of the rest; its msg names the first and counts
// the others.
func TestE2EViolationsAreCapped(t *testing.T) {
	s := newE2E(t)
	f := newFixture(t, s, s.keyA, "fixture")
	before := snapshot(t, s, s.keyA)
	// 100 rules of 10 unknown actions in each of two phases: 1001
	// violations (the outbound phase is one more on a TLS edge).
	rule := `{"actions":[` + strings.TrimSuffix(strings.Repeat(`{"type":"nope"},`, 10), ",") + `]}`
	rules := strings.TrimSuffix(strings.Repeat(rule+",", 100), ",")
	doc := `{"inbound":[` + rules + `],"outbound":[` + rules + `]}`
	r := call(t, s, "PUT", f.tlsPath("traffic_policy"), s.keyA, with(`{}`, "value", doc))
	var body struct {
		Msg        string `json:"msg"`
		Violations []struct {
			Field  string `json:"field"`
			Reason string `json:"reason"`
		} `json:"violations"`
		ViolationsOmitted int `json:"violations_omitted"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || r.status != 400 {
		t.Fatalf("%d %v %.300s", r.status, err, r.body)
	}
	if len(body.Violations) != httpapi.MaxViolations || body.ViolationsOmitted != 1001-httpapi.MaxViolations {
		t.Errorf("%d violations listed and %d omitted, want %d and %d", len(body.Violations), body.ViolationsOmitted, httpapi.MaxViolations, 1001-httpapi.MaxViolations)
	}
	if !strings.HasSuffix(body.Msg, "; and 1000 more violations") {
		t.Errorf("msg %q does not end with the count of the others", body.Msg)
	}
	// Each violation is in the body once: the msg does not repeat the
	// second (nor any other but the first).
	second := body.Violations[1].Field
	if n := strings.Count(string(r.body), second); n != 1 {
		t.Errorf("the second violation (%s) appears %d times in the body (msg %q)", second, n, body.Msg)
	}
	if len(r.body) > 64<<10 {
		t.Errorf("error body of %d bytes", len(r.body))
	}
	checkError(t, r, apiError{status: 400, code: errInvalid, fields: fieldsOf(r)})
	unchanged(t, s, s.keyA, before)
}

func fieldsOf(r response) []string {
	var out []string
	vs, _ := r.json["violations"].([]any)
	for _, v := range vs {
		f, _ := v.(map[string]any)["field"].(string)
		out = append(out, f)
	}
	return out
}

// Item 9: user-supplied text repeated in a msg, a violation's field or the
// request log is cut to its documented bound at a UTF-8 boundary.
func TestE2EEchoesAreBounded(t *testing.T) {
	s := newE2E(t)
	long := strings.Repeat("é", 50<<10) // 100 KiB
	bounded := func(t *testing.T, what, s string, n int) {
		t.Helper()
		if len(s) > n || !utf8.ValidString(s) {
			t.Errorf("%s of %d bytes (valid UTF-8: %v), want at most %d: %.80s", what, len(s), utf8.ValidString(s), n, s)
		}
		if !strings.Contains(s, "…") {
			t.Errorf("%s is not marked as cut: %.80s…%s", what, s, s[max(0, len(s)-20):])
		}
	}
	logLine := func(t *testing.T, r response) string {
		t.Helper()
		op := r.header.Get("Service-Operation-Id")
		for line := range strings.Lines(s.logs.String()) {
			if strings.Contains(line, "msg=request ") && strings.Contains(line, "operation_id="+op) {
				return line
			}
		}
		t.Fatalf("no request log line of %s", op)
		return ""
	}
	for _, tc := range []struct {
		name, method, path string
	}{
		{"unknown ID", "GET", "/credentials/cr_" + long},
		{"no such path", "GET", "/" + long},
		{"method not allowed", "PUT", "/credentials/" + long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, s, tc.method, tc.path, s.keyA, "")
			if r.status < 400 {
				t.Fatalf("%d %.200s", r.status, r.body)
			}
			msg, _ := r.json["msg"].(string)
			bounded(t, "msg", msg, httpapi.MaxMessageBytes)
			if line := logLine(t, r); len(line) > 2*httpapi.MaxEchoBytes+300 {
				t.Errorf("request log line of %d bytes: %.200s", len(line), line)
			}
		})
	}
	t.Run("version header", func(t *testing.T) {
		r := call(t, s, "GET", "/credentials", s.keyA, "", "Service-Version", strings.Repeat("9", 8<<10))
		checkError(t, r, apiError{status: 400, code: errInvalid, fields: []string{"Service-Version"}})
		if len(r.body) > 2*httpapi.MaxMessageBytes+500 {
			t.Errorf("error body of %d bytes", len(r.body))
		}
	})
	t.Run("violation field", func(t *testing.T) {
		r := call(t, s, "POST", "/credentials", s.keyA, `{"`+long+`":1}`)
		fields := fieldsOf(r)
		if r.status != 400 || len(fields) != 1 {
			t.Fatalf("%d %.200s", r.status, r.body)
		}
		bounded(t, "field", fields[0], httpapi.MaxEchoBytes)
		bounded(t, "msg", r.json["msg"].(string), httpapi.MaxMessageBytes)
	})
}

// Item 10: by default every origin is allowed without credentials
// (Access-Control-Allow-Origin: *); with AllowedOrigins, only a listed
// origin is echoed, with credentials, and every answer varies by Origin.
func TestE2ECORS(t *testing.T) {
	open := newServer(t, httpapi.Options{RateLimit: -1})
	listed := newServer(t, httpapi.Options{RateLimit: -1, AllowedOrigins: []string{"https://dash.example.com"}})
	const (
		dash = "https://dash.example.com"
		evil = "https://evil.example"
	)
	preflight := func(s *server, origin string) response {
		return s.do("OPTIONS", "/credentials/cr_000000000000000000000000000", "", "",
			"Origin", origin, "Access-Control-Request-Method", "PATCH",
			"Access-Control-Request-Headers", "authorization, service-version, content-type", "Service-Version", "")
	}
	simple := func(s *server, origin string) response {
		return s.do("GET", "/credentials", s.keyA, "", "Origin", origin)
	}
	type headers map[string]string // "" means absent
	tests := []struct {
		name   string
		r      response
		status int
		want   headers
	}{
		{"default preflight", preflight(open, evil), 204, headers{
			"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Credentials": "", "Vary": "",
			"Access-Control-Allow-Methods": "GET, PATCH, DELETE", "Access-Control-Allow-Headers": "authorization, service-version, content-type",
			"Access-Control-Max-Age": "600"}},
		{"default simple", simple(open, evil), 200, headers{
			"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Credentials": "",
			"Access-Control-Expose-Headers": "Service-Operation-Id, Retry-After"}},
		{"default without Origin", simple(open, ""), 200, headers{"Access-Control-Allow-Origin": "", "Access-Control-Allow-Credentials": ""}},
		{"listed preflight", preflight(listed, dash), 204, headers{
			"Access-Control-Allow-Origin": dash, "Access-Control-Allow-Credentials": "true", "Vary": "Origin",
			"Access-Control-Allow-Methods": "GET, PATCH, DELETE", "Access-Control-Max-Age": "600"}},
		{"listed simple", simple(listed, dash), 200, headers{
			"Access-Control-Allow-Origin": dash, "Access-Control-Allow-Credentials": "true", "Vary": "Origin",
			"Access-Control-Expose-Headers": "Service-Operation-Id, Retry-After"}},
		{"unlisted preflight", preflight(listed, evil), 400, headers{
			"Access-Control-Allow-Origin": "", "Access-Control-Allow-Credentials": "", "Access-Control-Allow-Methods": "", "Vary": "Origin"}},
		{"unlisted simple", simple(listed, evil), 200, headers{"Access-Control-Allow-Origin": "", "Access-Control-Allow-Credentials": "", "Vary": "Origin"}},
		{"listed without Origin", simple(listed, ""), 200, headers{"Access-Control-Allow-Origin": "", "Vary": "Origin"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.r.status != tc.status {
				t.Errorf("status %d, want %d; body %s", tc.r.status, tc.status, tc.r.body)
			}
			for k, v := range tc.want {
				if got := strings.Join(tc.r.header.Values(k), ", "); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// The OpenAPI Error schema documents the bounds.
func TestOpenAPIErrorBounds(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	r := s.do("GET", "/openapi.json", "", "", "Service-Version", "")
	schema := r.json["components"].(map[string]any)["schemas"].(map[string]any)["Error"].(map[string]any)
	props := schema["properties"].(map[string]any)
	if got := props["violations"].(map[string]any)["maxItems"]; got != float64(httpapi.MaxViolations) {
		t.Errorf("violations maxItems %v, want %d", got, httpapi.MaxViolations)
	}
	if om, ok := props["violations_omitted"].(map[string]any); !ok || om["type"] != "integer" {
		t.Errorf("no integer violations_omitted in %v", props)
	}
}

// TestOpenAPIIDPatterns: every path parameter that names a resource has
// the pattern of that kind's IDs, derived from the Service's kinds table;
// only an event source's type has none.
func TestOpenAPIIDPatterns(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	r := s.do("GET", "/openapi.json", "", "", "Service-Version", "")
	want := map[string]string{
		"/credentials/{id} id":                                                  "^cr_[0-9A-Za-z]{27}$",
		"/edges/https/{edge_id}/routes/{id} edge_id":                            "^edghts_[0-9A-Za-z]{27}$",
		"/edges/https/{edge_id}/routes/{id} id":                                 "^edghtsrt_[0-9A-Za-z]{27}$",
		"/backends/tunnel_group/{id} id":                                        "^bkdtg_[0-9A-Za-z]{27}$",
		"/event_subscriptions/{subscription_id}/sources/{type} subscription_id": "^esb_[0-9A-Za-z]{27}$",
		"/event_subscriptions/{subscription_id}/sources/{type} type":            "",
	}
	seen := 0
	for path, item := range r.json["paths"].(map[string]any) {
		for _, op := range item.(map[string]any) {
			for _, p := range op.(map[string]any)["parameters"].([]any) {
				param := p.(map[string]any)
				if param["in"] != "path" {
					continue
				}
				pattern, _ := param["schema"].(map[string]any)["pattern"].(string)
				name := path + " " + param["name"].(string)
				if w, ok := want[name]; ok {
					seen++
					if pattern != w {
						t.Errorf("%s: pattern %q, want %q", name, pattern, w)
					}
				} else if pattern == "" && param["name"] != "type" {
					t.Errorf("%s has no ID pattern: its collection is not in the kinds table", name)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("none of the expected parameters was found")
	}
}
