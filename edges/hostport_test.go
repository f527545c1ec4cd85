package edges_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
)

func TestParseHostport(t *testing.T) {
	for _, c := range []struct {
		name, in string
		typ      edges.EdgeType
		want     string // canonical; "" when refused
		reason   string // part of the reason when refused
	}{
		{"https", "app.example.com:443", edges.EdgeHTTPS, "app.example.com:443", ""},
		{"canonical host", "App.Example.COM.:443", edges.EdgeHTTPS, "app.example.com:443", ""},
		{"wildcard", "*.example.com:443", edges.EdgeTLS, "*.example.com:443", ""},
		{"tcp any port", "db.example.com:5432", edges.EdgeTCP, "db.example.com:5432", ""},
		{"tcp port 1", "db.example.com:1", edges.EdgeTCP, "db.example.com:1", ""},
		{"tcp port 65535", "db.example.com:65535", edges.EdgeTCP, "db.example.com:65535", ""},
		{"https other port", "app.example.com:8443", edges.EdgeHTTPS, "", "must use port 443: HTTPS edges"},
		{"tls other port", "app.example.com:80", edges.EdgeTLS, "", "must use port 443: TLS edges"},
		{"empty", "", edges.EdgeTCP, "", "is required"},
		{"no port", "app.example.com", edges.EdgeTCP, "", "port is missing"},
		{"empty port", "app.example.com:", edges.EdgeTCP, "", "from 1 to 65535"},
		{"port 0", "app.example.com:0", edges.EdgeTCP, "", "from 1 to 65535"},
		{"port 65536", "app.example.com:65536", edges.EdgeTCP, "", "from 1 to 65535"},
		{"leading zero", "app.example.com:0443", edges.EdgeTCP, "", "from 1 to 65535"},
		{"sign", "app.example.com:+443", edges.EdgeTCP, "", "from 1 to 65535"},
		{"long port", "app.example.com:000000443", edges.EdgeTCP, "", "from 1 to 65535"},
		{"name", "app.example.com:https", edges.EdgeTCP, "", "from 1 to 65535"},
		{"no host", ":443", edges.EdgeTCP, "", "host is required"},
		{"one label", "localhost:443", edges.EdgeHTTPS, "", "host must be a DNS name of at least two labels"},
		{"ip", "10.0.0.1:443", edges.EdgeHTTPS, "", "host must not end in an all-numeric label"},
		{"ipv6", "[::1]:443", edges.EdgeHTTPS, "", "host may contain only"},
		{"scheme", "https://app.example.com:443", edges.EdgeHTTPS, "", "host may contain only"},
		{"too long", strings.Repeat("a", edges.MaxHostportBytes+1), edges.EdgeTCP, "", "at most " + strconv.Itoa(edges.MaxHostportBytes) + " bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, host, reason := edges.ParseHostport(c.in, c.typ)
			if got != c.want || (c.want == "") != (reason != "") || !strings.Contains(reason, c.reason) {
				t.Errorf("ParseHostport(%q) = %q, %q, want %q with a reason containing %q", c.in, got, reason, c.want, c.reason)
			}
			if c.want != "" && host != edges.HostportHost(got) {
				t.Errorf("host %q, want %q", host, edges.HostportHost(got))
			}
		})
	}
}

func TestEdgeParamsHostports(t *testing.T) {
	many := make([]string, edges.MaxHostports+1)
	for i := range many {
		many[i] = "h" + strconv.Itoa(i) + ".example.com:443"
	}
	if err := (edges.CreateEdgeParams{Hostports: many[:edges.MaxHostports]}).Validate(); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	wantViolation(t, edges.CreateEdgeParams{Hostports: many}.Validate(), "hostports", "at most 10 hostports")
	wantViolation(t, edges.CreateEdgeParams{Hostports: []string{"a.example.com:443", "A.example.com.:443"}}.Validate(), "hostports[1]", "duplicates hostports[0]")
	wantViolation(t, edges.UpdateEdgeParams{Hostports: &[]string{"a.example.com:80"}}.Validate(), "hostports[0]", "must use port 443")
	wantViolation(t, edges.CreateTLSEdgeParams{Hostports: []string{"a.example.com:80"}}.Validate(), "hostports[0]", "must use port 443")
	wantViolation(t, edges.UpdateTLSEdgeParams{Hostports: &[]string{"a.example.com"}}.Validate(), "hostports[0]", "port is missing")
	if err := (edges.CreateTCPEdgeParams{Hostports: []string{"a.example.com:22"}}).Validate(); err != nil {
		t.Errorf("TCP edge on port 22: %v", err)
	}
	wantViolation(t, edges.UpdateTCPEdgeParams{Hostports: &[]string{"a.example.com:0"}}.Validate(), "hostports[0]", "from 1 to 65535")
	if got := edges.CanonicalHostports([]string{"A.example.com.:443"}, edges.EdgeHTTPS); len(got) != 1 || got[0] != "a.example.com:443" {
		t.Errorf("CanonicalHostports = %q", got)
	}
}

