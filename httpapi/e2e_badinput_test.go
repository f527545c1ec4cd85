package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// with returns the JSON object body with the fields of kv (name, value,
// ...) set.
func with(body string, kv ...any) string {
	m := map[string]any{}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		panic(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// writeOp is an operation with a request body and a body it would accept.
type writeOp struct {
	method, path, valid string
	described           bool // has description (255 bytes) and metadata (4096 bytes)
}

func (o writeOp) String() string { return o.method + " " + o.path }

// writeOps returns every operation with a request body, each with a
// valid body that would change the store.
func writeOps(t *testing.T, f fixture) []writeOp {
	certPEM, keyPEM := genCert(t, "bad.example.com")
	routes := "/edges/https/" + f.https + "/routes"
	ops := []writeOp{
		{"POST", "/credentials", `{"acl":["bind:x.example.com"]}`, true},
		{"PATCH", "/credentials/" + f.cred, `{"acl":["bind:y.example.com"]}`, true},
		{"POST", "/ip_policies", `{}`, true},
		{"PATCH", "/ip_policies/" + f.pol, `{"description":"changed"}`, true},
		{"POST", "/ip_policy_rules", `{"cidr":"192.0.2.0/24","action":"deny","ip_policy_id":"` + f.pol + `"}`, true},
		{"PATCH", "/ip_policy_rules/" + f.rule, `{"action":"deny"}`, true},
		{"POST", "/ip_restrictions", `{"type":"agent","enforced":true,"ip_policy_ids":["` + f.pol + `"]}`, true},
		{"PATCH", "/ip_restrictions/" + f.ipx, `{"enforced":true}`, true},
		{"POST", "/reserved_domains", `{"domain":"new.example.com","region":"us"}`, true},
		{"PATCH", "/reserved_domains/" + f.rd, `{"certificate_management_policy":{"authority":"letsencrypt"}}`, true},
		{"POST", "/tls_certificates", with(`{}`, "certificate_pem", certPEM, "private_key_pem", keyPEM), true},
		{"PATCH", "/tls_certificates/" + f.cert, `{"description":"changed"}`, true},
		{"POST", "/endpoint_configurations", `{"type":"http"}`, true},
		{"PATCH", "/endpoint_configurations/" + f.ec, `{"description":"changed"}`, true},
		{"POST", "/backends/tunnel_group", `{"labels":{"app":"api"}}`, true},
		{"PATCH", "/backends/tunnel_group/" + f.bk, `{"labels":{"app":"api"}}`, true},
		{"POST", "/edges/https", `{}`, true},
		{"PATCH", "/edges/https/" + f.https, `{"description":"changed"}`, true},
		{"POST", routes, `{"match_type":"exact_path","match":"/new"}`, true},
		{"PATCH", routes + "/" + f.route, `{"match":"/changed"}`, true},
		{"POST", "/edges/tls", `{}`, true},
		{"PATCH", "/edges/tls/" + f.tls, `{"description":"changed"}`, true},
		{"POST", "/edges/tcp", `{}`, true},
		{"PATCH", "/edges/tcp/" + f.tcp, `{"description":"changed"}`, true},
		{"POST", "/event_subscriptions", `{}`, true},
		{"PATCH", "/event_subscriptions/" + f.sub, `{"description":"changed"}`, true},
		{"POST", "/event_subscriptions/" + f.sub + "/sources", `{"type":"ip_policy_deleted.v0"}`, false},
		{"PATCH", "/event_subscriptions/" + f.sub + "/sources/" + f.source, `{}`, false},
	}
	// Module replacements, each with a body unlike the one it holds.
	other := map[string]string{
		f.routePath("oidc"):             `{"issuer":"https://other.example.com","client_id":"b","client_secret":"c"}`,
		f.routePath("backend"):          `{"enabled":false,"backend_id":"` + f.bk + `"}`,
		f.routePath("response_headers"): `{"remove":["Server"]}`,
		f.routePath("compression"):      `{"enabled":false}`,
		f.tlsPath("ip_restriction"):     `{"enabled":false,"ip_policy_ids":["` + f.pol + `"]}`,
		f.tlsPath("traffic_policy"):     `{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"deny\"}]}]}"}`,
		f.tlsPath("tls_termination"):    `{"terminate_at":"edge","min_version":"1.3"}`,
		f.tcpPath("ip_restriction"):     `{"enabled":false,"ip_policy_ids":["` + f.pol + `"]}`,
		f.tcpPath("backend"):            `{"enabled":false,"backend_id":"` + f.bk + `"}`,
	}
	for _, path := range f.modulePaths() {
		ops = append(ops, writeOp{"PUT", path, other[path], false})
	}
	return ops
}

// badCase is one bad request and the error it must get.
type badCase struct {
	name   string
	method string
	path   string
	key    string // "" sends no Authorization header
	body   string
	hdr    []string
	want   apiError
}

var (
	over255  = strings.Repeat("é", 128) // 256 bytes, 128 characters
	over4096 = strings.Repeat("m", 4097)
)

// Bad input (issue 7): missing auth, bad key, missing or wrong version
// header, wrong content type, oversize body, malformed JSON, unknown
// fields, wrong types, every field over its limit and every invalid enum,
// on every operation with a body. Each gets the documented status and
// error body, and the account's store is unchanged afterwards.
func TestE2EBadInput(t *testing.T) {
	s := newE2E(t)
	f := newFixture(t, s, s.keyA, "fixture")
	var cases []badCase
	add := func(name, method, path, body string, want apiError, hdr ...string) {
		cases = append(cases, badCase{name: name, method: method, path: path, key: s.keyA, body: body, hdr: hdr, want: want})
	}
	invalid := func(fields ...string) apiError { return apiError{status: 400, code: errInvalid, fields: fields} }

	for _, op := range writeOps(t, f) {
		n := op.String() + ": "
		cases = append(cases,
			badCase{name: n + "missing auth", method: op.method, path: op.path, body: op.valid,
				want: apiError{status: 401, code: errUnauth, msg: []string{"Authorization"}}},
			badCase{name: n + "unknown key", method: op.method, path: op.path, key: "epk_" + strings.Repeat("x", 43), body: op.valid,
				want: apiError{status: 401, code: errUnauth}},
			badCase{name: n + "not bearer", method: op.method, path: op.path, body: op.valid, hdr: []string{"Authorization", "Basic " + s.keyA},
				want: apiError{status: 401, code: errUnauth}},
		)
		add(n+"missing version", op.method, op.path, op.valid, apiError{status: 400, code: errInvalid, fields: []string{"Service-Version"}}, "Service-Version", "")
		add(n+"wrong version", op.method, op.path, op.valid, apiError{status: 400, code: errInvalid, fields: []string{"Service-Version"}}, "Service-Version", "1")
		add(n+"wrong content type", op.method, op.path, op.valid, apiError{status: 415, code: errUnsupported}, "Content-Type", "text/plain")
		add(n+"form content type", op.method, op.path, op.valid, apiError{status: 415, code: errUnsupported}, "Content-Type", "application/x-www-form-urlencoded")
		add(n+"no content type", op.method, op.path, op.valid, apiError{status: 415, code: errUnsupported}, "Content-Type", "")
		add(n+"oversize body", op.method, op.path, `{"description":"`+strings.Repeat("a", 1<<20)+`"}`, apiError{status: 413, code: errTooLarge})
		add(n+"malformed JSON", op.method, op.path, `{"description":`, apiError{status: 400, code: errInvalid})
		add(n+"invalid JSON", op.method, op.path, `{description: "x"}`, apiError{status: 400, code: errInvalid})
		add(n+"not an object", op.method, op.path, `["x"]`, apiError{status: 400, code: errInvalid})
		add(n+"trailing data", op.method, op.path, op.valid+`{}`, apiError{status: 400, code: errInvalid})
		add(n+"unknown field", op.method, op.path, with(op.valid, "bogus", 1), invalid("bogus"))
		if op.described {
			add(n+"description over 255 bytes", op.method, op.path, with(op.valid, "description", over255), invalid("description"))
			add(n+"metadata over 4096 bytes", op.method, op.path, with(op.valid, "metadata", over4096), invalid("metadata"))
			add(n+"description not a string", op.method, op.path, with(op.valid, "description", 7), invalid("description"))
		}
	}

	// Limits and enums of each resource.
	routes := "/edges/https/" + f.https + "/routes"
	pol := f.pol
	labels33 := map[string]string{}
	for i := range 33 {
		labels33[fmt.Sprintf("k%d", i)] = "v"
	}
	acl101 := make([]string, 101)
	for i := range acl101 {
		acl101[i] = fmt.Sprintf("bind:h%d.example.com", i)
	}
	ids101 := make([]string, 101)
	for i := range ids101 {
		ids101[i] = fmt.Sprintf("ipp_%027d", i)
	}
	headers101 := map[string]string{}
	names101 := make([]string, 101)
	for i := range 101 {
		headers101[fmt.Sprintf("X-H%d", i)] = "v"
		names101[i] = fmt.Sprintf("X-H%d", i)
	}
	scopes101 := make([]string, 101)
	for i := range scopes101 {
		scopes101[i] = fmt.Sprintf("s%d", i)
	}
	oidc := `{"issuer":"https://idp.example.com","client_id":"app","client_secret":"s"}`
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, c := range []struct {
		name, method, path, body string
		fields                   []string
	}{
		// Credentials.
		{"acl over 100 rules", "POST", "/credentials", with(`{}`, "acl", acl101), []string{"acl"}},
		{"acl rule over 512 bytes", "POST", "/credentials", with(`{}`, "acl", []string{"bind:" + long(508) + ".com"}), []string{"acl[0]"}},
		{"acl rule kind", "PATCH", "/credentials/" + f.cred, `{"acl":["connect:x.example.com"]}`, []string{"acl[0]"}},
		{"owner_id not a subject", "POST", "/credentials", `{"owner_id":"cr_000000000000000000000000000"}`, []string{"owner_id"}},
		// IP policy rules.
		{"rule action enum", "POST", "/ip_policy_rules", `{"cidr":"10.0.0.0/8","action":"permit","ip_policy_id":"` + pol + `"}`, []string{"action"}},
		{"rule action enum on update", "PATCH", "/ip_policy_rules/" + f.rule, `{"action":"ALLOW"}`, []string{"action"}},
		{"rule cidr", "PATCH", "/ip_policy_rules/" + f.rule, `{"cidr":"10.0.0.0/33"}`, []string{"cidr"}},
		// IP restrictions.
		{"restriction type enum", "POST", "/ip_restrictions", `{"type":"web","ip_policy_ids":["` + pol + `"]}`, []string{"type"}},
		{"restriction type required", "POST", "/ip_restrictions", `{"ip_policy_ids":["` + pol + `"]}`, []string{"type"}},
		{"restriction over 100 policies", "POST", "/ip_restrictions", with(`{"type":"api"}`, "ip_policy_ids", ids101), []string{"ip_policy_ids"}},
		{"restriction over 100 policies on update", "PATCH", "/ip_restrictions/" + f.ipx, with(`{}`, "ip_policy_ids", ids101), []string{"ip_policy_ids"}},
		{"restriction enforced not a boolean", "PATCH", "/ip_restrictions/" + f.ipx, `{"enforced":"true"}`, []string{"enforced"}},
		// Reserved domains.
		{"region enum", "POST", "/reserved_domains", `{"domain":"r.example.com","region":"mars"}`, []string{"region"}},
		{"authority enum", "POST", "/reserved_domains", `{"domain":"r.example.com","certificate_management_policy":{"authority":"acme"}}`, []string{"certificate_management_policy.authority"}},
		{"private key type enum", "PATCH", "/reserved_domains/" + f.rd, `{"certificate_management_policy":{"authority":"letsencrypt","private_key_type":"RSA"}}`, []string{"certificate_management_policy.private_key_type"}},
		{"domain over 253 bytes", "POST", "/reserved_domains", `{"domain":"` + strings.Repeat(long(63)+".", 4) + `com"}`, []string{"domain"}},
		// TLS certificates.
		{"certificate_pem over 64 KiB", "POST", "/tls_certificates", with(`{"private_key_pem":"k"}`, "certificate_pem", long(64<<10+1)), []string{"certificate_pem"}},
		{"private_key_pem over 16 KiB", "POST", "/tls_certificates", with(`{"certificate_pem":"c"}`, "private_key_pem", long(16<<10+1)), []string{"private_key_pem"}},
		// Endpoint configurations.
		{"endpoint configuration type enum", "POST", "/endpoint_configurations", `{"type":"tcp"}`, []string{"type"}},
		{"endpoint configuration type on update", "PATCH", "/endpoint_configurations/" + f.ec, `{"type":"http"}`, []string{"type"}},
		// Tunnel group backends.
		{"over 32 labels", "POST", "/backends/tunnel_group", with(`{}`, "labels", labels33), []string{"labels"}},
		{"label key over 63 bytes", "PATCH", "/backends/tunnel_group/" + f.bk, with(`{}`, "labels", map[string]string{long(64): "v"}), []string{`labels["` + long(64) + `"]`}},
		{"label value over 255 bytes", "POST", "/backends/tunnel_group", with(`{}`, "labels", map[string]string{"k": long(256)}), []string{`labels["k"]`}},
		// Routes.
		{"match_type enum", "POST", routes, `{"match_type":"regex","match":"/x"}`, []string{"match_type"}},
		{"match_type enum on update", "PATCH", routes + "/" + f.route, `{"match_type":"prefix"}`, []string{"match_type"}},
		{"match over 1024 bytes", "POST", routes, `{"match_type":"exact_path","match":"/` + long(1024) + `"}`, []string{"match"}},
		// Event sources.
		{"source type unknown", "POST", "/event_subscriptions/" + f.sub + "/sources", `{"type":"ip_policy_renamed.v0"}`, []string{"type"}},
		{"source type over 128 bytes", "POST", "/event_subscriptions/" + f.sub + "/sources", `{"type":"` + long(126) + `.v0"}`, []string{"type"}},
		// OIDC.
		{"cookie_prefix over 64 bytes", "PUT", f.routePath("oidc"), with(oidc, "cookie_prefix", long(65)), []string{"cookie_prefix"}},
		{"issuer over 2048 bytes", "PUT", f.routePath("oidc"), with(oidc, "issuer", "https://idp.example.com/"+long(2048)), []string{"issuer"}},
		{"client_id over 1024 bytes", "PUT", f.routePath("oidc"), with(oidc, "client_id", long(1025)), []string{"client_id"}},
		{"client_secret over 1024 bytes", "PUT", f.routePath("oidc"), with(oidc, "client_secret", long(1025)), []string{"client_secret"}},
		{"over 100 scopes", "PUT", f.routePath("oidc"), with(oidc, "scopes", scopes101), []string{"scopes"}},
		{"scope over 256 bytes", "PUT", f.routePath("oidc"), with(oidc, "scopes", []string{long(257)}), []string{"scopes[0]"}},
		// Response headers.
		{"over 100 added headers", "PUT", f.routePath("response_headers"), with(`{}`, "add", headers101), []string{"add"}},
		{"over 100 removed headers", "PUT", f.routePath("response_headers"), with(`{}`, "remove", names101), []string{"remove"}},
		{"header name over 256 bytes", "PUT", f.routePath("response_headers"), with(`{}`, "add", map[string]string{long(257): "v"}), []string{`add["` + long(257) + `"]`}},
		{"header value over 4096 bytes", "PUT", f.routePath("response_headers"), with(`{}`, "add", map[string]string{"X-A": long(4097)}), []string{`add["X-A"]`}},
		// IP restriction modules.
		{"tls module over 100 policies", "PUT", f.tlsPath("ip_restriction"), with(`{}`, "ip_policy_ids", ids101), []string{"ip_policy_ids"}},
		{"tcp module over 100 policies", "PUT", f.tcpPath("ip_restriction"), with(`{}`, "ip_policy_ids", ids101), []string{"ip_policy_ids"}},
		// Traffic policy.
		{"traffic policy over 128 KiB", "PUT", f.tlsPath("traffic_policy"),
			with(`{}`, "value", `{"inbound":[{"name":"`+long(128<<10)+`","actions":[{"type":"log"}]}]}`), []string{"value"}},
		// TLS termination.
		{"terminate_at enum", "PUT", f.tlsPath("tls_termination"), `{"terminate_at":"origin"}`, []string{"terminate_at"}},
		{"min_version enum", "PUT", f.tlsPath("tls_termination"), `{"min_version":"1.5"}`, []string{"min_version"}},
		{"min_version with upstream", "PUT", f.tlsPath("tls_termination"), `{"terminate_at":"upstream","min_version":"1.3"}`, []string{"min_version"}},
	} {
		add(c.name, c.method, c.path, c.body, invalid(c.fields...))
	}

	before := snapshot(t, s, s.keyA)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkError(t, call(t, s, tc.method, tc.path, tc.key, tc.body, tc.hdr...), tc.want)
			unchanged(t, s, s.keyA, before)
		})
	}
}

