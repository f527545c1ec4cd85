package edges_test

import (
	"crypto/tls"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestModuleConfigs(t *testing.T) {
	oidc := &edges.OIDC{Enabled: true, Issuer: "https://idp.example", ClientID: "i", ClientSecret: "s",
		Scopes: []string{"openid"}, InactivityTimeout: 90, MaximumDuration: 3600}
	want := &edges.OIDCConfig{Issuer: "https://idp.example", ClientID: "i", ClientSecret: "s", Scopes: []string{"openid"},
		CookiePrefix: "service.", InactivityTimeout: 90 * time.Second, MaximumDuration: time.Hour}
	if diff := cmp.Diff(want, oidc.Config()); diff != "" {
		t.Errorf("OIDC Config (-want +got):\n%s", diff)
	}
	oidc.CookiePrefix, oidc.OptionsPassthrough = "app_", true
	if c := oidc.Config(); c.CookiePrefix != "app_" || !c.OptionsPassthrough {
		t.Errorf("OIDC Config = %+v", c)
	}

	disabled := []struct {
		name string
		nil_ bool
	}{
		{"oidc", (&edges.OIDC{}).Config() == nil},
		{"nil oidc", (*edges.OIDC)(nil).Config() == nil},
		{"backend", (&edges.Backend{Backend: resource.Ref{ID: backend}}).Config() == nil},
		{"nil backend", (*edges.Backend)(nil).Config() == nil},
		{"response headers", (&edges.ResponseHeaders{}).Config() == nil},
		{"nil response headers", (*edges.ResponseHeaders)(nil).Config() == nil},
	}
	for _, d := range disabled {
		if !d.nil_ {
			t.Errorf("%s: a disabled or unset module has a runtime config", d.name)
		}
	}
	if c := (&edges.Backend{Enabled: true, Backend: resource.Ref{ID: backend}}).Config(); c == nil || c.BackendID != backend {
		t.Errorf("backend Config = %+v", c)
	}

	rh := (&edges.ResponseHeaders{Enabled: true, Add: map[string]string{"x-frame-options": "DENY", "server": "edge"}, Remove: []string{"x-powered-by"}}).Config()
	h := http.Header{"X-Powered-By": {"php"}, "Server": {"nginx"}, "Content-Type": {"text/html"}}
	rh.Apply(h)
	wantH := http.Header{"X-Frame-Options": {"DENY"}, "Server": {"edge"}, "Content-Type": {"text/html"}}
	if diff := cmp.Diff(wantH, h); diff != "" {
		t.Errorf("Apply (-want +got):\n%s", diff)
	}
	(*edges.ResponseHeadersConfig)(nil).Apply(h) // no module: no change, no panic
	if diff := cmp.Diff(wantH, h); diff != "" {
		t.Errorf("nil Apply changed the header (-want +got):\n%s", diff)
	}
}

func TestIPRestrictionConfig(t *testing.T) {
	set, err := ipaccess.NewSet([]ipaccess.Rule{{CIDR: "203.0.113.0/24", Action: "allow"}, {CIDR: "203.0.113.9/32", Action: "deny"}})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{pol1}
	c := edges.NewIPRestrictionConfig(ids, set)
	ids[0] = "changed"
	if c.PolicyIDs[0] != pol1 {
		t.Error("NewIPRestrictionConfig shares its policy IDs")
	}
	for ip, want := range map[string]bool{"203.0.113.5": true, "203.0.113.9": false, "198.51.100.1": false} {
		if got := c.Allowed(netip.MustParseAddr(ip)); got != want {
			t.Errorf("Allowed(%s) = %v, want %v", ip, got, want)
		}
	}
	var none *edges.IPRestrictionConfig
	if !none.Allowed(netip.MustParseAddr("198.51.100.1")) || none.Allowed(netip.Addr{}) {
		t.Error("a nil restriction must allow every valid address and refuse the zero Addr")
	}
}

func TestHTTPSEdgeConfigRouting(t *testing.T) {
	route := func(id, typ, match string) *edges.HTTPSRouteConfig {
		return edges.NewHTTPSRouteConfig("acct", &edges.HTTPSRoute{ID: id, EdgeID: "edghts_e", MatchType: typ, Match: match})
	}
	c := edges.NewHTTPSEdgeConfig("acct", "edghts_e", []*edges.HTTPSRouteConfig{
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
	byHand := &edges.HTTPSEdgeConfig{Routes: c.Routes}
	for _, path := range []string{"/", "/index.html", "/api/health", "/api/v2/x", "/apis"} {
		if got, want := byHand.Route(path), c.Route(path); got != want {
			t.Errorf("hand-built Route(%q) = %v, want %v", path, got, want)
		}
	}
	if byHand := (&edges.HTTPSEdgeConfig{Routes: []*edges.HTTPSRouteConfig{route("r", "exact_path", "/a")}}); byHand.Route("/b") != nil {
		t.Error("hand-built config matched an unknown path")
	}
	// Two exact routes with one match: the first in order wins.
	dup := edges.NewHTTPSEdgeConfig("acct", "e", []*edges.HTTPSRouteConfig{route("r2", "exact_path", "/x"), route("r1", "exact_path", "/x")})
	if got := dup.Route("/x"); got.RouteID != "r1" {
		t.Errorf("duplicate exact routes: got %s, want r1", got.RouteID)
	}
	empty := edges.NewHTTPSEdgeConfig("acct", "edghts_e", nil)
	if empty.Route("/") != nil {
		t.Error("an edge without routes matched a path")
	}
	if (edges.NewHTTPSEdgeConfig("acct", "e", []*edges.HTTPSRouteConfig{route("r1", "exact_path", "/x")})).Route("/y") != nil {
		t.Error("an exact route matched another path")
	}

	full := edges.NewHTTPSRouteConfig("acct", &edges.HTTPSRoute{ID: "r", EdgeID: "e", MatchType: "exact_path", Match: "/",
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
		t.Errorf("NewHTTPSRouteConfig compiled a traffic policy: %v", full.TrafficPolicy)
	}
}

func TestTLSEdgeConfigDefaults(t *testing.T) {
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
			c := edges.NewTLSEdgeConfig("acct", &edges.TLSEdge{ID: "edgtls_x", TLSTermination: tc.termination}, nil, nil)
			want := &edges.TLSEdgeConfig{AccountID: "acct", EdgeID: "edgtls_x", TerminateAt: tc.terminateAt, MinVersion: tc.minVersion}
			if diff := cmp.Diff(want, c, cmpopts.IgnoreUnexported(edges.IPRestrictionConfig{})); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
	if edges.TLSVersion("1.4") != 0 || edges.TLSVersion("") != 0 {
		t.Error("TLSVersion of an unknown version is not 0")
	}
}
