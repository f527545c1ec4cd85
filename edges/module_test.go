package edges_test

import (
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/google/go-cmp/cmp"
)

const (
	pol1    = "ipp_00000000000000000000000000a"
	pol2    = "ipp_00000000000000000000000000b"
	backend = "bkdtg_00000000000000000000000000c"
)

func ptr[T any](v T) *T { return &v }

// wantViolation fails the test unless err is invalid-argument with a
// violation of field whose reason contains reason.
func wantViolation(t *testing.T, err error, field, reason string) {
	t.Helper()
	if apierr.CodeOf(err) != apierr.InvalidArgument {
		t.Fatalf("got error %v, want invalid argument", err)
	}
	for _, v := range apierr.ViolationsOf(err) {
		if v.Field == field && strings.Contains(v.Reason, reason) {
			return
		}
	}
	t.Fatalf("error %v has no violation of %q containing %q (violations %v)", err, field, reason, apierr.ViolationsOf(err))
}

func TestOIDCParams(t *testing.T) {
	valid := edges.OIDCParams{Issuer: "https://accounts.example.com", ClientID: "id", ClientSecret: "secret"}
	tests := []struct {
		name   string
		params edges.OIDCParams
		want   edges.OIDC
	}{
		{"minimal: defaults as SPEC 2.7 says", valid, edges.OIDC{
			Enabled: true, Issuer: "https://accounts.example.com", ClientID: "id", ClientSecret: "secret", Scopes: []string{},
		}},
		{"every field", edges.OIDCParams{
			Enabled: ptr(false), OptionsPassthrough: true, CookiePrefix: "__Host-app.", InactivityTimeout: 300,
			MaximumDuration: 4294967295, Issuer: "https://idp.example.com/realms/x/", ClientID: "c", ClientSecret: "s",
			Scopes: []string{"openid", "profile", "https://www.googleapis.com/auth/userinfo.email"},
		}, edges.OIDC{
			Enabled: false, OptionsPassthrough: true, CookiePrefix: "__Host-app.", InactivityTimeout: 300,
			MaximumDuration: 4294967295, Issuer: "https://idp.example.com/realms/x/", ClientID: "c", ClientSecret: "s",
			Scopes: []string{"openid", "profile", "https://www.googleapis.com/auth/userinfo.email"},
		}},
		{"enabled explicitly true", edges.OIDCParams{Enabled: ptr(true), Issuer: "https://a.example", ClientID: "i", ClientSecret: "s"},
			edges.OIDC{Enabled: true, Issuer: "https://a.example", ClientID: "i", ClientSecret: "s", Scopes: []string{}}},
		{"issuer with port", edges.OIDCParams{Issuer: "https://a.example:8443/x", ClientID: "i", ClientSecret: "s"},
			edges.OIDC{Enabled: true, Issuer: "https://a.example:8443/x", ClientID: "i", ClientSecret: "s", Scopes: []string{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.params.Validate(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tc.params.Module()); diff != "" {
				t.Errorf("Module() (-want +got):\n%s", diff)
			}
		})
	}
	if got := (edges.OIDC{}).EffectiveCookiePrefix(); got != "service." {
		t.Errorf("EffectiveCookiePrefix of an empty prefix = %q, want service.", got)
	}
	if got := (edges.OIDC{CookiePrefix: "x."}).EffectiveCookiePrefix(); got != "x." {
		t.Errorf("EffectiveCookiePrefix = %q, want x.", got)
	}

	with := func(f func(*edges.OIDCParams)) edges.OIDCParams {
		p := valid
		f(&p)
		return p
	}
	invalid := []struct {
		name   string
		params edges.OIDCParams
		field  string
		reason string
	}{
		{"missing issuer", with(func(p *edges.OIDCParams) { p.Issuer = "" }), "issuer", "is required"},
		{"http issuer", with(func(p *edges.OIDCParams) { p.Issuer = "http://a.example" }), "issuer", "absolute https URL"},
		{"relative issuer", with(func(p *edges.OIDCParams) { p.Issuer = "/realms/x" }), "issuer", "absolute https URL"},
		{"issuer without host", with(func(p *edges.OIDCParams) { p.Issuer = "https:///x" }), "issuer", "absolute https URL"},
		{"opaque issuer", with(func(p *edges.OIDCParams) { p.Issuer = "https:a.example" }), "issuer", "absolute https URL"},
		{"issuer with space", with(func(p *edges.OIDCParams) { p.Issuer = "https://a.example/a b" }), "issuer", "absolute https URL"},
		{"issuer with user info", with(func(p *edges.OIDCParams) { p.Issuer = "https://u:p@a.example" }), "issuer", "user information"},
		{"issuer with query", with(func(p *edges.OIDCParams) { p.Issuer = "https://a.example/?x=1" }), "issuer", "query or fragment"},
		{"issuer with empty query", with(func(p *edges.OIDCParams) { p.Issuer = "https://a.example/?" }), "issuer", "query or fragment"},
		{"issuer with fragment", with(func(p *edges.OIDCParams) { p.Issuer = "https://a.example/#f" }), "issuer", "query or fragment"},
		{"issuer too long", with(func(p *edges.OIDCParams) { p.Issuer = "https://a.example/" + strings.Repeat("a", 2048) }), "issuer", "at most 2048 bytes"},
		{"missing client_id", with(func(p *edges.OIDCParams) { p.ClientID = "" }), "client_id", "is required"},
		{"client_id too long", with(func(p *edges.OIDCParams) { p.ClientID = strings.Repeat("é", 513) }), "client_id", "at most 1024 bytes"},
		{"client_id with newline", with(func(p *edges.OIDCParams) { p.ClientID = "a\nb" }), "client_id", "control characters"},
		{"missing client_secret", with(func(p *edges.OIDCParams) { p.ClientSecret = "" }), "client_secret", "is required"},
		{"client_secret with NUL", with(func(p *edges.OIDCParams) { p.ClientSecret = "a\x00" }), "client_secret", "control characters"},
		{"cookie prefix with space", with(func(p *edges.OIDCParams) { p.CookiePrefix = "my app" }), "cookie_prefix", "cookie name characters"},
		{"cookie prefix with semicolon", with(func(p *edges.OIDCParams) { p.CookiePrefix = "a;b" }), "cookie_prefix", "cookie name characters"},
		{"cookie prefix too long", with(func(p *edges.OIDCParams) { p.CookiePrefix = strings.Repeat("a", 65) }), "cookie_prefix", "at most 64 bytes"},
		{"empty scope", with(func(p *edges.OIDCParams) { p.Scopes = []string{"openid", ""} }), "scopes[1]", "must not be empty"},
		{"scope with space", with(func(p *edges.OIDCParams) { p.Scopes = []string{"openid profile"} }), "scopes[0]", "OAuth scope"},
		{"scope with quote", with(func(p *edges.OIDCParams) { p.Scopes = []string{`a"b`} }), "scopes[0]", "OAuth scope"},
		{"scope with backslash", with(func(p *edges.OIDCParams) { p.Scopes = []string{`a\b`} }), "scopes[0]", "OAuth scope"},
		{"scope with non-ASCII", with(func(p *edges.OIDCParams) { p.Scopes = []string{"é"} }), "scopes[0]", "OAuth scope"},
		{"scope too long", with(func(p *edges.OIDCParams) { p.Scopes = []string{strings.Repeat("s", 257)} }), "scopes[0]", "at most 256 bytes"},
		{"duplicate scope", with(func(p *edges.OIDCParams) { p.Scopes = []string{"openid", "email", "openid"} }), "scopes[2]", "duplicates scopes[0]"},
		{"too many scopes", with(func(p *edges.OIDCParams) { p.Scopes = make([]string, 101) }), "scopes", "at most 100 scopes"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			wantViolation(t, tc.params.Validate(), tc.field, tc.reason)
		})
	}
	// Every violation at once.
	err := edges.OIDCParams{CookiePrefix: "a b", Scopes: []string{""}}.Validate()
	if got := len(apierr.ViolationsOf(err)); got != 5 {
		t.Errorf("empty params: %d violations (%v), want 5", got, err)
	}
}

