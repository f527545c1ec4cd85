package httpapi_test

// Helpers of the end-to-end tests (e2e_*_test.go): exact JSON
// expectations built from SPEC.md and the packages' documented decisions,
// error-body checks, list walks, store snapshots and generated TLS
// certificates. Every request goes through the httptest.Server of
// newServer with a plain net/http client.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/google/go-cmp/cmp"
)

const (
	// base is the {base_url} of newServer.
	base = "https://api.example.test"
	// t0 is the time of newServer's clock, as every created_at shows it
	// (RFC 3339, UTC, whole seconds).
	t0 = "2026-11-21T12:00:00Z"
)

// newE2E returns a server without the management API's own rate limit:
// the end-to-end tests make many requests.
func newE2E(t *testing.T) *server {
	t.Helper()
	return newServer(t, httpapi.Options{RateLimit: -1})
}

// call sends a request through s on behalf of t (so that subtests report
// failures on themselves).
func call(t *testing.T, s *server, method, path, key, body string, hdr ...string) response {
	t.Helper()
	c := *s
	c.t = t
	return c.do(method, path, key, body, hdr...)
}

// fill replaces {{name}} placeholders of want: fill(w, "id", id, ...).
func fill(want string, kv ...string) string {
	pairs := make([]string, 0, len(kv))
	for i := 0; i+1 < len(kv); i += 2 {
		pairs = append(pairs, "{{"+kv[i]+"}}", kv[i+1])
	}
	return strings.NewReplacer(pairs...).Replace(want)
}

// exact checks the status and that the body is exactly the JSON want
// (after fill), compared with go-cmp; responses with a body must be
// application/json.
func exact(t *testing.T, got response, status int, want string, kv ...string) {
	t.Helper()
	if got.status != status {
		t.Fatalf("status %d, want %d; body %s", got.status, status, got.body)
	}
	if ct := got.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var w, g any
	if err := json.Unmarshal([]byte(fill(want, kv...)), &w); err != nil {
		t.Fatalf("bad want JSON %v: %s", err, fill(want, kv...))
	}
	if err := json.Unmarshal(got.body, &g); err != nil {
		t.Fatalf("response is not JSON: %v: %s", err, got.body)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("body (-want +got):\n%s\nraw: %s", diff, got.body)
	}
}

// noContent checks a 204 answer with no body at all.
func noContent(t *testing.T, got response) {
	t.Helper()
	if got.status != 204 || len(got.body) != 0 {
		t.Errorf("status %d body %q, want 204 and no body", got.status, got.body)
	}
}

// wantID checks that v is an identifier: prefix followed by 27 base62
// characters (SPEC 2.1 and the root package's documentation). It returns
// the identifier.
func wantID(t *testing.T, v any, prefix string) string {
	t.Helper()
	s, _ := v.(string)
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `[0-9A-Za-z]{27}$`).MatchString(s) {
		t.Fatalf("identifier %v, want %s followed by 27 base62 characters", v, prefix)
	}
	return s
}

// create POSTs body to path, requires 201 and returns the new resource's
// id, checked against prefix.
func create(t *testing.T, s *server, key, path, body, prefix string) string {
	t.Helper()
	r := call(t, s, "POST", path, key, body)
	if r.status != 201 {
		t.Fatalf("POST %s %s: %d %s", path, body, r.status, r.body)
	}
	return wantID(t, r.json["id"], prefix)
}

// apiError is what checkError expects of an error answer.
type apiError struct {
	status int
	code   string   // ERR_SERVICE_<n>
	fields []string // exactly the violation fields, in any order; nil: no violations
	msg    []string // substrings of msg
}

// Error codes as the httpapi package documents them.
const (
	errInvalid     = "ERR_SERVICE_100"
	errNotFound    = "ERR_SERVICE_101"
	errConflict    = "ERR_SERVICE_102"
	errUnauth      = "ERR_SERVICE_105"
	errMethod      = "ERR_SERVICE_108"
	errTooLarge    = "ERR_SERVICE_109"
	errUnsupported = "ERR_SERVICE_110"
)

