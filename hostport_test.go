package edgeplane_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/hosting"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
	"github.com/google/go-cmp/cmp"
)

// wantConflictNaming fails the test unless err is a conflict whose
// message contains every one of parts.
func wantConflictNaming(t *testing.T, err error, parts ...string) {
	t.Helper()
	wantCode(t, err, apierr.Conflict)
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("conflict %q does not name %q", err, p)
		}
	}
}

// revision returns the store's revision: the number of writes so far.
func (e *env) revision(t *testing.T) int64 {
	t.Helper()
	r, err := e.store.Revision(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestEdgeHostports(t *testing.T) {
	e := newEnv(t)
	app := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "app.example.com"})
	e.reservedDomain(t, e.user, domains.CreateParams{Domain: "*.wild.example.com"})
	e.reservedDomain(t, e.other, domains.CreateParams{Domain: "theirs.example.com"})

	https, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{Hostports: []string{"App.Example.COM.:443", "x.wild.example.com:443"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"app.example.com:443", "x.wild.example.com:443"}
	if !cmp.Equal(https.Hostports, want) {
		t.Errorf("create: hostports %q, want %q (canonical)", https.Hostports, want)
	}
	got, err := e.svc.GetHTTPSEdge(e.ctx, e.bot, https.ID)
	if err != nil || !cmp.Equal(got.Hostports, want) {
		t.Errorf("get: hostports %v, %v; want %q", got, err, want)
	}
	if plain := e.httpsEdge(t, e.user); plain.Hostports == nil || len(plain.Hostports) != 0 {
		t.Errorf("an edge without hostports shows %#v, want []", plain.Hostports)
	}

	t.Run("unique across kinds", func(t *testing.T) {
		_, err := e.svc.CreateTLSEdge(e.ctx, e.user, edges.CreateTLSEdgeParams{Hostports: []string{"APP.example.com:443"}})
		wantConflictNaming(t, err, "app.example.com:443")
		_, err = e.svc.CreateTCPEdge(e.ctx, e.user, edges.CreateTCPEdgeParams{Hostports: []string{"app.example.com:5432", "app.example.com:443"}})
		wantConflictNaming(t, err, "app.example.com:443")
		if strings.Contains(err.Error(), "5432") {
			t.Errorf("the conflict names the free hostport too: %v", err)
		}
	})

	t.Run("a TCP port serves one TCP edge", func(t *testing.T) {
		e.reservedDomain(t, e.other, domains.CreateParams{Domain: "db.example.com"})
		first, err := e.svc.CreateTCPEdge(e.ctx, e.user, edges.CreateTCPEdgeParams{Hostports: []string{"app.example.com:6000", "x.wild.example.com:6000"}})
		if err != nil {
			t.Fatalf("two hosts on one port of one TCP edge: %v", err)
		}
		// Another account's host on the same port: a TCP client names no
		// host, so the port is taken.
		_, err = e.svc.CreateTCPEdge(e.ctx, e.other, edges.CreateTCPEdgeParams{Hostports: []string{"db.example.com:6000"}})
		wantConflictNaming(t, err, "db.example.com:6000", "port", "TCP edge")
		if strings.Contains(err.Error(), first.ID) {
			t.Errorf("the conflict names another account's edge: %v", err)
		}
		second, err := e.svc.CreateTCPEdge(e.ctx, e.other, edges.CreateTCPEdgeParams{Hostports: []string{"db.example.com:6001"}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.svc.UpdateTCPEdge(e.ctx, e.other, second.ID, edges.UpdateTCPEdgeParams{Hostports: &[]string{"db.example.com:6000"}})
		wantConflictNaming(t, err, "db.example.com:6000", "port")
		// The port frees when the first edge moves off it.
		if _, err := e.svc.UpdateTCPEdge(e.ctx, e.user, first.ID, edges.UpdateTCPEdgeParams{Hostports: &[]string{"app.example.com:6002"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.UpdateTCPEdge(e.ctx, e.other, second.ID, edges.UpdateTCPEdgeParams{Hostports: &[]string{"db.example.com:6000"}}); err != nil {
			t.Fatalf("the freed port: %v", err)
		}
		for _, d := range []struct {
			p  edgeplane.Principal
			id string
		}{{e.user, first.ID}, {e.other, second.ID}} {
			if err := e.svc.DeleteTCPEdge(e.ctx, d.p, d.id); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("unique across accounts", func(t *testing.T) {
		// Account b reserves a name that a's wildcard covers and a's edge
		// already serves: the hostport stays a's.
		e.reservedDomain(t, e.other, domains.CreateParams{Domain: "x.wild.example.com"})
		_, err := e.svc.CreateHTTPSEdge(e.ctx, e.other, edges.CreateEdgeParams{Hostports: []string{"x.wild.example.com:443"}})
		wantConflictNaming(t, err, "x.wild.example.com:443")
		if strings.Contains(err.Error(), https.ID) {
			t.Errorf("the conflict names another account's edge: %v", err)
		}
		// ...and a's wildcard does not serve a name b reserved.
		e.reservedDomain(t, e.other, domains.CreateParams{Domain: "w.wild.example.com"})
		_, err = e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{Hostports: []string{"w.wild.example.com:443"}})
		wantViolation(t, err, "hostports[0]", "w.wild.example.com is not a reserved domain of this account")
		_, err = e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{Hostports: []string{"y.wild.example.com:443", "theirs.example.com:443"}})
		wantViolation(t, err, "hostports[1]", "not a reserved domain of this account")
		if n := len(apierr.ViolationsOf(err)); n != 1 {
			t.Errorf("violations %v, want only hostports[1]", apierr.ViolationsOf(err))
		}
	})

	t.Run("hosts", func(t *testing.T) {
		for name, hp := range map[string]string{
			"another account's":         "theirs.example.com:443",
			"not reserved":              "nowhere.example.com:443",
			"two labels below wildcard": "a.b.wild.example.com:443",
			"the wildcard's base":       "wild.example.com:443",
			"a wildcard not reserved":   "*.app.example.com:443",
		} {
			t.Run(name, func(t *testing.T) {
				_, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{Hostports: []string{hp}})
				wantViolation(t, err, "hostports[0]", "not a reserved domain of this account")
			})
		}
		v, err := e.svc.CreateTCPEdge(e.ctx, e.user, edges.CreateTCPEdgeParams{Hostports: []string{"*.wild.example.com:22", "app.example.com:5432"}})
		if err != nil || !cmp.Equal(v.Hostports, []string{"*.wild.example.com:22", "app.example.com:5432"}) {
			t.Errorf("TCP edge on a wildcard and another port: %+v, %v", v, err)
		}
		if err := e.svc.DeleteTCPEdge(e.ctx, e.user, v.ID); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("validation", func(t *testing.T) {
		tooMany := make([]string, edges.MaxHostports+1)
		for i := range tooMany {
			tooMany[i] = "app.example.com:443"
		}
		for _, c := range []struct {
			name   string
			create func() error
			field  string
			reason string
		}{
			{"https port", func() error {
				_, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{Hostports: []string{"app.example.com:8443"}})
				return err
			}, "hostports[0]", "must use port 443"},
			{"tls port", func() error {
				_, err := e.svc.CreateTLSEdge(e.ctx, e.user, edges.CreateTLSEdgeParams{Hostports: []string{"app.example.com:80"}})
				return err
			}, "hostports[0]", "must use port 443"},
			{"tcp port 0", func() error {
				_, err := e.svc.CreateTCPEdge(e.ctx, e.user, edges.CreateTCPEdgeParams{Hostports: []string{"app.example.com:0"}})
				return err
			}, "hostports[0]", "from 1 to 65535"},
			{"tcp port 65536", func() error {
				_, err := e.svc.CreateTCPEdge(e.ctx, e.user, edges.CreateTCPEdgeParams{Hostports: []string{"app.example.com:65536"}})
				return err
			}, "hostports[0]", "from 1 to 65535"},
			{"no port", func() error {
				_, err := e.svc.CreateTCPEdge(e.ctx, e.user, edges.CreateTCPEdgeParams{Hostports: []string{"app.example.com"}})
				return err
			}, "hostports[0]", "port is missing"},
			{"bad host", func() error {
				_, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{Hostports: []string{"10.0.0.1:443"}})
				return err
			}, "hostports[0]", "host must not end in an all-numeric label"},
			{"duplicate", func() error {
				_, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{Hostports: []string{"y.wild.example.com:443", "Y.wild.example.com:443"}})
				return err
			}, "hostports[1]", "duplicates hostports[0]"},
			{"too many", func() error {
				_, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{Hostports: tooMany})
				return err
			}, "hostports", "at most 10 hostports"},
			{"update", func() error {
				_, err := e.svc.UpdateHTTPSEdge(e.ctx, e.user, https.ID, edges.UpdateEdgeParams{Hostports: &[]string{"app.example.com:444"}})
				return err
			}, "hostports[0]", "must use port 443"},
		} {
			t.Run(c.name, func(t *testing.T) {
				before := e.revision(t)
				wantViolation(t, c.create(), c.field, c.reason)
				if after := e.revision(t); after != before {
					t.Errorf("a refused request wrote %d records", after-before)
				}
			})
		}
	})

	t.Run("reserved domain in use", func(t *testing.T) {
		err := e.svc.DeleteReservedDomain(e.ctx, e.user, app.ID)
		wantConflictNaming(t, err, "the hostports of HTTPS edge "+https.ID)
		// Replacing a module of an edge keeps its hold on its domains.
		tls, err := e.svc.CreateTLSEdge(e.ctx, e.user, edges.CreateTLSEdgeParams{Hostports: []string{"y.wild.example.com:443"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.ReplaceTLSEdgeTLSTermination(e.ctx, e.user, tls.ID, edges.TLSTerminationParams{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.UpdateTLSEdge(e.ctx, e.user, tls.ID, edges.UpdateTLSEdgeParams{Description: ptr("d")}); err != nil {
			t.Fatal(err)
		}
		wild, err := e.svc.ListReservedDomains(e.ctx, e.user, edgeplane.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range wild.Items {
			if d.Domain == "*.wild.example.com" {
				wantConflictNaming(t, e.svc.DeleteReservedDomain(e.ctx, e.user, d.ID), "the hostports of HTTPS edge "+https.ID, "the hostports of TLS edge "+tls.ID)
			}
		}
		if err := e.svc.DeleteTLSEdge(e.ctx, e.user, tls.ID); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("update", func(t *testing.T) {
		v, err := e.svc.UpdateHTTPSEdge(e.ctx, e.user, https.ID, edges.UpdateEdgeParams{Hostports: &[]string{"z.wild.example.com:443"}})
		if err != nil || !cmp.Equal(v.Hostports, []string{"z.wild.example.com:443"}) {
			t.Fatalf("update: %+v, %v", v, err)
		}
		// The old hostports and the domain are free again.
		tls, err := e.svc.CreateTLSEdge(e.ctx, e.user, edges.CreateTLSEdgeParams{Hostports: []string{"app.example.com:443"}})
		if err != nil {
			t.Fatalf("the released hostport: %v", err)
		}
		if _, err := e.svc.UpdateTLSEdge(e.ctx, e.user, tls.ID, edges.UpdateTLSEdgeParams{Hostports: &[]string{}}); err != nil {
			t.Fatal(err)
		}
		if err := e.svc.DeleteReservedDomain(e.ctx, e.user, app.ID); err != nil {
			t.Errorf("the domain no edge serves: %v", err)
		}
		// An update without hostports leaves them.
		v, err = e.svc.UpdateHTTPSEdge(e.ctx, e.user, https.ID, edges.UpdateEdgeParams{Description: ptr("web")})
		if err != nil || !cmp.Equal(v.Hostports, []string{"z.wild.example.com:443"}) {
			t.Errorf("update without hostports: %+v, %v", v, err)
		}
		// A hostport another edge holds is a conflict, and changes nothing.
		other, err := e.svc.CreateTCPEdge(e.ctx, e.user, edges.CreateTCPEdgeParams{Hostports: []string{"q.wild.example.com:443"}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.svc.UpdateTCPEdge(e.ctx, e.user, other.ID, edges.UpdateTCPEdgeParams{Hostports: &[]string{"z.wild.example.com:443"}})
		wantConflictNaming(t, err, "z.wild.example.com:443")
		if got, _ := e.svc.GetTCPEdge(e.ctx, e.user, other.ID); !cmp.Equal(got.Hostports, []string{"q.wild.example.com:443"}) {
			t.Errorf("a refused update changed the hostports to %q", got.Hostports)
		}
		// Deleting an edge releases its hostports.
		if err := e.svc.DeleteTCPEdge(e.ctx, e.user, other.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{Hostports: []string{"q.wild.example.com:443"}}); err != nil {
			t.Errorf("the hostport of a deleted edge: %v", err)
		}
	})
}

func TestEdgeByHostport(t *testing.T) {
	e := newEnv(t)
	e.reservedDomain(t, e.user, domains.CreateParams{Domain: "app.example.com"})
	e.reservedDomain(t, e.user, domains.CreateParams{Domain: "*.wild.example.com"})
	e.reservedDomain(t, e.other, domains.CreateParams{Domain: "db.example.com"})
	https, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{Hostports: []string{"app.example.com:443"}})
	if err != nil {
		t.Fatal(err)
	}
	tls, err := e.svc.CreateTLSEdge(e.ctx, e.user, edges.CreateTLSEdgeParams{Hostports: []string{"*.wild.example.com:443", "exact.wild.example.com:443"}})
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := e.svc.CreateTCPEdge(e.ctx, e.other, edges.CreateTCPEdgeParams{Hostports: []string{"db.example.com:5432"}})
	if err != nil {
		t.Fatal(err)
	}
	exact, err := e.svc.CreateTCPEdge(e.ctx, e.user, edges.CreateTCPEdgeParams{Hostports: []string{"one.wild.example.com:443"}})
	if err != nil {
		t.Fatal(err)
	}
	h := e.svc.Host()
	for _, c := range []struct {
		hostport string
		want     hosting.HostportEdge
	}{
		{"app.example.com:443", hosting.HostportEdge{Kind: edgeplane.KindHTTPSEdge, AccountID: e.user.AccountID, EdgeID: https.ID, Hostport: "app.example.com:443"}},
		{"APP.example.com.:443", hosting.HostportEdge{Kind: edgeplane.KindHTTPSEdge, AccountID: e.user.AccountID, EdgeID: https.ID, Hostport: "app.example.com:443"}},
		{"db.example.com:5432", hosting.HostportEdge{Kind: edgeplane.KindTCPEdge, AccountID: e.other.AccountID, EdgeID: tcp.ID, Hostport: "db.example.com:5432"}},
		{"any.wild.example.com:443", hosting.HostportEdge{Kind: edgeplane.KindTLSEdge, AccountID: e.user.AccountID, EdgeID: tls.ID, Hostport: "*.wild.example.com:443"}},
		{"exact.wild.example.com:443", hosting.HostportEdge{Kind: edgeplane.KindTLSEdge, AccountID: e.user.AccountID, EdgeID: tls.ID, Hostport: "exact.wild.example.com:443"}},
		// An exact hostport wins over a wildcard one.
		{"one.wild.example.com:443", hosting.HostportEdge{Kind: edgeplane.KindTCPEdge, AccountID: e.user.AccountID, EdgeID: exact.ID, Hostport: "one.wild.example.com:443"}},
	} {
		got, err := h.DataPlane().EdgeByHostport(e.ctx, c.hostport)
		if err != nil {
			t.Errorf("EdgeByHostport(%q): %v", c.hostport, err)
			continue
		}
		if diff := cmp.Diff(c.want, *got); diff != "" {
			t.Errorf("EdgeByHostport(%q) (-want +got):\n%s", c.hostport, diff)
		}
	}
	for _, hp := range []string{"app.example.com:80", "nowhere.example.com:443", "a.b.wild.example.com:443", "wild.example.com:443"} {
		_, err := h.DataPlane().EdgeByHostport(e.ctx, hp)
		wantCode(t, err, apierr.NotFound)
	}
	_, err = h.DataPlane().EdgeByHostport(e.ctx, "app.example.com")
	wantViolation(t, err, "hostport", "port is missing")
}

func TestInlineModules(t *testing.T) {
	e := newEnv(t)
	b := e.backend(t, e.user, map[string]string{"app": "web"})
	pol := e.policy(t, e.user)
	edge := e.httpsEdge(t, e.user)

	t.Run("route create", func(t *testing.T) {
		before := e.revision(t)
		r, err := e.svc.CreateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, edges.CreateRouteParams{MatchType: "path_prefix", Match: "/",
			Backend: &edges.BackendParams{BackendID: b.ID}, Compression: &edges.CompressionParams{Enabled: ptr(true)},
			ResponseHeaders: &edges.ResponseHeadersParams{Add: map[string]string{"X-A": "1"}},
			OIDC:            &edges.OIDCParams{Issuer: "https://id.example.com", ClientID: "c", ClientSecret: "s"},
			TrafficPolicy:   &edges.TrafficPolicyParams{Value: `{"inbound":[{"actions":[{"type":"deny"}]}]}`}})
		if err != nil {
			t.Fatal(err)
		}
		if n := e.revision(t) - before; n != 1 {
			t.Errorf("a route created with its modules took %d writes, want 1", n)
		}
		got, err := e.svc.GetHTTPSEdgeRoute(e.ctx, e.user, edge.ID, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("get differs from create (-create +get):\n%s", diff)
		}
		if got.Backend == nil || got.Backend.Backend.ID != b.ID || !got.Backend.Enabled || got.Compression == nil || !got.Compression.Enabled ||
			got.ResponseHeaders == nil || got.ResponseHeaders.Add["x-a"] != "1" || got.OIDC == nil || got.OIDC.ClientSecret != "s" ||
			got.TrafficPolicy == nil || !strings.Contains(got.TrafficPolicy.Value, "deny") {
			t.Errorf("route modules %+v", got)
		}
		// The per-module operations see the same modules.
		if m, err := e.svc.GetHTTPSRouteBackend(e.ctx, e.user, edge.ID, r.ID); err != nil || m.Backend.ID != b.ID {
			t.Errorf("backend module %+v, %v", m, err)
		}
		// The backend is referenced: it cannot be deleted.
		wantCode(t, e.svc.DeleteTunnelGroupBackend(e.ctx, e.user, b.ID), apierr.Conflict)

		// Update replaces the modules given and keeps the others.
		upd, err := e.svc.UpdateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, r.ID, edges.UpdateRouteParams{Compression: &edges.CompressionParams{Enabled: ptr(false)}})
		if err != nil {
			t.Fatal(err)
		}
		if upd.Compression == nil || upd.Compression.Enabled || upd.Backend == nil || upd.OIDC == nil || upd.TrafficPolicy == nil {
			t.Errorf("update: %+v", upd)
		}
		upd, err = e.svc.UpdateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, r.ID, edges.UpdateRouteParams{
			TrafficPolicy: &edges.TrafficPolicyParams{Value: `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + pol.ID + `"]}}]}]}`}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(upd.TrafficPolicy.Value, pol.ID) {
			t.Errorf("traffic policy after update: %+v", upd.TrafficPolicy)
		}
		wantCode(t, e.svc.DeleteIPPolicy(e.ctx, e.user, pol.ID), apierr.Conflict)
	})

	t.Run("route violations", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			params edges.CreateRouteParams
			field  string
			reason string
		}{
			{"backend id", edges.CreateRouteParams{Backend: &edges.BackendParams{BackendID: "nope"}}, "backend.backend_id", "must be a tunnel group backend ID"},
			{"missing backend", edges.CreateRouteParams{Backend: &edges.BackendParams{BackendID: "bkdtg_" + strings.Repeat("a", 27)}}, "backend.backend_id", "not found in this account"},
			{"oidc", edges.CreateRouteParams{OIDC: &edges.OIDCParams{Issuer: "http://id.example.com", ClientID: "c", ClientSecret: "s"}}, "oidc.issuer", "https URL"},
			{"headers", edges.CreateRouteParams{ResponseHeaders: &edges.ResponseHeadersParams{Remove: []string{"bad header"}}}, "response_headers.remove[0]", "HTTP token"},
			{"policy", edges.CreateRouteParams{TrafficPolicy: &edges.TrafficPolicyParams{Value: `{"inbound":[{"expressions":["nope("],"actions":[{"type":"deny"}]}]}`}},
				"traffic_policy.value.inbound[0].expressions[0]", ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				c.params.MatchType, c.params.Match = "exact_path", "/v/"+strings.ReplaceAll(c.name, " ", "-")
				before := e.revision(t)
				_, err := e.svc.CreateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, c.params)
				wantViolation(t, err, c.field, c.reason)
				if e.revision(t) != before {
					t.Error("a refused create wrote")
				}
			})
		}
	})

	t.Run("another account's edge", func(t *testing.T) {
		// Not found, whatever the modules name: the edge is checked before
		// the policy is compiled.
		missing := "ipp_" + strings.Repeat("a", 27)
		_, err := e.svc.CreateHTTPSEdgeRoute(e.ctx, e.other, edge.ID, edges.CreateRouteParams{MatchType: "exact_path", Match: "/o",
			Backend:       &edges.BackendParams{BackendID: "bkdtg_" + strings.Repeat("a", 27)},
			TrafficPolicy: &edges.TrafficPolicyParams{Value: `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + missing + `"]}}]}]}`}})
		wantCode(t, err, apierr.NotFound)
	})

	t.Run("tls edge", func(t *testing.T) {
		before := e.revision(t)
		v, err := e.svc.CreateTLSEdge(e.ctx, e.user, edges.CreateTLSEdgeParams{
			IPRestriction:  &edges.IPRestrictionParams{IPPolicyIDs: []string{pol.ID}},
			TLSTermination: &edges.TLSTerminationParams{MinVersion: ptr("1.3")}})
		if err != nil {
			t.Fatal(err)
		}
		if n := e.revision(t) - before; n != 1 {
			t.Errorf("a TLS edge created with its modules took %d writes, want 1", n)
		}
		if v.IPRestriction == nil || len(v.IPRestriction.IPPolicies) != 1 || v.IPRestriction.IPPolicies[0].URI == "" ||
			v.TLSTermination == nil || v.TLSTermination.TerminateAt != "edge" || *v.TLSTermination.MinVersion != "1.3" || v.TrafficPolicy != nil {
			t.Errorf("TLS edge %+v", v)
		}
		// Combination rule, at create and at update.
		_, err = e.svc.CreateTLSEdge(e.ctx, e.user, edges.CreateTLSEdgeParams{
			TrafficPolicy:  &edges.TrafficPolicyParams{Value: `{"inbound":[{"actions":[{"type":"deny"}]}]}`},
			TLSTermination: &edges.TLSTerminationParams{TerminateAt: "upstream"}})
		wantCode(t, err, apierr.Conflict)
		_, err = e.svc.UpdateTLSEdge(e.ctx, e.user, v.ID, edges.UpdateTLSEdgeParams{
			TrafficPolicy:  &edges.TrafficPolicyParams{Value: `{"inbound":[{"actions":[{"type":"deny"}]}]}`},
			TLSTermination: &edges.TLSTerminationParams{TerminateAt: "upstream"}})
		wantCode(t, err, apierr.Conflict)
		_, err = e.svc.CreateTLSEdge(e.ctx, e.user, edges.CreateTLSEdgeParams{IPRestriction: &edges.IPRestrictionParams{IPPolicyIDs: []string{pol.ID, pol.ID}}})
		wantViolation(t, err, "ip_restriction.ip_policy_ids[1]", "duplicates")
		_, err = e.svc.CreateTLSEdge(e.ctx, e.user, edges.CreateTLSEdgeParams{IPRestriction: &edges.IPRestrictionParams{IPPolicyIDs: []string{"ipp_" + strings.Repeat("z", 27)}}})
		wantViolation(t, err, "ip_restriction.ip_policy_ids[0]", "not found in this account")
		_, err = e.svc.CreateTLSEdge(e.ctx, e.user, edges.CreateTLSEdgeParams{TrafficPolicy: &edges.TrafficPolicyParams{}})
		wantViolation(t, err, "traffic_policy.value", "is required")
		upd, err := e.svc.UpdateTLSEdge(e.ctx, e.user, v.ID, edges.UpdateTLSEdgeParams{TLSTermination: &edges.TLSTerminationParams{TerminateAt: "upstream"}})
		if err != nil || upd.TLSTermination.TerminateAt != "upstream" || upd.IPRestriction == nil {
			t.Errorf("update: %+v, %v", upd, err)
		}
	})

	t.Run("tcp edge", func(t *testing.T) {
		v, err := e.svc.CreateTCPEdge(e.ctx, e.user, edges.CreateTCPEdgeParams{Backend: &edges.BackendParams{BackendID: b.ID, Enabled: ptr(false)}})
		if err != nil {
			t.Fatal(err)
		}
		if v.Backend == nil || v.Backend.Enabled || v.Backend.Backend.URI != "https://api.example.test/backends/tunnel_group/"+b.ID || v.IPRestriction != nil {
			t.Errorf("TCP edge %+v", v)
		}
		upd, err := e.svc.UpdateTCPEdge(e.ctx, e.user, v.ID, edges.UpdateTCPEdgeParams{IPRestriction: &edges.IPRestrictionParams{IPPolicyIDs: []string{pol.ID}}})
		if err != nil || upd.IPRestriction == nil || upd.Backend == nil {
			t.Errorf("update: %+v, %v", upd, err)
		}
		_, err = e.svc.UpdateTCPEdge(e.ctx, e.user, v.ID, edges.UpdateTCPEdgeParams{Backend: &edges.BackendParams{BackendID: "bkdtg_" + strings.Repeat("q", 27)}})
		wantViolation(t, err, "backend.backend_id", "not found in this account")
	})
}

func TestSubscriptionSourcesAtCreate(t *testing.T) {
	e := newEnv(t)
	sub, err := e.svc.CreateEventSubscription(e.ctx, e.user, events.CreateSubscriptionParams{Description: "d",
		Sources: []events.CreateSourceParams{{Type: "ip_policy_updated.v0"}, {Type: "ip_policy_created.v0"}}})
	if err != nil {
		t.Fatal(err)
	}
	uri := "https://api.example.test/event_subscriptions/" + sub.ID + "/sources/"
	want := []events.Source{{Type: "ip_policy_created.v0", URI: uri + "ip_policy_created.v0"}, {Type: "ip_policy_updated.v0", URI: uri + "ip_policy_updated.v0"}}
	if diff := cmp.Diff(want, sub.Sources); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	got, err := e.svc.GetEventSubscription(e.ctx, e.user, sub.ID)
	if err != nil || !cmp.Equal(want, got.Sources) {
		t.Errorf("get: %+v, %v", got, err)
	}
	page, err := e.svc.ListEventSubscriptions(e.ctx, e.user, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 1 || !cmp.Equal(want, page.Items[0].Sources) {
		t.Errorf("list: %+v, %v", page, err)
	}
	if src, err := e.svc.GetEventSource(e.ctx, e.user, sub.ID, "ip_policy_created.v0"); err != nil || src.URI != want[0].URI {
		t.Errorf("the source as its own resource: %+v, %v", src, err)
	}

	for _, c := range []struct {
		name    string
		sources []events.CreateSourceParams
		field   string
		reason  string
	}{
		{"unknown", []events.CreateSourceParams{{Type: "ip_policy_created.v0"}, {Type: "ip_policy_creatd.v0"}}, "sources[1].type", `did you mean "ip_policy_created.v0"`},
		{"malformed", []events.CreateSourceParams{{Type: "nope"}}, "sources[0].type", ""},
		{"duplicate", []events.CreateSourceParams{{Type: "ip_policy_created.v0"}, {Type: "ip_policy_created.v0"}}, "sources[1].type", "duplicates sources[0]"},
		{"too many", make([]events.CreateSourceParams, events.MaxCreateSources+1), "sources", "at most 100 sources"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := e.revision(t)
			_, err := e.svc.CreateEventSubscription(e.ctx, e.user, events.CreateSubscriptionParams{Sources: c.sources})
			wantViolation(t, err, c.field, c.reason)
			if e.revision(t) != before {
				t.Error("a refused create wrote")
			}
		})
	}
}

// BenchmarkEdgeByHostport is the edge proxy's lookup of the edge of a
// connection or request: an exact hostport (one key lookup per kind until
// found) and one served by a wildcard hostport (the exact lookups miss
// first).
func BenchmarkEdgeByHostport(b *testing.B) {
	e := newEnv(b)
	e.reservedDomain(b, e.user, domains.CreateParams{Domain: "app.example.com"})
	e.reservedDomain(b, e.user, domains.CreateParams{Domain: "*.wild.example.com"})
	if _, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{Hostports: []string{"app.example.com:443"}}); err != nil {
		b.Fatal(err)
	}
	if _, err := e.svc.CreateTCPEdge(e.ctx, e.user, edges.CreateTCPEdgeParams{Hostports: []string{"*.wild.example.com:443"}}); err != nil {
		b.Fatal(err)
	}
	h := e.svc.Host()
	for _, hp := range []string{"app.example.com:443", "a.wild.example.com:443"} {
		b.Run(hp, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.DataPlane().EdgeByHostport(e.ctx, hp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHostportClashIsAtomic races creates and updates that all want one
// hostport: exactly one edge gets it, and every other call is a conflict.
func TestHostportClashIsAtomic(t *testing.T) {
	e := newEnv(t)
	e.reservedDomain(t, e.user, domains.CreateParams{Domain: "app.example.com"})
	tls := e.tlsEdge(t, e.user)
	tcp := e.tcpEdge(t, e.user)
	const n = 8
	errs := make(chan error, n+2)
	hp := []string{"app.example.com:443"}
	for range n {
		go func() {
			_, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{Hostports: hp})
			errs <- err
		}()
	}
	go func() {
		_, err := e.svc.UpdateTLSEdge(e.ctx, e.user, tls.ID, edges.UpdateTLSEdgeParams{Hostports: &hp})
		errs <- err
	}()
	go func() {
		_, err := e.svc.UpdateTCPEdge(e.ctx, e.user, tcp.ID, edges.UpdateTCPEdgeParams{Hostports: &hp})
		errs <- err
	}()
	won := 0
	for range n + 2 {
		if err := <-errs; err == nil {
			won++
		} else {
			wantConflictNaming(t, err, "app.example.com:443")
		}
	}
	if won != 1 {
		t.Errorf("%d calls got the hostport, want 1", won)
	}
	got, err := e.svc.Host().DataPlane().EdgeByHostport(e.ctx, "app.example.com:443")
	if err != nil {
		t.Fatal(err)
	}
	// Setting an edge's own hostports again is no clash with itself.
	switch got.Kind {
	case edgeplane.KindTLSEdge:
		_, err = e.svc.UpdateTLSEdge(e.ctx, e.user, got.EdgeID, edges.UpdateTLSEdgeParams{Hostports: &hp})
	case edgeplane.KindTCPEdge:
		_, err = e.svc.UpdateTCPEdge(e.ctx, e.user, got.EdgeID, edges.UpdateTCPEdgeParams{Hostports: &hp})
	default:
		_, err = e.svc.UpdateHTTPSEdge(e.ctx, e.user, got.EdgeID, edges.UpdateEdgeParams{Hostports: &hp})
	}
	if err != nil {
		t.Errorf("setting the same hostports again: %v", err)
	}
}

// hookStore runs onCreate (when set) ahead of every Create.
type hookStore struct {
	store.Store
	onCreate func(rec store.Record) error
}

func (s *hookStore) Create(ctx context.Context, rec store.Record) error {
	if f := s.onCreate; f != nil {
		if err := f(rec); err != nil {
			return err
		}
	}
	return s.Store.Create(ctx, rec)
}

// TestHostportDomainReleasedBeforeWrite releases the reserved domain
// between the Service's check of a hostport and the edge's write: the
// write's reference check refuses it, naming the hostport.
func TestHostportDomainReleasedBeforeWrite(t *testing.T) {
	st := &hookStore{Store: memstore.New()}
	e := newEnvWithStore(t, st)
	d := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "app.example.com"})
	st.onCreate = func(rec store.Record) error {
		if rec.Kind == edgeplane.KindHTTPSEdge {
			st.onCreate = nil
			if err := e.svc.DeleteReservedDomain(e.ctx, e.user, d.ID); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	_, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{Hostports: []string{"app.example.com:443"}})
	wantViolation(t, err, "hostports[0]", "no longer reserved by this account")
}

// TestSubscriptionSourcesUndone fails the write of a subscription's
// second source: the call fails and leaves no subscription behind.
func TestSubscriptionSourcesUndone(t *testing.T) {
	st := &hookStore{Store: memstore.New()}
	e := newEnvWithStore(t, st)
	n := 0
	st.onCreate = func(rec store.Record) error {
		if rec.Kind == edgeplane.KindEventSource {
			if n++; n == 2 {
				return errors.New("disk full")
			}
		}
		return nil
	}
	_, err := e.svc.CreateEventSubscription(e.ctx, e.user, events.CreateSubscriptionParams{
		Sources: []events.CreateSourceParams{{Type: "ip_policy_created.v0"}, {Type: "ip_policy_updated.v0"}}})
	wantCode(t, err, apierr.Internal)
	page, err := e.svc.ListEventSubscriptions(e.ctx, e.user, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 0 {
		t.Errorf("subscriptions after a failed create: %+v, %v", page, err)
	}
	recs, err := st.List(e.ctx, store.Query{Kind: edgeplane.KindEventSource, AccountID: e.user.AccountID, Limit: 10})
	if err != nil || len(recs) != 0 {
		t.Errorf("sources after a failed create: %d, %v", len(recs), err)
	}
}