func TestBackendParams(t *testing.T) {
	p := edges.BackendParams{BackendID: backend}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	want := edges.Backend{Enabled: true, Backend: resource.Ref{ID: backend}}
	if diff := cmp.Diff(want, p.Module()); diff != "" {
		t.Errorf("Module() (-want +got):\n%s", diff)
	}
	if m := (edges.BackendParams{Enabled: ptr(false), BackendID: backend}).Module(); m.Enabled {
		t.Error("enabled false was not kept")
	}
	for name, tc := range map[string]struct{ id, reason string }{
		"missing":          {"", "is required"},
		"another kind":     {pol1, "tunnel group backend ID"},
		"malformed":        {"bkdtg_short", "tunnel group backend ID"},
		"prefix only":      {"bkdtg_", "tunnel group backend ID"},
		"upper-case kind":  {"BKDTG_00000000000000000000000000c", "tunnel group backend ID"},
		"surrounding junk": {" " + backend, "tunnel group backend ID"},
	} {
		t.Run(name, func(t *testing.T) {
			wantViolation(t, edges.BackendParams{BackendID: tc.id}.Validate(), "backend_id", tc.reason)
		})
	}
}

func TestResponseHeadersParams(t *testing.T) {
	tests := []struct {
		name   string
		params edges.ResponseHeadersParams
		want   edges.ResponseHeaders
	}{
		{"empty: add {} and remove []", edges.ResponseHeadersParams{},
			edges.ResponseHeaders{Enabled: true, Add: map[string]string{}, Remove: []string{}}},
		{"names lower-cased, values kept", edges.ResponseHeadersParams{
			Add:    map[string]string{"X-Frame-Options": "DENY", "Strict-Transport-Security": "max-age=63072000; includeSubDomains", "x-empty": ""},
			Remove: []string{"Server", "X-Powered-By"},
		}, edges.ResponseHeaders{Enabled: true,
			Add:    map[string]string{"x-frame-options": "DENY", "strict-transport-security": "max-age=63072000; includeSubDomains", "x-empty": ""},
			Remove: []string{"server", "x-powered-by"},
		}},
		{"token characters and tabs in values", edges.ResponseHeadersParams{
			Enabled: ptr(false),
			Add:     map[string]string{"X-A!#$%&'*+-.^_`|~9": "a\tb é"},
		}, edges.ResponseHeaders{Enabled: false, Add: map[string]string{"x-a!#$%&'*+-.^_`|~9": "a\tb é"}, Remove: []string{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.params.Validate(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tc.params.Module()); diff != "" {
				t.Errorf("Module() (-want +got):\n%s", diff)
			}
		})
	}

	many := map[string]string{}
	for i := range 101 {
		many["x-h"+strings.Repeat("a", i)] = "v"
	}
	invalid := []struct {
		name   string
		params edges.ResponseHeadersParams
		field  string
		reason string
	}{
		{"empty name", edges.ResponseHeadersParams{Add: map[string]string{"": "v"}}, `add[""]`, "must not be empty"},
		{"name with space", edges.ResponseHeadersParams{Add: map[string]string{"X Foo": "v"}}, `add["X Foo"]`, "HTTP token"},
		{"name with colon", edges.ResponseHeadersParams{Add: map[string]string{"X-Foo:": "v"}}, `add["X-Foo:"]`, "HTTP token"},
		{"pseudo-header", edges.ResponseHeadersParams{Add: map[string]string{":status": "200"}}, `add[":status"]`, "HTTP token"},
		{"non-ASCII name", edges.ResponseHeadersParams{Add: map[string]string{"X-Fü": "v"}}, `add["X-Fü"]`, "HTTP token"},
		{"name too long", edges.ResponseHeadersParams{Add: map[string]string{strings.Repeat("a", 257): "v"}}, `add["` + strings.Repeat("a", 257) + `"]`, "at most 256 bytes"},
		{"value with CRLF", edges.ResponseHeadersParams{Add: map[string]string{"X-A": "a\r\nSet-Cookie: x=1"}}, `add["X-A"]`, "CR, LF or NUL"},
		{"value with LF", edges.ResponseHeadersParams{Add: map[string]string{"X-A": "a\nb"}}, `add["X-A"]`, "CR, LF or NUL"},
		{"value with CR", edges.ResponseHeadersParams{Add: map[string]string{"X-A": "a\rb"}}, `add["X-A"]`, "CR, LF or NUL"},
		{"value with NUL", edges.ResponseHeadersParams{Add: map[string]string{"X-A": "a\x00b"}}, `add["X-A"]`, "CR, LF or NUL"},
		{"value too long", edges.ResponseHeadersParams{Add: map[string]string{"X-A": strings.Repeat("v", 4097)}}, `add["X-A"]`, "at most 4096 bytes"},
		{"names differing in case", edges.ResponseHeadersParams{Add: map[string]string{"X-Foo": "1", "x-foo": "2"}}, `add["x-foo"]`, `duplicates header "X-Foo"`},
		{"too many added", edges.ResponseHeadersParams{Add: many}, "add", "at most 100 headers"},
		{"invalid removed name", edges.ResponseHeadersParams{Remove: []string{"Server", "bad name"}}, "remove[1]", "HTTP token"},
		{"empty removed name", edges.ResponseHeadersParams{Remove: []string{""}}, "remove[0]", "must not be empty"},
		{"removed twice, differing in case", edges.ResponseHeadersParams{Remove: []string{"Server", "Via", "SERVER"}}, "remove[2]", "duplicates remove[0]"},
		{"added and removed", edges.ResponseHeadersParams{Add: map[string]string{"X-Foo": "1"}, Remove: []string{"x-FOO"}}, "remove[0]", `is also in add (as "X-Foo")`},
		{"too many removed", edges.ResponseHeadersParams{Remove: make([]string, 101)}, "remove", "at most 100 headers"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			wantViolation(t, tc.params.Validate(), tc.field, tc.reason)
		})
	}
}