// TestInlineModuleParams checks that the inline modules of edge and route
// params are validated by the module params' own Validate, their
// violations under the module's name.
func TestInlineModuleParams(t *testing.T) {
	bad := edges.BackendParams{BackendID: "x"}
	wantViolation(t, edges.CreateRouteParams{MatchType: "exact_path", Match: "/", Backend: &bad}.Validate(), "backend.backend_id", "tunnel group backend ID")
	wantViolation(t, edges.UpdateRouteParams{OIDC: &edges.OIDCParams{ClientID: "c", ClientSecret: "s"}}.Validate(), "oidc.issuer", "is required")
	wantViolation(t, edges.UpdateRouteParams{ResponseHeaders: &edges.ResponseHeadersParams{Add: map[string]string{"X A": "1"}}}.Validate(), `response_headers.add["X A"]`, "HTTP token")
	wantViolation(t, edges.CreateRouteParams{MatchType: "exact_path", Match: "/", TrafficPolicy: &edges.TrafficPolicyParams{}}.Validate(), "traffic_policy.value", "is required")
	wantViolation(t, edges.CreateTLSEdgeParams{IPRestriction: &edges.IPRestrictionParams{}}.Validate(), "ip_restriction.ip_policy_ids", "at least one")
	wantViolation(t, edges.UpdateTLSEdgeParams{TLSTermination: &edges.TLSTerminationParams{TerminateAt: "x"}}.Validate(), "tls_termination.terminate_at", "edge, upstream")
	wantViolation(t, edges.CreateTCPEdgeParams{Backend: &bad}.Validate(), "backend.backend_id", "tunnel group backend ID")
	wantViolation(t, edges.UpdateTCPEdgeParams{IPRestriction: &edges.IPRestrictionParams{IPPolicyIDs: []string{"ipp_1"}}}.Validate(), "ip_restriction.ip_policy_ids[0]", "IP policy ID")

	// Every violation of a module's own Validate appears inline under the
	// module's name, and nothing else.
	oidc := edges.OIDCParams{Issuer: "http://x", CookiePrefix: "a b", Scopes: []string{"", "a"}}
	own := apierr.ViolationsOf(oidc.Validate())
	inline := apierr.ViolationsOf(edges.CreateRouteParams{MatchType: "exact_path", Match: "/", OIDC: &oidc}.Validate())
	if len(own) == 0 || len(inline) != len(own) {
		t.Fatalf("inline violations %v, own %v", inline, own)
	}
	for i, v := range own {
		if inline[i].Field != "oidc."+v.Field || inline[i].Reason != v.Reason {
			t.Errorf("inline violation %v, want oidc.%v", inline[i], v)
		}
	}

	r := edges.CreateRouteParams{MatchType: "path_prefix", Match: "/", Backend: &edges.BackendParams{BackendID: "bkdtg_1"},
		Compression: &edges.CompressionParams{}, TrafficPolicy: &edges.TrafficPolicyParams{Value: "{}"}}.Route()
	if r.Backend == nil || r.Backend.Backend.ID != "bkdtg_1" || !r.Backend.Enabled || r.Compression == nil || !r.Compression.Enabled ||
		r.OIDC != nil || r.ResponseHeaders != nil || r.TrafficPolicy != nil {
		t.Errorf("Route() = %+v: want the modules given, but the traffic policy (compiled by the Service)", r)
	}
}

// FuzzParseHostport checks that an accepted hostport is canonical (parsing
// it again gives it back), names a valid reserved domain name and a port
// in range, and that a refused one says why.
func FuzzParseHostport(f *testing.F) {
	for _, s := range []string{"app.example.com:443", "*.Example.com.:443", "db.example.com:5432", ":443", "a.b:0", "x.y:65536", "[::1]:443", "a.b:04"} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(2))
	}
	f.Fuzz(func(t *testing.T, s string, typ uint8) {
		et := edges.EdgeType(typ % 3)
		hp, host, reason := edges.ParseHostport(s, et)
		if reason != "" {
			if hp != "" || host != "" {
				t.Fatalf("refused %q with a result %q %q", s, hp, host)
			}
			return
		}
		again, _, reason := edges.ParseHostport(hp, et)
		if reason != "" || again != hp {
			t.Fatalf("canonical %q of %q does not parse to itself: %q %q", hp, s, again, reason)
		}
		if name, err := domains.ParseName(host); err != nil || name != host {
			t.Fatalf("host %q of %q is not a canonical name: %v", host, s, err)
		}
		port, err := strconv.Atoi(hp[len(host)+1:])
		if err != nil || port < 1 || port > 65535 || (et != edges.EdgeTCP && port != 443) {
			t.Fatalf("port of %q: %q", hp, hp[len(host)+1:])
		}
		if len(s) > edges.MaxHostportBytes {
			t.Fatalf("accepted %d bytes", len(s))
		}
	})
}

func BenchmarkParseHostport(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, reason := edges.ParseHostport("App.Example.com:443", edges.EdgeHTTPS); reason != "" {
			b.Fatal(reason)
		}
	}
}
