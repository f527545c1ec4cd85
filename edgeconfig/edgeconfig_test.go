package edgeconfig_test

import (
	"crypto/tls"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const (
	pol1    = "ipp_00000000000000000000000000a"
	backend = "bkdtg_00000000000000000000000000c"
)

func ptr[T any](v T) *T { return &v }

func TestModuleConfigs(t *testing.T) {
	oidc := &edges.OIDC{Enabled: true, Issuer: "https://idp.example", ClientID: "i", ClientSecret: "s",
		Scopes: []string{"openid"}, InactivityTimeout: 90, MaximumDuration: 3600}
	want := &edgeconfig.OIDC{Issuer: "https://idp.example", ClientID: "i", ClientSecret: "s", Scopes: []string{"openid"},
		CookiePrefix: "service.", InactivityTimeout: 90 * time.Second, MaximumDuration: time.Hour}
	if diff := cmp.Diff(want, edgeconfig.NewOIDC(oidc)); diff != "" {
		t.Errorf("NewOIDC (-want +got):\n%s", diff)
	}
	oidc.CookiePrefix, oidc.OptionsPassthrough = "app_", true
	if c := edgeconfig.NewOIDC(oidc); c.CookiePrefix != "app_" || !c.OptionsPassthrough {
		t.Errorf("NewOIDC = %+v", c)
	}

	disabled := []struct {
		name string
		nil_ bool
	}{
		{"oidc", edgeconfig.NewOIDC(&edges.OIDC{}) == nil},
		{"nil oidc", edgeconfig.NewOIDC(nil) == nil},
		{"backend", edgeconfig.NewBackend(&edges.Backend{Backend: resource.Ref{ID: backend}}) == nil},
		{"nil backend", edgeconfig.NewBackend(nil) == nil},
		{"response headers", edgeconfig.NewResponseHeaders(&edges.ResponseHeaders{}) == nil},
		{"nil response headers", edgeconfig.NewResponseHeaders(nil) == nil},
	}
	for _, d := range disabled {
		if !d.nil_ {
			t.Errorf("%s: a disabled or unset module has a runtime config", d.name)
		}
	}
	if c := edgeconfig.NewBackend(&edges.Backend{Enabled: true, Backend: resource.Ref{ID: backend}}); c == nil || c.BackendID != backend {
		t.Errorf("NewBackend = %+v", c)
	}

	rh := edgeconfig.NewResponseHeaders(&edges.ResponseHeaders{Enabled: true, Add: map[string]string{"x-frame-options": "DENY", "server": "edge"}, Remove: []string{"x-powered-by"}})
	h := http.Header{"X-Powered-By": {"php"}, "Server": {"nginx"}, "Content-Type": {"text/html"}}
	rh.Apply(h)
	wantH := http.Header{"X-Frame-Options": {"DENY"}, "Server": {"edge"}, "Content-Type": {"text/html"}}
	if diff := cmp.Diff(wantH, h); diff != "" {
		t.Errorf("Apply (-want +got):\n%s", diff)
	}
	(*edgeconfig.ResponseHeaders)(nil).Apply(h) // no module: no change, no panic
	if diff := cmp.Diff(wantH, h); diff != "" {
		t.Errorf("nil Apply changed the header (-want +got):\n%s", diff)
	}
}

func TestIPRestriction(t *testing.T) {
	set, err := ipaccess.NewSet([]ipaccess.Rule{{CIDR: "203.0.113.0/24", Action: "allow"}, {CIDR: "203.0.113.9/32", Action: "deny"}})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{pol1}
	c := edgeconfig.NewIPRestriction(ids, set)
	ids[0] = "changed"
	if c.PolicyIDs[0] != pol1 {
		t.Error("NewIPRestriction shares its policy IDs")
	}
	for ip, want := range map[string]bool{"203.0.113.5": true, "203.0.113.9": false, "198.51.100.1": false} {
		if got := c.Allowed(netip.MustParseAddr(ip)); got != want {
			t.Errorf("Allowed(%s) = %v, want %v", ip, got, want)
		}
	}
	var none *edgeconfig.IPRestriction
	if !none.Allowed(netip.MustParseAddr("198.51.100.1")) || none.Allowed(netip.Addr{}) {
		t.Error("a nil restriction must allow every valid address and refuse the zero Addr")
	}
}

func TestHTTPSEdgeRouting(t *testing.T) {
	route := func(id, typ, match string) *edgeconfig.Route {
		return edgeconfig.NewRoute("acct", &edges.HTTPSRoute{ID: id, EdgeID: "edghts_e", MatchType: typ, Match: match})
	}
	c := edgeconfig.NewHTTPSEdge("acct", "edghts_e", []*edgeconfig.Route{
		route("r1", "path_prefix", "/"),
		route("r2", "path_prefix", "/api"),
		route("r3", "exact_path", "/api/health"),
		route("r4", "path_prefix", "/api/v2/"),
		route("r5", "exact_path", "/"),
	})
	var order []string
	for _, r := range c.Routes {
		order = append(order, r.RouteID)
	}
	if diff := cmp.Diff([]string{"r3", "r5", "r4", "r2", "r1"}, order); diff != "" {
		t.Errorf("route order (-want +got):\n%s", diff)
	}
	for path, want := range map[string]string{
		"/":             "r5",
		"/index.html":   "r1",
		"/api":          "r2",
		"/apis":         "r2",
		"/api/health":   "r3",
		"/api/health/x": "r2",
		"/api/v2/users": "r4",
		"/api/v2":       "r2",
	} {
		got := c.Route(path)
		if got == nil || got.RouteID != want {
			t.Errorf("Route(%q) = %+v, want %s", path, got, want)
		}
	}
	// A config built by hand (no index) answers the same.
	byHand := &edgeconfig.HTTPSEdge{Routes: c.Routes}
	for _, path := range []string{"/", "/index.html", "/api/health", "/api/v2/x", "/apis"} {
		if got, want := byHand.Route(path), c.Route(path); got != want {
			t.Errorf("hand-built Route(%q) = %v, want %v", path, got, want)
		}
	}
	if byHand := (&edgeconfig.HTTPSEdge{Routes: []*edgeconfig.Route{route("r", "exact_path", "/a")}}); byHand.Route("/b") != nil {
		t.Error("hand-built config matched an unknown path")
	}
	// Two exact routes with one match: the first in order wins.
	dup := edgeconfig.NewHTTPSEdge("acct", "e", []*edgeconfig.Route{route("r2", "exact_path", "/x"), route("r1", "exact_path", "/x")})
	if got := dup.Route("/x"); got.RouteID != "r1" {
		t.Errorf("duplicate exact routes: got %s, want r1", got.RouteID)
	}
	empty := edgeconfig.NewHTTPSEdge("acct", "edghts_e", nil)
	if empty.Route("/") != nil {
		t.Error("an edge without routes matched a path")
	}
	if (edgeconfig.NewHTTPSEdge("acct", "e", []*edgeconfig.Route{route("r1", "exact_path", "/x")})).Route("/y") != nil {
		t.Error("an exact route matched another path")
	}

	full := edgeconfig.NewRoute("acct", &edges.HTTPSRoute{ID: "r", EdgeID: "e", MatchType: "exact_path", Match: "/",
		OIDC:            &edges.OIDC{Enabled: true, Issuer: "https://i", ClientID: "c", ClientSecret: "s"},
		Backend:         &edges.Backend{Enabled: true, Backend: resource.Ref{ID: backend}},
		ResponseHeaders: &edges.ResponseHeaders{Enabled: false},
		Compression:     &edges.Compression{Enabled: true},
		TrafficPolicy:   &edges.TrafficPolicy{Enabled: true, Value: `{}`},
	})
	if full.OIDC == nil || full.Backend == nil || full.ResponseHeaders != nil || !full.Compression || full.AccountID != "acct" {
		t.Errorf("route config = %+v", full)
	}
	// Compiling a route's traffic policy needs the Service's engine: the
	// leaf leaves it to the Service.
	if full.TrafficPolicy != nil {
		t.Errorf("NewRoute compiled a traffic policy: %v", full.TrafficPolicy)
	}
}

func TestTLSEdgeDefaults(t *testing.T) {
	tests := []struct {
		name        string
		termination *edges.TLSTermination
		terminateAt string
		minVersion  uint16
	}{
		{"no module", nil, "edge", tls.VersionTLS12},
		{"disabled module", &edges.TLSTermination{TerminateAt: "upstream"}, "edge", tls.VersionTLS12},
		{"edge, default version", &edges.TLSTermination{Enabled: true, TerminateAt: "edge"}, "edge", tls.VersionTLS12},
		{"edge, 1.3", &edges.TLSTermination{Enabled: true, TerminateAt: "edge", MinVersion: ptr("1.3")}, "edge", tls.VersionTLS13},
		{"edge, 1.0", &edges.TLSTermination{Enabled: true, TerminateAt: "edge", MinVersion: ptr("1.0")}, "edge", tls.VersionTLS10},
		{"edge, 1.1", &edges.TLSTermination{Enabled: true, TerminateAt: "edge", MinVersion: ptr("1.1")}, "edge", tls.VersionTLS11},
		{"upstream", &edges.TLSTermination{Enabled: true, TerminateAt: "upstream"}, "upstream", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := edgeconfig.NewTLSEdge("acct", &edges.TLSEdge{ID: "edgtls_x", TLSTermination: tc.termination}, nil, nil)
			want := &edgeconfig.TLSEdge{AccountID: "acct", EdgeID: "edgtls_x", TerminateAt: tc.terminateAt, MinVersion: tc.minVersion}
			if diff := cmp.Diff(want, c, cmpopts.IgnoreUnexported(edgeconfig.IPRestriction{})); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
	if edgeconfig.TLSVersion("1.4") != 0 || edgeconfig.TLSVersion("") != 0 {
		t.Error("TLSVersion of an unknown version is not 0")
	}
}

func TestIPPolicyIDs(t *testing.T) {
	set, err := ipaccess.NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		restriction *edgeconfig.IPRestriction
		policy      []string // a TLS edge's traffic policy's IP policies
		want        []string
	}{
		{"none", nil, nil, nil},
		{"restriction only", edgeconfig.NewIPRestriction([]string{"ipp_b", "ipp_a"}, set), nil, []string{"ipp_a", "ipp_b"}},
		{"policy only", nil, []string{"ipp_c", "ipp_a", "ipp_c"}, []string{"ipp_a", "ipp_c"}},
		{"both, shared", edgeconfig.NewIPRestriction([]string{"ipp_b", "ipp_a"}, set), []string{"ipp_a", "ipp_c"}, []string{"ipp_a", "ipp_b", "ipp_c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tlsEdge := &edgeconfig.TLSEdge{IPRestriction: tc.restriction, PolicyIPPolicyIDs: tc.policy}
			if diff := cmp.Diff(tc.want, tlsEdge.IPPolicyIDs(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("TLSEdge.IPPolicyIDs (-want +got):\n%s", diff)
			}
			if tc.policy != nil {
				return // a TCP edge has no traffic policy
			}
			tcpEdge := &edgeconfig.TCPEdge{IPRestriction: tc.restriction}
			if diff := cmp.Diff(tc.want, tcpEdge.IPPolicyIDs(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("TCPEdge.IPPolicyIDs (-want +got):\n%s", diff)
			}
			if tc.restriction != nil && tc.restriction.PolicyIDs[0] != "ipp_b" {
				t.Error("IPPolicyIDs reordered the restriction's PolicyIDs")
			}
		})
	}
}