func TestCompressionParams(t *testing.T) {
	for _, tc := range []struct {
		enabled *bool
		want    bool
	}{{nil, true}, {ptr(true), true}, {ptr(false), false}} {
		p := edges.CompressionParams{Enabled: tc.enabled}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := p.Module(); got.Enabled != tc.want {
			t.Errorf("enabled %v: Module().Enabled = %v, want %v", tc.enabled, got.Enabled, tc.want)
		}
	}
}

func TestIPRestrictionParams(t *testing.T) {
	p := edges.IPRestrictionParams{IPPolicyIDs: []string{pol2, pol1}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	want := edges.IPRestriction{Enabled: true, IPPolicies: []resource.Ref{{ID: pol2}, {ID: pol1}}}
	if diff := cmp.Diff(want, p.Module()); diff != "" {
		t.Errorf("Module() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{pol2, pol1}, want.PolicyIDs()); diff != "" {
		t.Errorf("PolicyIDs() (-want +got):\n%s", diff)
	}
	hundred := make([]string, 101)
	for i := range hundred {
		hundred[i] = pol1
	}
	for _, tc := range []struct {
		name   string
		ids    []string
		field  string
		reason string
	}{
		{"none", nil, "ip_policy_ids", "at least one"},
		{"empty list", []string{}, "ip_policy_ids", "at least one"},
		{"too many", hundred, "ip_policy_ids", "at most 100"},
		{"not an IP policy", []string{pol1, backend}, "ip_policy_ids[1]", "IP policy ID"},
		{"empty ID", []string{""}, "ip_policy_ids[0]", "IP policy ID"},
		{"duplicate", []string{pol1, pol2, pol1}, "ip_policy_ids[2]", "duplicates ip_policy_ids[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantViolation(t, edges.IPRestrictionParams{IPPolicyIDs: tc.ids}.Validate(), tc.field, tc.reason)
		})
	}
}

func TestTrafficPolicyParams(t *testing.T) {
	if err := (edges.TrafficPolicyParams{Value: `{"inbound":[]}`}).Validate(); err != nil {
		t.Fatal(err)
	}
	wantViolation(t, edges.TrafficPolicyParams{}.Validate(), "value", "is required")
	wantViolation(t, edges.TrafficPolicyParams{Value: strings.Repeat(" ", edges.MaxTrafficPolicyBytes+1)}.Validate(), "value", "at most")
}

func TestTLSTerminationParams(t *testing.T) {
	tests := []struct {
		name   string
		params edges.TLSTerminationParams
		want   edges.TLSTermination
		minVer string
	}{
		{"defaults: edge, null min_version", edges.TLSTerminationParams{},
			edges.TLSTermination{Enabled: true, TerminateAt: "edge"}, "1.2"},
		{"edge with 1.3", edges.TLSTerminationParams{TerminateAt: "edge", MinVersion: ptr("1.3")},
			edges.TLSTermination{Enabled: true, TerminateAt: "edge", MinVersion: ptr("1.3")}, "1.3"},
		{"edge with 1.0", edges.TLSTerminationParams{MinVersion: ptr("1.0")},
			edges.TLSTermination{Enabled: true, TerminateAt: "edge", MinVersion: ptr("1.0")}, "1.0"},
		{"upstream", edges.TLSTerminationParams{Enabled: ptr(false), TerminateAt: "upstream"},
			edges.TLSTermination{Enabled: false, TerminateAt: "upstream"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.params.Validate(); err != nil {
				t.Fatal(err)
			}
			got := tc.params.Module()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Module() (-want +got):\n%s", diff)
			}
			if v := got.EffectiveMinVersion(); v != tc.minVer {
				t.Errorf("EffectiveMinVersion() = %q, want %q", v, tc.minVer)
			}
		})
	}
	// The module does not share the params' pointer.
	p := edges.TLSTerminationParams{MinVersion: ptr("1.1")}
	m := p.Module()
	*p.MinVersion = "1.3"
	if *m.MinVersion != "1.1" {
		t.Error("Module shares MinVersion with its params")
	}

	for _, tc := range []struct {
		name   string
		params edges.TLSTerminationParams
		field  string
		reason string
	}{
		{"unknown terminate_at", edges.TLSTerminationParams{TerminateAt: "agent"}, "terminate_at", "edge, upstream"},
		{"upper case", edges.TLSTerminationParams{TerminateAt: "Edge"}, "terminate_at", "edge, upstream"},
		{"unknown version", edges.TLSTerminationParams{MinVersion: ptr("1.4")}, "min_version", "1.0, 1.1, 1.2, 1.3"},
		{"version spelled differently", edges.TLSTerminationParams{MinVersion: ptr("TLS1.2")}, "min_version", "1.0, 1.1, 1.2, 1.3"},
		{"empty version", edges.TLSTerminationParams{MinVersion: ptr("")}, "min_version", "1.0, 1.1, 1.2, 1.3"},
		{"upstream with min_version", edges.TLSTerminationParams{TerminateAt: "upstream", MinVersion: ptr("1.2")}, "min_version", "must be null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantViolation(t, tc.params.Validate(), tc.field, tc.reason)
		})
	}
}