// checkError checks the documented error body: exactly error_code,
// status_code, msg, details.operation_id (the Service-Operation-Id
// header) and, only when there are some, violations of {field, reason}
// (and violations_omitted only beyond httpapi.MaxViolations of them).
func checkError(t *testing.T, got response, want apiError) {
	t.Helper()
	if got.status != want.status {
		t.Fatalf("status %d, want %d; body %s", got.status, want.status, got.body)
	}
	var body struct {
		ErrorCode  *string `json:"error_code"`
		StatusCode *int    `json:"status_code"`
		Msg        *string `json:"msg"`
		Details    *struct {
			OperationID string `json:"operation_id"`
		} `json:"details"`
		Violations []struct {
			Field  *string `json:"field"`
			Reason string  `json:"reason"`
		} `json:"violations"`
		ViolationsOmitted *int `json:"violations_omitted"`
	}
	dec := json.NewDecoder(bytes.NewReader(got.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("error body does not have the documented shape (%v): %s", err, got.body)
	}
	if body.ErrorCode == nil || *body.ErrorCode != want.code || body.StatusCode == nil || *body.StatusCode != want.status {
		t.Errorf("error_code/status_code of %s, want %s %d", got.body, want.code, want.status)
	}
	if body.Msg == nil || *body.Msg == "" {
		t.Errorf("no msg in %s", got.body)
	} else {
		for _, m := range want.msg {
			if !strings.Contains(*body.Msg, m) {
				t.Errorf("msg %q does not contain %q", *body.Msg, m)
			}
		}
	}
	if body.Details == nil || body.Details.OperationID == "" || body.Details.OperationID != got.header.Get("Service-Operation-Id") {
		t.Errorf("details.operation_id of %s does not match the Service-Operation-Id header %q", got.body, got.header.Get("Service-Operation-Id"))
	}
	if bytes.Contains(got.body, []byte(`"violations"`)) && len(body.Violations) == 0 {
		t.Errorf("violations present but empty: %s", got.body)
	}
	if o := body.ViolationsOmitted; o != nil && (*o < 1 || len(body.Violations) != httpapi.MaxViolations) {
		t.Errorf("violations_omitted %d with %d violations listed, want it only beyond %d: %.500s", *o, len(body.Violations), httpapi.MaxViolations, got.body)
	}
	var fields []string
	for _, v := range body.Violations {
		if v.Field == nil || v.Reason == "" {
			t.Errorf("violation without field or reason: %s", got.body)
			continue
		}
		fields = append(fields, *v.Field)
	}
	wantFields := slices.Clone(want.fields)
	sort.Strings(fields)
	sort.Strings(wantFields)
	if !slices.Equal(fields, wantFields) {
		t.Errorf("violation fields %q, want %q; body %s", fields, wantFields, got.body)
	}
}

// walk follows a list from path with limit=1 and returns the ids in the
// order visited; every page must be {field: [one item], uri, next_page_uri}
// with an absolute next_page_uri (null on the last page) and uri the
// collection's absolute URI.
func walk(t *testing.T, s *server, key, path, field string) []string {
	t.Helper()
	var ids []string
	next := path + "?limit=1"
	for pages := 0; next != ""; pages++ {
		if pages > 1000 {
			t.Fatalf("walk of %s does not end", path)
		}
		r := call(t, s, "GET", next, key, "")
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", next, r.status, r.body)
		}
		keys := make([]string, 0, len(r.json))
		for k := range r.json {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if want := sorted(field, "next_page_uri", "uri"); !slices.Equal(keys, want) {
			t.Fatalf("GET %s: keys %q, want %q", next, keys, want)
		}
		if r.json["uri"] != base+path {
			t.Errorf("GET %s: uri %v, want %s", next, r.json["uri"], base+path)
		}
		items, ok := r.json[field].([]any)
		if !ok {
			t.Fatalf("GET %s: %s is not a list: %s", next, field, r.body)
		}
		if len(items) > 1 {
			t.Fatalf("GET %s: %d items with limit=1", next, len(items))
		}
		for _, it := range items {
			ids = append(ids, it.(map[string]any)["id"].(string))
		}
		switch n := r.json["next_page_uri"].(type) {
		case nil:
			next = ""
		case string:
			if !strings.HasPrefix(n, base+path+"?") {
				t.Fatalf("next_page_uri %q is not an absolute URI of %s", n, path)
			}
			if len(items) == 0 {
				t.Fatalf("GET %s: empty page with a next page", next)
			}
			next = strings.TrimPrefix(n, base)
		default:
			t.Fatalf("next_page_uri %v is neither a string nor null", n)
		}
	}
	return ids
}

func sorted(s ...string) []string {
	sort.Strings(s)
	return s
}

// listIDs returns the ids of the first page of a list.
func listIDs(t *testing.T, s *server, key, path, field string) []string {
	t.Helper()
	r := call(t, s, "GET", path, key, "")
	if r.status != 200 {
		t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	items, ok := r.json[field].([]any)
	if !ok {
		t.Fatalf("GET %s: no list %s: %s", path, field, r.body)
	}
	out := []string{}
	for _, it := range items {
		out = append(out, it.(map[string]any)["id"].(string))
	}
	return out
}

// collections are the list routes of the API that take no path value,
// with their list fields, as the route table has them, but for
// uncollectedLists.
var collections = listRoutes()

// uncollectedLists are the lists the tests that walk collections leave
// out: the account's own identity (API keys and bot users: the tests'
// keys and subjects always fill them) and tunnels (registered by tunnel
// servers, never through the API).
var uncollectedLists = map[string]bool{"/api_keys": true, "/bot_users": true, "/tunnels": true}

// listRoutes derives collections from the route table.
func listRoutes() []struct{ path, field string } {
	h, err := httpapi.New(mustService(edgeplane.New(memstore.New(), edgeplane.Options{})), httpapi.Options{})
	if err != nil {
		panic(err)
	}
	var out []struct{ path, field string }
	for pattern, field := range httpapi.FilteredLists(h) {
		if !strings.Contains(pattern, "{") && !uncollectedLists[pattern] {
			out = append(out, struct{ path, field string }{pattern, field})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// snapshot returns everything the account of key can read: every list
// (edges and routes carry their modules), the routes of every HTTPS edge
// and the sources of every subscription. Two equal snapshots mean the
// store did not change for that account.
func snapshot(t *testing.T, s *server, key string) string {
	t.Helper()
	return snapshotFrom(t, s, key)
}

// snapshotFrom is snapshot with the headers hdr on its requests (as
// call takes them).
func snapshotFrom(t *testing.T, s *server, key string, hdr ...string) string {
	t.Helper()
	var b strings.Builder
	get := func(path string) map[string]any {
		r := call(t, s, "GET", path, key, "", hdr...)
		if r.status != 200 {
			t.Fatalf("snapshot: GET %s: %d %s", path, r.status, r.body)
		}
		b.WriteString(path + " " + string(r.body) + "\n")
		return r.json
	}
	for _, c := range collections {
		page := get(c.path)
		items, _ := page[c.field].([]any)
		for _, it := range items {
			id, _ := it.(map[string]any)["id"].(string)
			switch c.path {
			case "/edges/https":
				get(c.path + "/" + id + "/routes")
			case "/event_subscriptions":
				get(c.path + "/" + id + "/sources")
			}
		}
	}
	return b.String()
}

// unchanged fails when the account's store differs from before.
func unchanged(t *testing.T, s *server, key, before string) {
	t.Helper()
	if after := snapshot(t, s, key); after != before {
		t.Errorf("the store changed:\n%s", cmp.Diff(before, after))
	}
}

// Certificate validity around newServer's clock.
var (
	certNotBefore = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	certNotAfter  = time.Date(2027, 1, 30, 0, 0, 0, 0, time.UTC)
)

// genCert returns a self-signed ECDSA certificate for names and its PKCS
// #8 private key, both PEM.
func genCert(t *testing.T, names ...string) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(0x5eed),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    certNotBefore,
		NotAfter:     certNotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}))
}

// uploadCert uploads a generated certificate for names through POST
// /tls_certificates and returns its id.
func uploadCert(t *testing.T, s *server, key string, names ...string) string {
	t.Helper()
	certPEM, keyPEM := genCert(t, names...)
	body, _ := json.Marshal(map[string]string{"certificate_pem": certPEM, "private_key_pem": keyPEM})
	return create(t, s, key, "/tls_certificates", string(body), "cert_")
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// fixture is one resource of every kind in an account, with every module
// set, one event source, one tunnel session of the credential and one
// endpoint its agent bound on the reserved domain.
type fixture struct {
	edgeSet
	cred, pol, rule, ipx, cert, ec, rd, bk, sub string
	dest                                        string // the event destination the subscription sends to
	source                                      string // type of the subscription's source
	session                                     string // opened through the Service's Host, as a tunnel server does
	endpoint                                    string // bound in the session through the Host: https://<name>.example.com
}

// newFixture creates a fixture; name makes its reserved domain unique
// ("<name>.example.com").
func newFixture(t *testing.T, s *server, key, name string) fixture {
	t.Helper()
	f := fixture{edgeSet: newEdges(t, s, key), source: "ip_policy_created.v0"}
	cred := call(t, s, "POST", "/credentials", key, `{"description":"agent"}`)
	if cred.status != 201 {
		t.Fatalf("POST /credentials: %d %s", cred.status, cred.body)
	}
	f.cred = wantID(t, cred.json["id"], "cr_")
	f.session = openSession(t, s, cred.json["token"].(string))
	f.pol = create(t, s, key, "/ip_policies", `{"description":"office"}`, "ipp_")
	f.rule = create(t, s, key, "/ip_policy_rules", `{"cidr":"10.0.0.0/8","action":"allow","ip_policy_id":"`+f.pol+`"}`, "ipr_")
	f.ipx = create(t, s, key, "/ip_restrictions", `{"type":"api","ip_policy_ids":["`+f.pol+`"]}`, "ipx_")
	domain := name + ".example.com"
	f.cert = uploadCert(t, s, key, domain)
	f.ec = create(t, s, key, "/endpoint_configurations", `{"type":"https"}`, "ec_")
	f.rd = create(t, s, key, "/reserved_domains", `{"domain":"`+domain+`","certificate_id":"`+f.cert+`"}`, "rd_")
	if r := call(t, s, "PATCH", "/reserved_domains/"+f.rd, key, `{"https_endpoint_configuration_id":"`+f.ec+`"}`); r.status != 200 {
		t.Fatalf("attach endpoint configuration: %d %s", r.status, r.body)
	}
	f.endpoint = bindEndpoint(t, s, key, f.session, domain)
	f.bk = create(t, s, key, "/backends/tunnel_group", `{"labels":{"app":"web"}}`, "bkdtg_")
	f.dest = create(t, s, key, "/event_destinations", `{"target":{"http":{"url":"https://hooks.example.com/edgeplane"}}}`, "ed_")
	f.sub = create(t, s, key, "/event_subscriptions", `{"destination_ids":["`+f.dest+`"]}`, "esb_")
	if r := call(t, s, "POST", "/event_subscriptions/"+f.sub+"/sources", key, `{"type":"`+f.source+`"}`); r.status != 201 {
		t.Fatalf("add source: %d %s", r.status, r.body)
	}
	for path, body := range f.moduleBodies() {
		if r := call(t, s, "PUT", path, key, body); r.status != 200 {
			t.Fatalf("PUT %s: %d %s", path, r.status, r.body)
		}
	}
	return f
}

// openSession opens a tunnel session with the authtoken token through
// the Service's Host, as a tunnel server does when an agent connects, and
// returns its id.
func openSession(t *testing.T, s *server, token string) string {
	t.Helper()
	node, err := s.svc.Host().Tunnels().RegisterNode(context.Background(), agents.NodeParams{Region: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := s.svc.Host().Tunnels().OpenTunnelSession(context.Background(), token, agents.SessionParams{
		AgentVersion: "3.18.4", OS: "linux/amd64", IP: netip.MustParseAddr("203.0.113.7"), Region: "eu", ClientType: "library/official/go",
		Node: node.ID})
	if err != nil {
		t.Fatal(err)
	}
	return wantID(t, ts.ID, "ts_")
}

// bindEndpoint binds an https endpoint on domain in the tunnel session
// sessionID of the account of key through the Service's Host, as a
// tunnel server does for an agent's Bind, and returns its id.
func bindEndpoint(t *testing.T, s *server, key, sessionID, domain string) string {
	t.Helper()
	ctx := context.Background()
	p, err := s.svc.Authenticate(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := s.svc.Host().Tunnels().BindEndpoint(ctx, p.AccountID, sessionID, agents.EndpointParams{Proto: "https", Domain: domain,
		ForwardsTo: "http://localhost:3000", Metadata: `{"app":"web"}`, Description: "the web app"})
	if err != nil {
		t.Fatal(err)
	}
	return wantID(t, ep.ID, "ep_")
}

// moduleBodies returns a valid PUT body for each of the fixture's nine
// module paths.
func (f fixture) moduleBodies() map[string]string {
	return map[string]string{
		f.routePath("oidc"):             `{"issuer":"https://idp.example.com","client_id":"app","client_secret":"s"}`,
		f.routePath("backend"):          `{"backend_id":"` + f.bk + `"}`,
		f.routePath("response_headers"): `{"add":{"X-A":"1"}}`,
		f.routePath("compression"):      `{}`,
		f.tlsPath("ip_restriction"):     `{"ip_policy_ids":["` + f.pol + `"]}`,
		f.tlsPath("traffic_policy"):     `{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"log\"}]}]}"}`,
		f.tlsPath("tls_termination"):    `{"terminate_at":"edge"}`,
		f.tcpPath("ip_restriction"):     `{"ip_policy_ids":["` + f.pol + `"]}`,
		f.tcpPath("backend"):            `{"backend_id":"` + f.bk + `"}`,
	}
}