// The limits count bytes, not characters: at the limit, requests are
// accepted.
func TestE2ELimitsAtTheBoundary(t *testing.T) {
	s := newE2E(t)
	f := newFixture(t, s, s.keyA, "fixture")
	at255 := strings.Repeat("é", 127) + "a" // 255 bytes
	at4096 := strings.Repeat("m", 4096)
	for _, op := range writeOps(t, f) {
		if !op.described {
			continue
		}
		t.Run(op.String(), func(t *testing.T) {
			body := with(op.valid, "description", at255, "metadata", at4096)
			if op.path == "/reserved_domains" {
				body = with(body, "domain", "boundary.example.com")
			}
			r := call(t, s, op.method, op.path, s.keyA, body)
			if r.status != 200 && r.status != 201 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if r.json["description"] != at255 || r.json["metadata"] != at4096 {
				t.Errorf("description or metadata not returned as sent: %.300s", r.body)
			}
		})
	}
}

// Field names are JSON object keys and compare exactly: a key that
// differs from a field only in case is an unknown field (httpapi doc:
// bodies are decoded strictly, unknown fields are 400 naming the field).
func TestE2EFieldNamesAreCaseSensitive(t *testing.T) {
	s := newE2E(t)
	f := newFixture(t, s, s.keyA, "fixture")
	before := snapshot(t, s, s.keyA)
	for _, tc := range []struct{ method, path, body, field string }{
		{"POST", "/credentials", `{"Description":"x"}`, "Description"},
		{"PATCH", "/ip_restrictions/" + f.ipx, `{"ENFORCED":true}`, "ENFORCED"},
		{"PUT", f.routePath("compression"), `{"Enabled":false}`, "Enabled"},
		{"POST", "/reserved_domains", `{"Domain":"case.example.com"}`, "Domain"},
	} {
		checkError(t, call(t, s, tc.method, tc.path, s.keyA, tc.body), apiError{status: 400, code: errInvalid, fields: []string{tc.field}})
	}
	unchanged(t, s, s.keyA, before)
}
