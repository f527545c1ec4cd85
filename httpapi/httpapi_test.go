package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
	"github.com/google/go-cmp/cmp"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// server is an API server over a fresh memstore with two accounts.
type server struct {
	t      testing.TB
	srv    *httptest.Server
	svc    *edgeplane.Service
	store  store.Store
	clock  *clock
	keyA   string // admin of account A
	keyB   string // admin of account B
	logs   *bytes.Buffer
	client *http.Client
}

func newServer(t testing.TB, opts httpapi.Options) *server {
	t.Helper()
	return newServerWith(t, opts, events.Options{})
}

// newServerWith is newServer with the Service's event options ev; its
// Resolver is testHosts unless ev names one.
func newServerWith(t testing.TB, opts httpapi.Options, ev events.Options) *server {
	t.Helper()
	if ev.Resolver == nil {
		ev.Resolver = testHosts{}
	}
	s := &server{t: t, store: memstore.New(), clock: &clock{now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}, logs: new(bytes.Buffer)}
	s.svc = mustService(edgeplane.New(s.store, edgeplane.Options{BaseURL: "https://api.example.test", Clock: s.clock.Now, Events: ev}))
	s.keyA = s.adminKey("a")
	s.keyB = s.adminKey("b")
	if opts.Clock == nil {
		opts.Clock = s.clock.Now
	}
	opts.Logger = slog.New(slog.NewTextHandler(s.logs, nil))
	h, err := httpapi.New(s.svc, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewServer(h)
	t.Cleanup(s.srv.Close)
	s.client = s.srv.Client()
	return s
}

// testHosts resolves the host names of the tests' event destinations:
// example.com and every name under it is public (93.184.215.14, an
// address of the real example.com), private.example.net resolves only
// to private addresses, and any other name does not exist.
type testHosts struct{}

func (testHosts) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	switch {
	case host == "example.com" || strings.HasSuffix(host, ".example.com"):
		return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
	case host == "private.example.net":
		return []netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("fd00::5")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, Server: "10.53.0.1:53", IsNotFound: true}
}

func (s *server) adminKey(name string) string {
	ctx := context.Background()
	acct, err := s.svc.Host().CreateAccount(ctx, identity.AccountParams{Name: name})
	if err != nil {
		s.t.Fatal(err)
	}
	u, err := s.svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: name, Admin: true})
	if err != nil {
		s.t.Fatal(err)
	}
	k, err := s.svc.Host().CreateAPIKey(ctx, acct.ID, identity.CreateAPIKeyParams{OwnerID: u.ID})
	if err != nil {
		s.t.Fatal(err)
	}
	return *k.Token
}

type response struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

// do sends a request with the standard headers; hdr overrides them ("" deletes).
func (s *server) do(method, path, key, body string, hdr ...string) response {
	s.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.srv.URL+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Service-Version", "2")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode, header: resp.Header, body: b}
	if len(b) > 0 {
		json.Unmarshal(b, &out.json)
	}
	if resp.Header.Get("Service-Operation-Id") == "" {
		s.t.Errorf("%s %s: no Service-Operation-Id header", method, path)
	}
	checkContract(s.t, req, body, resp.StatusCode, resp.Header, b)
	return out
}

var (
	idPattern   = regexp.MustCompile(`\b(cr|ipp|ipr|ipx|op)_[0-9A-Za-z]{27}\b`)
	timePattern = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"`)
	tokenRe     = regexp.MustCompile(`"ept_[0-9A-Za-z]{27}_[A-Za-z0-9_-]{43}"`)
)

// normalise replaces ids, timestamps and tokens so bodies compare exactly.
func normalise(b []byte) any {
	s := idPattern.ReplaceAllString(string(b), "${1}_ID")
	s = timePattern.ReplaceAllString(s, `"TIME"`)
	s = tokenRe.ReplaceAllString(s, `"TOKEN"`)
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	return v
}

func wantJSON(t *testing.T, got response, status int, want string) {
	t.Helper()
	if got.status != status {
		t.Fatalf("status %d, want %d; body %s", got.status, status, got.body)
	}
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	if diff := cmp.Diff(w, normalise(got.body)); diff != "" {
		t.Errorf("body (-want +got):\n%s\nraw: %s", diff, got.body)
	}
}

