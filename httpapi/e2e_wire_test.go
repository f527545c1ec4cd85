package httpapi_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// specPaths returns every path of SPEC section 4 for the fixture f, with
// the methods the spec lists for it.
func specPaths(f fixture) map[string][]string {
	sources := "/event_subscriptions/" + f.sub + "/sources"
	paths := map[string][]string{
		"/credentials":              {"POST", "GET"},
		"/credentials/" + f.cred:    {"GET", "PATCH", "DELETE"},
		"/ip_restrictions":          {"POST", "GET"},
		"/ip_restrictions/" + f.ipx: {"GET", "PATCH", "DELETE"},
		"/reserved_domains":         {"POST", "GET"},
		"/reserved_domains/" + f.rd: {"GET", "PATCH", "DELETE"},
		"/reserved_domains/" + f.rd + "/certificate_management_policy": {"DELETE"},
		"/reserved_domains/" + f.rd + "/certificate":                   {"DELETE"},
		"/backends/tunnel_group":                                       {"POST", "GET"},
		"/backends/tunnel_group/" + f.bk:                               {"GET", "PATCH", "DELETE"},
		sources:                                                        {"POST", "GET"},
		sources + "/" + f.source:                                       {"GET", "PATCH", "DELETE"},
	}
	for _, p := range f.modulePaths() {
		paths[p] = []string{"PUT", "GET", "DELETE"}
	}
	return paths
}

// Every path of SPEC section 4: a method the spec does not list is 405
// with an Allow header naming exactly the listed methods; a request
// without a key, or with an unknown one, is 401, whatever the method; the
// store never changes.
func TestE2EMethodsAndAuthentication(t *testing.T) {
	s := newE2E(t)
	f := newFixture(t, s, s.keyA, "fixture")
	before := snapshot(t, s, s.keyA)
	for path, allowed := range specPaths(f) {
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			body := ""
			if m == "POST" || m == "PUT" || m == "PATCH" {
				body = `{}`
			}
			t.Run(m+" "+path, func(t *testing.T) {
				if !slices.Contains(allowed, m) {
					r := call(t, s, m, path, s.keyA, body)
					checkError(t, r, apiError{status: 405, code: errMethod})
					var got []string
					for _, v := range strings.Split(r.header.Get("Allow"), ",") {
						got = append(got, strings.TrimSpace(v))
					}
					if !slices.Equal(sorted(got...), sorted(allowed...)) {
						t.Errorf("Allow %q, want %q", r.header.Get("Allow"), strings.Join(allowed, ", "))
					}
					return
				}
				checkError(t, call(t, s, m, path, "", body), apiError{status: 401, code: errUnauth})
				checkError(t, call(t, s, m, path, "epk_"+strings.Repeat("0", 43), body), apiError{status: 401, code: errUnauth})
			})
		}
	}
	unchanged(t, s, s.keyA, before)
}