func TestEdgeAndRouteParams(t *testing.T) {
	if err := (edges.CreateEdgeParams{Description: strings.Repeat("é", 127), Metadata: strings.Repeat("m", 4096)}).Validate(); err != nil {
		t.Fatal(err)
	}
	wantViolation(t, edges.CreateEdgeParams{Description: strings.Repeat("é", 128)}.Validate(), "description", "at most 255 bytes")
	wantViolation(t, edges.CreateEdgeParams{Metadata: strings.Repeat("m", 4097)}.Validate(), "metadata", "at most 4096 bytes")
	wantViolation(t, edges.UpdateEdgeParams{Description: ptr(strings.Repeat("d", 256))}.Validate(), "description", "at most 255 bytes")
	wantViolation(t, edges.UpdateEdgeParams{Metadata: ptr(strings.Repeat("é", 2049))}.Validate(), "metadata", "at most 4096 bytes")

	desc, meta := "d", "m"
	edges.UpdateEdgeParams{Metadata: ptr("new")}.Apply(&desc, &meta)
	if desc != "d" || meta != "new" {
		t.Errorf("Apply: description %q, metadata %q", desc, meta)
	}

	r := edges.CreateRouteParams{MatchType: "path_prefix", Match: "/api/", Description: "api"}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	want := edges.HTTPSRoute{MatchType: "path_prefix", Match: "/api/", Description: "api"}
	if diff := cmp.Diff(want, r.Route()); diff != "" {
		t.Errorf("Route() (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name   string
		params edges.CreateRouteParams
		field  string
		reason string
	}{
		{"missing match type", edges.CreateRouteParams{Match: "/"}, "match_type", "is required"},
		{"unknown match type", edges.CreateRouteParams{MatchType: "regex", Match: "/"}, "match_type", "exact_path, path_prefix"},
		{"missing match", edges.CreateRouteParams{MatchType: "exact_path"}, "match", "is required"},
		{"relative match", edges.CreateRouteParams{MatchType: "exact_path", Match: "api"}, "match", `starting with "/"`},
		{"match with query", edges.CreateRouteParams{MatchType: "exact_path", Match: "/a?b=1"}, "match", `without "?" or "#"`},
		{"match with fragment", edges.CreateRouteParams{MatchType: "exact_path", Match: "/a#b"}, "match", `without "?" or "#"`},
		{"match with space", edges.CreateRouteParams{MatchType: "exact_path", Match: "/a b"}, "match", "spaces or control"},
		{"match with DEL", edges.CreateRouteParams{MatchType: "exact_path", Match: "/a\x7f"}, "match", "spaces or control"},
		{"match too long", edges.CreateRouteParams{MatchType: "exact_path", Match: "/" + strings.Repeat("a", 1024)}, "match", "at most 1024 bytes"},
		{"description too long", edges.CreateRouteParams{MatchType: "exact_path", Match: "/", Description: strings.Repeat("d", 256)}, "description", "255 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantViolation(t, tc.params.Validate(), tc.field, tc.reason)
		})
	}

	u := edges.UpdateRouteParams{MatchType: ptr("exact_path"), Match: ptr("/health")}
	if err := u.Validate(); err != nil {
		t.Fatal(err)
	}
	route := want
	u.Apply(&route)
	if route.MatchType != "exact_path" || route.Match != "/health" || route.Description != "api" {
		t.Errorf("Apply: %+v", route)
	}
	wantViolation(t, edges.UpdateRouteParams{Match: ptr("")}.Validate(), "match", "is required")
	wantViolation(t, edges.UpdateRouteParams{MatchType: ptr("prefix")}.Validate(), "match_type", "exact_path, path_prefix")
}