func TestCredentialsEndToEnd(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	created := s.do("POST", "/credentials", s.keyA, `{"description":"laptop","metadata":"{\"k\":1}","acl":["bind:*.example.com"]}`)
	wantJSON(t, created, 201, `{
		"id": "cr_ID", "uri": "https://api.example.test/credentials/cr_ID", "created_at": "TIME",
		"description": "laptop", "metadata": "{\"k\":1}", "token": "TOKEN",
		"acl": ["bind:*.example.com"], "owner_id": "`+ownerPlaceholder(created)+`"}`)
	id := created.json["id"].(string)

	one := `{"id": "cr_ID", "uri": "https://api.example.test/credentials/cr_ID", "created_at": "TIME",
		"description": "laptop", "metadata": "{\"k\":1}", "token": null,
		"acl": ["bind:*.example.com"], "owner_id": "` + ownerPlaceholder(created) + `"}`
	wantJSON(t, s.do("GET", "/credentials/"+id, s.keyA, ""), 200, one)
	wantJSON(t, s.do("GET", "/credentials", s.keyA, ""), 200,
		`{"credentials": [`+one+`], "uri": "https://api.example.test/credentials", "next_page_uri": null}`)

	patched := s.do("PATCH", "/credentials/"+id, s.keyA, `{"description":"","metadata":null}`)
	wantJSON(t, patched, 200, strings.Replace(one, `"description": "laptop"`, `"description": ""`, 1))
	_ = patched

	del := s.do("DELETE", "/credentials/"+id, s.keyA, "")
	if del.status != 204 || len(del.body) != 0 {
		t.Errorf("delete: status %d body %q, want 204 and no body", del.status, del.body)
	}
	gone := s.do("GET", "/credentials/"+id, s.keyA, "")
	wantJSON(t, gone, 404, `{"error_code": "ERR_SERVICE_101", "status_code": 404,
		"msg": "credential cr_ID not found", "details": {"operation_id": "op_ID"}}`)
}

// ownerPlaceholder returns the owner_id as normalised (usr_ IDs are not
// replaced by normalise, so read it back).
func ownerPlaceholder(r response) string {
	owner, _ := r.json["owner_id"].(string)
	return owner
}