// Every list: a walk with limit=1 visits every item exactly once, newest
// first; each page has the documented shape with absolute URIs; created_at
// is RFC 3339 in UTC whatever the clock's zone.
func TestE2EListWalks(t *testing.T) {
	s := newE2E(t)
	// A clock in another zone: timestamps must still be UTC ("Z").
	s.clock.mu.Lock()
	s.clock.now = time.Date(2026, 11, 21, 13, 0, 0, 0, time.FixedZone("CET", 3600))
	s.clock.mu.Unlock()

	edge := create(t, s, s.keyA, "/edges/https", `{}`, "edghts_")
	pol := create(t, s, s.keyA, "/ip_policies", `{}`, "ipp_")
	const n = 3
	lists := []struct {
		path, field, prefix string
		body                func(i int) string
	}{
		{"/credentials", "credentials", "cr_", func(int) string { return `{}` }},
		{"/ip_policy_rules", "ip_policy_rules", "ipr_", func(i int) string {
			return fmt.Sprintf(`{"cidr":"10.%d.0.0/16","action":"allow","ip_policy_id":"%s"}`, i, pol)
		}},
		{"/ip_restrictions", "ip_restrictions", "ipx_", func(int) string { return `{"type":"api","ip_policy_ids":["` + pol + `"]}` }},
		{"/reserved_domains", "reserved_domains", "rd_", func(i int) string { return fmt.Sprintf(`{"domain":"d%d.example.com"}`, i) }},
		{"/tls_certificates", "tls_certificates", "cert_", func(i int) string {
			c, k := genCert(t, fmt.Sprintf("c%d.example.com", i))
			return with(`{}`, "certificate_pem", c, "private_key_pem", k)
		}},
		{"/endpoint_configurations", "endpoint_configurations", "ec_", func(int) string { return `{"type":"https"}` }},
		{"/backends/tunnel_group", "backends", "bkdtg_", func(i int) string { return fmt.Sprintf(`{"labels":{"n":"%d"}}`, i) }},
		{"/edges/https/" + edge + "/routes", "routes", "edghtsrt_", func(i int) string {
			return fmt.Sprintf(`{"match_type":"path_prefix","match":"/r%d"}`, i)
		}},
		{"/edges/tls", "tls_edges", "edgtls_", func(int) string { return `{}` }},
		{"/edges/tcp", "tcp_edges", "edgtcp_", func(int) string { return `{}` }},
		{"/event_subscriptions", "event_subscriptions", "esb_", func(int) string { return `{}` }},
	}
	for _, l := range lists {
		t.Run(l.path, func(t *testing.T) {
			// An empty list first.
			exact(t, call(t, s, "GET", l.path, s.keyA, ""), 200, `{"`+l.field+`":[],"uri":"`+base+l.path+`","next_page_uri":null}`)
			var want []string
			for i := range n {
				s.clock.Advance(1500 * time.Millisecond)
				r := call(t, s, "POST", l.path, s.keyA, l.body(i))
				if r.status != 201 {
					t.Fatalf("POST %s: %d %s", l.path, r.status, r.body)
				}
				id := wantID(t, r.json["id"], l.prefix)
				if got, want := r.json["created_at"], s.clock.Now().UTC().Truncate(time.Second).Format(time.RFC3339); got != want {
					t.Errorf("created_at %v, want %s (RFC 3339, UTC, whole seconds)", got, want)
				}
				if got, want := r.json["uri"], base+l.path+"/"+id; got != want {
					t.Errorf("uri %v, want %s", got, want)
				}
				want = append([]string{id}, want...)
			}
			if got := walk(t, s, s.keyA, l.path, l.field); !slices.Equal(got, want) {
				t.Errorf("walk with limit=1 visited %q, want %q (newest first, each once)", got, want)
			}
			if got := listIDs(t, s, s.keyA, l.path, l.field); !slices.Equal(got, want) {
				t.Errorf("one page %q, want %q", got, want)
			}
			// A page holding the last item has no next page; one before
			// it has.
			if r := call(t, s, "GET", fmt.Sprintf("%s?limit=%d", l.path, n), s.keyA, ""); r.status != 200 || r.json["next_page_uri"] != nil {
				t.Errorf("limit=%d: %d next_page_uri %v", n, r.status, r.json["next_page_uri"])
			}
			if r := call(t, s, "GET", fmt.Sprintf("%s?limit=%d", l.path, n-1), s.keyA, ""); r.status != 200 || r.json["next_page_uri"] == nil {
				t.Errorf("limit=%d: %d next_page_uri %v", n-1, r.status, r.json["next_page_uri"])
			}
		})
	}
	// The walks of the collections the loop above did not fill.
	if got := walk(t, s, s.keyA, "/ip_policies", "ip_policies"); !slices.Equal(got, []string{pol}) {
		t.Errorf("ip_policies walk %q", got)
	}
	if got := walk(t, s, s.keyA, "/edges/https", "https_edges"); !slices.Equal(got, []string{edge}) {
		t.Errorf("https_edges walk %q", got)
	}
}

// First contact: GET / answers with or without headers, pointing at the
// OpenAPI document; a request without Authorization and Service-Version
// gets one error naming both, and where the API is described.
func TestE2EFirstContact(t *testing.T) {
	s := newE2E(t)
	for _, hdr := range [][]string{{"Service-Version", ""}, nil} {
		r := call(t, s, "GET", "/", "", "", hdr...)
		if r.status != 200 || r.json["openapi"] != "/openapi.json" || !strings.Contains(fmt.Sprint(r.json["message"]), "Authorization: Bearer") {
			t.Errorf("GET / with headers %q: %d %s", hdr, r.status, r.body)
		}
	}
	checkError(t, call(t, s, "GET", "/credentials", "", "", "Service-Version", ""), apiError{status: 400, code: errInvalid,
		msg: []string{"Authorization", "Service-Version", "/openapi.json"}})
	// Only the version missing: the error of the version, as before.
	checkError(t, call(t, s, "GET", "/credentials", s.keyA, "", "Service-Version", ""), apiError{status: 400, code: errInvalid,
		fields: []string{"Service-Version"}})
}