func TestRefsAndModuleRules(t *testing.T) {
	tls := &edges.TLSEdge{ID: "edgtls_x"}
	if got := tls.Refs(); got == nil || len(got) != 0 {
		t.Errorf("Refs of an edge without modules = %#v, want an empty list", got)
	}
	tls.IPRestriction = &edges.IPRestriction{IPPolicies: []resource.Ref{{ID: pol1}, {ID: pol2}}}
	tls.TrafficPolicy = &edges.TrafficPolicy{IPPolicyIDs: []string{pol2, "ipp_z"}}
	if diff := cmp.Diff([]string{pol1, pol2, "ipp_z"}, tls.Refs()); diff != "" {
		t.Errorf("TLS edge Refs (-want +got):\n%s", diff)
	}
	for id, want := range map[string]string{pol1: "ip_restriction", pol2: "ip_restriction", "ipp_z": "traffic_policy", "ipp_none": ""} {
		if got := tls.ModuleReferencing(id); got != want {
			t.Errorf("TLS ModuleReferencing(%s) = %q, want %q", id, got, want)
		}
	}
	if err := tls.CheckModules(); err != nil {
		t.Errorf("CheckModules without termination: %v", err)
	}
	tls.TLSTermination = &edges.TLSTermination{Enabled: false, TerminateAt: "upstream"}
	if err := tls.CheckModules(); apierr.CodeOf(err) != apierr.Conflict || !strings.Contains(err.Error(), "edgtls_x") {
		t.Errorf("CheckModules with upstream termination and a traffic policy: %v, want a conflict naming the edge", err)
	}
	tls.TLSTermination.TerminateAt = "edge"
	if err := tls.CheckModules(); err != nil {
		t.Errorf("CheckModules with edge termination: %v", err)
	}

	tcp := &edges.TCPEdge{IPRestriction: &edges.IPRestriction{IPPolicies: []resource.Ref{{ID: pol1}}}, Backend: &edges.Backend{Backend: resource.Ref{ID: backend}}}
	if diff := cmp.Diff([]string{pol1, backend}, tcp.Refs()); diff != "" {
		t.Errorf("TCP edge Refs (-want +got):\n%s", diff)
	}
	if tcp.ModuleReferencing(backend) != "backend" || tcp.ModuleReferencing(pol1) != "ip_restriction" || tcp.ModuleReferencing(pol2) != "" {
		t.Error("TCP ModuleReferencing is wrong")
	}
	route := &edges.HTTPSRoute{}
	if got := route.Refs(); got == nil || len(got) != 0 || route.ModuleReferencing(backend) != "" {
		t.Errorf("route without modules: Refs %#v", got)
	}
	route.Backend = &edges.Backend{Backend: resource.Ref{ID: backend}}
	if diff := cmp.Diff([]string{backend}, route.Refs()); diff != "" || route.ModuleReferencing(backend) != "backend" {
		t.Errorf("route Refs (-want +got):\n%s", diff)
	}
	// A route's traffic policy holds the IP policies of its restrict-ips
	// actions, each once.
	route.TrafficPolicy = &edges.TrafficPolicy{IPPolicyIDs: []string{pol2, pol1, pol2}}
	if diff := cmp.Diff([]string{backend, pol2, pol1}, route.Refs()); diff != "" {
		t.Errorf("route Refs with a traffic policy (-want +got):\n%s", diff)
	}
	for id, want := range map[string]string{backend: "backend", pol1: "traffic_policy", pol2: "traffic_policy", "ipp_none": ""} {
		if got := route.ModuleReferencing(id); got != want {
			t.Errorf("route ModuleReferencing(%s) = %q, want %q", id, got, want)
		}
	}
	route.Backend = nil
	if diff := cmp.Diff([]string{pol2, pol1}, route.Refs()); diff != "" {
		t.Errorf("route Refs with only a traffic policy (-want +got):\n%s", diff)
	}
}