func TestPagingOverHTTP(t *testing.T) {
	s := newServer(t, httpapi.Options{RateLimit: -1})
	var want []string
	for range 7 {
		r := s.do("POST", "/ip_policies", s.keyA, `{}`)
		want = append([]string{r.json["id"].(string)}, want...)
	}
	var got []string
	path := "/ip_policies?limit=1"
	for path != "" {
		r := s.do("GET", path, s.keyA, "")
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		for _, it := range r.json["ip_policies"].([]any) {
			got = append(got, it.(map[string]any)["id"].(string))
		}
		next, _ := r.json["next_page_uri"].(string)
		path = strings.TrimPrefix(next, "https://api.example.test")
		if next != "" && !strings.HasPrefix(next, "https://api.example.test/ip_policies?before_id=") {
			t.Fatalf("next_page_uri %q is not absolute", next)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("walk with limit=1 (-want +got):\n%s", diff)
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=x", "before_id=nope"} {
		r := s.do("GET", "/ip_policies?"+q, s.keyA, "")
		if r.status != 400 || r.json["error_code"] != "ERR_SERVICE_100" {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
}

func TestBadInput(t *testing.T) {
	s := newServer(t, httpapi.Options{RateLimit: -1})
	tests := []struct {
		name   string
		method string
		path   string
		key    string
		body   string
		hdr    []string
		status int
		code   string
		field  string
		msg    string
	}{
		{name: "missing auth", method: "POST", path: "/credentials", body: `{}`, status: 401, code: "ERR_SERVICE_105", msg: "Authorization header is required"},
		{name: "not bearer", method: "POST", path: "/credentials", body: `{}`, hdr: []string{"Authorization", "Basic abc"}, status: 401, code: "ERR_SERVICE_105"},
		{name: "unknown key", method: "POST", path: "/credentials", key: "epk_nope", body: `{}`, status: 401, code: "ERR_SERVICE_105"},
		{name: "missing version", method: "POST", path: "/credentials", key: "A", body: `{}`, hdr: []string{"Service-Version", ""}, status: 400, code: "ERR_SERVICE_100", field: "Service-Version", msg: "supported versions: 2"},
		{name: "wrong version", method: "POST", path: "/credentials", key: "A", body: `{}`, hdr: []string{"Service-Version", "1"}, status: 400, code: "ERR_SERVICE_100", field: "Service-Version"},
		{name: "wrong content type", method: "POST", path: "/credentials", key: "A", body: `{}`, hdr: []string{"Content-Type", "text/plain"}, status: 415, code: "ERR_SERVICE_110"},
		{name: "oversize body", method: "POST", path: "/credentials", key: "A", body: `{"description":"` + strings.Repeat("a", 1<<20) + `"}`, status: 413, code: "ERR_SERVICE_109"},
		{name: "malformed JSON", method: "POST", path: "/credentials", key: "A", body: `{"description":`, status: 400, code: "ERR_SERVICE_100"},
		{name: "not an object", method: "POST", path: "/credentials", key: "A", body: `[1]`, status: 400, code: "ERR_SERVICE_100"},
		{name: "trailing data", method: "POST", path: "/credentials", key: "A", body: `{} {}`, status: 400, code: "ERR_SERVICE_100"},
		{name: "unknown field", method: "POST", path: "/credentials", key: "A", body: `{"descripton":"x"}`, status: 400, code: "ERR_SERVICE_100", field: "descripton"},
		{name: "wrong type", method: "POST", path: "/credentials", key: "A", body: `{"acl":"bind:x.com"}`, status: 400, code: "ERR_SERVICE_100", field: "acl"},
		{name: "description over 255 bytes", method: "POST", path: "/credentials", key: "A", body: `{"description":"` + strings.Repeat("é", 128) + `"}`, status: 400, code: "ERR_SERVICE_100", field: "description"},
		{name: "metadata over 4096 bytes", method: "POST", path: "/credentials", key: "A", body: `{"metadata":"` + strings.Repeat("m", 4097) + `"}`, status: 400, code: "ERR_SERVICE_100", field: "metadata"},
		{name: "invalid acl rule", method: "POST", path: "/credentials", key: "A", body: `{"acl":["bind:ok.com","nope"]}`, status: 400, code: "ERR_SERVICE_100", field: "acl[1]"},
		{name: "owner_id in update", method: "PATCH", path: "/credentials/cr_000000000000000000000000000", key: "A", body: `{"owner_id":"usr_x"}`, status: 400, code: "ERR_SERVICE_100", field: "owner_id"},
		{name: "invalid enum", method: "POST", path: "/ip_restrictions", key: "A", body: `{"type":"web","ip_policy_ids":["ipp_000000000000000000000000000"]}`, status: 400, code: "ERR_SERVICE_100", field: "type"},
		{name: "type in update", method: "PATCH", path: "/ip_restrictions/ipx_000000000000000000000000000", key: "A", body: `{"type":"api"}`, status: 400, code: "ERR_SERVICE_100", field: "type"},
		{name: "bad cidr", method: "POST", path: "/ip_policy_rules", key: "A", body: `{"cidr":"10.0.0.0/33","action":"allow","ip_policy_id":"ipp_000000000000000000000000000"}`, status: 400, code: "ERR_SERVICE_100", field: "cidr"},
		{name: "unknown path", method: "GET", path: "/nothing", key: "A", status: 404, code: "ERR_SERVICE_101"},
		{name: "wrong method", method: "PUT", path: "/credentials", key: "A", body: `{}`, status: 405, code: "ERR_SERVICE_108"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := tc.key
			if key == "A" {
				key = s.keyA
			}
			r := s.do(tc.method, tc.path, key, tc.body, tc.hdr...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d; body %s", r.status, tc.status, r.body)
			}
			if r.json["error_code"] != tc.code || r.json["status_code"] != float64(tc.status) {
				t.Errorf("error_code %v status_code %v, want %s %d", r.json["error_code"], r.json["status_code"], tc.code, tc.status)
			}
			details, _ := r.json["details"].(map[string]any)
			if op, _ := details["operation_id"].(string); op == "" || op != r.header.Get("Service-Operation-Id") {
				t.Errorf("details.operation_id %q does not match the header %q", op, r.header.Get("Service-Operation-Id"))
			}
			if msg, _ := r.json["msg"].(string); !strings.Contains(msg, tc.msg) || msg == "" {
				t.Errorf("msg %q does not contain %q", msg, tc.msg)
			}
			if tc.field != "" {
				found := false
				vs, _ := r.json["violations"].([]any)
				for _, v := range vs {
					if v.(map[string]any)["field"] == tc.field {
						found = true
					}
				}
				if !found {
					t.Errorf("no violation of %q in %s", tc.field, r.body)
				}
			}
			if tc.status == 405 && r.header.Get("Allow") != "POST, GET" {
				t.Errorf("Allow = %q, want %q", r.header.Get("Allow"), "POST, GET")
			}
		})
	}
	// Nothing was stored by any of them.
	for _, path := range []string{"/credentials", "/ip_restrictions", "/ip_policy_rules", "/ip_policies"} {
		r := s.do("GET", path, s.keyA, "")
		field := strings.TrimPrefix(path, "/")
		if items, _ := r.json[field].([]any); r.status != 200 || len(items) != 0 {
			t.Errorf("%s after bad requests: %d %s", path, r.status, r.body)
		}
	}
}

func TestCrossAccountIsolation(t *testing.T) {
	s := newServer(t, httpapi.Options{RateLimit: -1})
	pol := s.do("POST", "/ip_policies", s.keyA, `{"description":"a"}`).json["id"].(string)
	rule := s.do("POST", "/ip_policy_rules", s.keyA, `{"cidr":"10.0.0.0/8","action":"allow","ip_policy_id":"`+pol+`"}`).json["id"].(string)
	ipx := s.do("POST", "/ip_restrictions", s.keyA, `{"type":"api","ip_policy_ids":["`+pol+`"]}`).json["id"].(string)
	cred := s.do("POST", "/credentials", s.keyA, `{}`).json["id"].(string)
	for _, path := range []string{"/ip_policies/" + pol, "/ip_policy_rules/" + rule, "/ip_restrictions/" + ipx, "/credentials/" + cred} {
		for _, m := range []string{"GET", "PATCH", "DELETE"} {
			body := ""
			if m == "PATCH" {
				body = `{}`
			}
			if r := s.do(m, path, s.keyB, body); r.status != 404 {
				t.Errorf("B %s %s: %d %s", m, path, r.status, r.body)
			}
		}
		if r := s.do("GET", path, s.keyA, ""); r.status != 200 {
			t.Errorf("A lost %s: %d", path, r.status)
		}
	}
	for _, coll := range []string{"ip_policies", "ip_policy_rules", "ip_restrictions", "credentials"} {
		r := s.do("GET", "/"+coll, s.keyB, "")
		if items, _ := r.json[coll].([]any); len(items) != 0 {
			t.Errorf("B lists A's %s: %s", coll, r.body)
		}
	}
	// A referenced policy cannot be deleted: 409 naming the restriction.
	r := s.do("DELETE", "/ip_policies/"+pol, s.keyA, "")
	if r.status != 409 || !strings.Contains(r.json["msg"].(string), ipx) {
		t.Errorf("delete referenced policy: %d %s", r.status, r.body)
	}
}

func TestRateLimit(t *testing.T) {
	s := newServer(t, httpapi.Options{RateLimit: 3, RateWindow: time.Minute})
	for i := range 3 {
		if r := s.do("GET", "/credentials", s.keyA, ""); r.status != 200 {
			t.Fatalf("request %d: %d", i, r.status)
		}
	}
	r := s.do("GET", "/credentials", s.keyA, "")
	if r.status != 429 || r.json["error_code"] != "ERR_SERVICE_106" {
		t.Fatalf("4th request: %d %s", r.status, r.body)
	}
	ra, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 70 {
		t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
	}
	// Another account is not affected.
	if r := s.do("GET", "/credentials", s.keyB, ""); r.status != 200 {
		t.Errorf("account B limited by A's traffic: %d", r.status)
	}
	s.clock.Advance(time.Duration(ra) * time.Second)
	if r := s.do("GET", "/credentials", s.keyA, ""); r.status != 200 {
		t.Errorf("after Retry-After: %d %s", r.status, r.body)
	}
}

// failingStore fails reads with an error whose text must not reach clients.
type failingStore struct{ store.Store }

func (failingStore) List(context.Context, store.Query) ([]store.Record, error) {
	return nil, io.ErrClosedPipe
}

func TestInternalErrorIsGeneric(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	svc, err := edgeplane.New(failingStore{s.store}, edgeplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	logs := new(bytes.Buffer)
	h, err := httpapi.New(svc, httpapi.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/credentials", nil)
	req.Header.Set("Authorization", "Bearer "+s.keyA)
	req.Header.Set("Service-Version", "2")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "pipe") || !strings.Contains(rec.Body.String(), "ERR_SERVICE_107") {
		t.Errorf("internal error answer: %d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), "closed pipe") {
		t.Errorf("cause not logged: %s", logs)
	}
}

func TestOpenAPIMatchesRoutes(t *testing.T) {
	s := newServer(t, httpapi.Options{RateLimit: -1})
	r := s.do("GET", "/openapi.json", "", "", "Service-Version", "")
	if r.status != 200 || r.json["openapi"] != "3.1.0" {
		t.Fatalf("openapi.json: %d %.200s", r.status, r.body)
	}
	paths := r.json["paths"].(map[string]any)
	ops := 0
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			ops++
			if op.(map[string]any)["operationId"] == "" {
				t.Errorf("%s %s has no operationId", method, path)
			}
			concrete := regexp.MustCompile(`\{[a-z_]+\}`).ReplaceAllString(path, "x_000000000000000000000000000")
			body := ""
			if method == "post" || method == "patch" || method == "put" {
				body = "{}"
			}
			got := s.do(strings.ToUpper(method), concrete, s.keyA, body)
			if got.status == 405 || (got.status == 404 && strings.HasPrefix(got.json["msg"].(string), "no such path")) ||
				(got.status == 404 && got.json["msg"] == nil) {
				t.Errorf("documented %s %s is not routed: %d %s", method, path, got.status, got.body)
			}
		}
	}
	if ops < 20 {
		t.Errorf("document has %d operations", ops)
	}
	// A method not in the document is not routed either.
	if got := s.do("PUT", "/ip_policies", s.keyA, "{}"); got.status != 405 {
		t.Errorf("undocumented PUT /ip_policies: %d", got.status)
	}
}

func TestRequestLog(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	r := s.do("GET", "/credentials", s.keyA, "")
	op := r.header.Get("Service-Operation-Id")
	for _, want := range []string{"method=GET", "path=/credentials", "status=200", "operation_id=" + op, "duration="} {
		if !strings.Contains(s.logs.String(), want) {
			t.Errorf("request log lacks %q: %s", want, s.logs)
		}
	}
}

func BenchmarkCreateGetRoundTrip(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	svc, err := edgeplane.New(s.store, edgeplane.Options{})
	if err != nil {
		b.Fatal(err)
	}
	h, err := httpapi.New(svc, httpapi.Options{RateLimit: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/credentials", strings.NewReader(`{"description":"bench","acl":["bind:*.example.com"]}`))
		req.Header.Set("Authorization", "Bearer "+s.keyA)
		req.Header.Set("Service-Version", "2")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 201 {
			b.Fatal(rec.Code, rec.Body)
		}
		var c struct{ ID string }
		json.Unmarshal(rec.Body.Bytes(), &c)
		req = httptest.NewRequest("GET", "/credentials/"+c.ID, nil)
		req.Header.Set("Authorization", "Bearer "+s.keyA)
		req.Header.Set("Service-Version", "2")
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}

// Stored-only fields (tagged openapi:"-") are not in the document.
func TestOpenAPIOmitsStoredOnlyFields(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	r := s.do("GET", "/openapi.json", "", "", "Service-Version", "")
	schemas := r.json["components"].(map[string]any)["schemas"].(map[string]any)
	tp, ok := schemas["edges.TrafficPolicy"].(map[string]any)
	if !ok {
		t.Fatalf("no edges.TrafficPolicy schema; have %d schemas", len(schemas))
	}
	props := tp["properties"].(map[string]any)
	if _, leaked := props["ip_policy_ids"]; leaked {
		t.Error("edges.TrafficPolicy schema lists the stored-only ip_policy_ids")
	}
	if _, ok := props["value"]; !ok {
		t.Error("edges.TrafficPolicy schema lacks value")
	}
}

func TestRoute(t *testing.T) {
	h, err := httpapi.New(mustService(edgeplane.New(memstore.New(), edgeplane.Options{})), httpapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/credentials/cr_0000000000000000000000000000": "GET /credentials/{id}",
		"/credentials":   "GET /credentials",
		"/no/such/thing": "/",
	} {
		r := httptest.NewRequest("GET", path, nil)
		if got := h.Route(r); got != want {
			t.Errorf("Route(%s) = %q, want %q", path, got, want)
		}
	}
}

// TestObserve shows that Options.Observe is told of every request once,
// after its answer: the route pattern it matched (also when it was refused
// before routing: the pattern its path and method match), its method, its
// status and the duration the request log reports.
func TestObserve(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []httpapi.Served
		tick = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	)
	s := newServer(t, httpapi.Options{RateLimit: -1,
		Clock: func() time.Time { // every reading is a millisecond after the last
			mu.Lock()
			defer mu.Unlock()
			tick = tick.Add(time.Millisecond)
			return tick
		},
		Observe: func(sv httpapi.Served) { mu.Lock(); seen = append(seen, sv); mu.Unlock() },
	})
	created := s.do("POST", "/credentials", s.keyA, `{"description":"observed"}`)
	id, _ := created.json["id"].(string)
	cases := []struct {
		method, path, key string
		hdr               []string
		want              httpapi.Served
	}{
		{"GET", "/credentials/" + id, s.keyA, nil, httpapi.Served{Route: "GET /credentials/{id}", Method: "GET", Status: 200}},
		{"GET", "/credentials", s.keyA, []string{"Service-Version", ""}, httpapi.Served{Route: "GET /credentials", Method: "GET", Status: 400}},
		{"GET", "/credentials/" + id, "", nil, httpapi.Served{Route: "GET /credentials/{id}", Method: "GET", Status: 401}},
		{"BREW", "/credentials", s.keyA, nil, httpapi.Served{Route: "/credentials", Method: "BREW", Status: 405}},
		{"GET", "/no/such/path", s.keyA, nil, httpapi.Served{Route: "/", Method: "GET", Status: 404}},
		{"DELETE", "/credentials/" + id, s.keyA, nil, httpapi.Served{Route: "DELETE /credentials/{id}", Method: "DELETE", Status: 204}},
	}
	for _, c := range cases {
		mu.Lock()
		seen = nil
		mu.Unlock()
		s.logs.Reset()
		r := s.do(c.method, c.path, c.key, "", c.hdr...)
		mu.Lock()
		got := slices.Clone(seen)
		mu.Unlock()
		if r.status != c.want.Status || len(got) != 1 {
			t.Errorf("%s %s: status %d, observed %+v", c.method, c.path, r.status, got)
			continue
		}
		if got[0].Duration <= 0 || !strings.Contains(s.logs.String(), "duration="+got[0].Duration.String()+" ") {
			t.Errorf("%s %s: observed duration %v, logged: %s", c.method, c.path, got[0].Duration, s.logs)
		}
		got[0].Duration = 0
		if got[0] != c.want {
			t.Errorf("%s %s: observed %+v, want %+v", c.method, c.path, got[0], c.want)
		}
	}
	// Served through a host's mux, which sets the request's Pattern to
	// its own ("/"): a request refused before routing still gets the
	// API's route.
	h, err := httpapi.New(s.svc, httpapi.Options{Observe: func(sv httpapi.Served) { mu.Lock(); seen = append(seen, sv); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	host := http.NewServeMux()
	host.Handle("/", h)
	for _, version := range []string{"", "2"} {
		seen = nil
		req := httptest.NewRequest("GET", "/credentials", nil)
		req.Header.Set("Authorization", "Bearer "+s.keyA)
		req.Header.Set("Service-Version", version)
		host.ServeHTTP(httptest.NewRecorder(), req)
		if len(seen) != 1 || seen[0].Route != "GET /credentials" {
			t.Errorf("through a host's mux, Service-Version %q: observed %+v", version, seen)
		}
	}
}
