package edgeplane_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/backends"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/store"
)

func connFrom(ip string) *policy.Conn {
	return &policy.Conn{ClientAddr: netip.AddrPortFrom(netip.MustParseAddr(ip), 50000)}
}

func TestTLSEdgeConfig(t *testing.T) {
	e := newEnv(t)
	acct := e.user.AccountID
	office := e.policy(t, e.user, [2]string{"203.0.113.0/24", "allow"}, [2]string{"198.51.100.0/24", "allow"})
	blocked := e.policy(t, e.user, [2]string{"198.51.100.66/32", "deny"})
	edge := e.tlsEdge(t, e.user)

	// No modules: TLS terminates at the edge with TLS 1.2; everything else off.
	c, err := e.svc.Host().DataPlane().TLSEdgeConfig(e.ctx, acct, edge.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.AccountID != acct || c.EdgeID != edge.ID || c.IPRestriction != nil || c.TrafficPolicy != nil ||
		c.TerminateAt != "edge" || c.MinVersion != tls.VersionTLS12 || c.Backend != nil {
		t.Errorf("config without modules = %+v", c)
	}

	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.svc.ReplaceTLSEdgeIPRestriction(e.ctx, e.user, edge.ID, edges.IPRestrictionParams{IPPolicyIDs: []string{office.ID}}))
	must(e.svc.ReplaceTLSEdgeTrafficPolicy(e.ctx, e.user, edge.ID, edges.TrafficPolicyParams{Value: `{"inbound":[
		{"name":"blocked clients","actions":[{"type":"restrict-ips","config":{"ip_policies":["` + blocked.ID + `"]}}]},
		{"name":"no test range","expressions":["inCidrRange(conn.client_ip, '203.0.113.128/25')"],"actions":[{"type":"deny"}]}]}`}))
	must(e.svc.ReplaceTLSEdgeTLSTermination(e.ctx, e.user, edge.ID, edges.TLSTerminationParams{MinVersion: ptr("1.3")}))
	bk, err := e.svc.CreateTunnelGroupBackend(e.ctx, e.user, backends.CreateParams{Labels: map[string]string{"app": "tls"}})
	if err != nil {
		t.Fatal(err)
	}
	must(e.svc.ReplaceTLSEdgeBackend(e.ctx, e.user, edge.ID, edges.BackendParams{BackendID: bk.ID}))

	c, err = e.svc.Host().DataPlane().TLSEdgeConfig(e.ctx, acct, edge.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.TerminateAt != "edge" || c.MinVersion != tls.VersionTLS13 || c.TrafficPolicy == nil || c.TrafficPolicy.Target() != policy.TargetConnection ||
		c.Backend == nil || c.Backend.BackendID != bk.ID {
		t.Fatalf("config = %+v", c)
	}
	if got, want := c.IPPolicyIDs(), slices.Sorted(slices.Values([]string{office.ID, blocked.ID})); !slices.Equal(got, want) {
		t.Errorf("IPPolicyIDs() = %v, want %v (the restriction's and restrict-ips')", got, want)
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		ip       string
		allowed  bool           // by the IP restriction module
		verdict  policy.Verdict // of the traffic policy
		location string
	}{
		{"203.0.113.5", true, policy.Continue, ""},
		{"203.0.113.200", true, policy.Close, "inbound[1].actions[0]"},
		{"198.51.100.66", true, policy.Close, "inbound[0].actions[0]"},
		{"192.0.2.1", false, policy.Continue, ""},
	} {
		if got := c.IPRestriction.Allowed(netip.MustParseAddr(tc.ip)); got != tc.allowed {
			t.Errorf("%s: IP restriction allowed = %v, want %v", tc.ip, got, tc.allowed)
		}
		res := c.TrafficPolicy.Connect(connFrom(tc.ip), now)
		if res.Verdict != tc.verdict || res.Location != tc.location {
			t.Errorf("%s: traffic policy = %v at %q, want %v at %q", tc.ip, res.Verdict, res.Location, tc.verdict, tc.location)
		}
	}

	// A reload sees changed IP policy rules (restriction and restrict-ips).
	if _, err := e.svc.CreateIPPolicyRule(e.ctx, e.user, ipaccess.CreateRuleParams{IPPolicyID: blocked.ID, CIDR: "203.0.113.5", Action: "deny"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateIPPolicyRule(e.ctx, e.user, ipaccess.CreateRuleParams{IPPolicyID: office.ID, CIDR: "192.0.2.0/24", Action: "allow"}); err != nil {
		t.Fatal(err)
	}
	c, err = e.svc.Host().DataPlane().TLSEdgeConfig(e.ctx, acct, edge.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res := c.TrafficPolicy.Connect(connFrom("203.0.113.5"), now); res.Verdict != policy.Close {
		t.Errorf("after a new deny rule: %v", res.Verdict)
	}
	if !c.IPRestriction.Allowed(netip.MustParseAddr("192.0.2.1")) {
		t.Error("after a new allow rule the restriction still refuses")
	}

	// Disabled modules are off; upstream termination has no version.
	must(e.svc.ReplaceTLSEdgeIPRestriction(e.ctx, e.user, edge.ID, edges.IPRestrictionParams{IPPolicyIDs: []string{office.ID}, Enabled: ptr(false)}))
	must(nil, e.svc.DeleteTLSEdgeTrafficPolicy(e.ctx, e.user, edge.ID))
	must(e.svc.ReplaceTLSEdgeTLSTermination(e.ctx, e.user, edge.ID, edges.TLSTerminationParams{TerminateAt: "upstream"}))
	c, err = e.svc.Host().DataPlane().TLSEdgeConfig(e.ctx, acct, edge.ID)
	if err != nil || c.IPRestriction != nil || c.TrafficPolicy != nil || c.TerminateAt != "upstream" || c.MinVersion != 0 {
		t.Errorf("config = %+v, %v", c, err)
	}
	must(e.svc.ReplaceTLSEdgeTLSTermination(e.ctx, e.user, edge.ID, edges.TLSTerminationParams{Enabled: ptr(false), TerminateAt: "upstream"}))
	c, err = e.svc.Host().DataPlane().TLSEdgeConfig(e.ctx, acct, edge.ID)
	if err != nil || c.TerminateAt != "edge" || c.MinVersion != tls.VersionTLS12 {
		t.Errorf("with a disabled termination module: %+v, %v", c, err)
	}

	// Not found: another account, a malformed account, a missing edge.
	_, err = e.svc.Host().DataPlane().TLSEdgeConfig(e.ctx, e.other.AccountID, edge.ID)
	wantNotFoundNaming(t, err, edge.ID)
	_, err = e.svc.Host().DataPlane().TLSEdgeConfig(e.ctx, "acct_x", edge.ID)
	wantNotFoundNaming(t, err, "acct_x")
	_, err = e.svc.Host().DataPlane().TLSEdgeConfig(e.ctx, acct, "edgtls_x")
	wantNotFoundNaming(t, err, "edgtls_x")
}

func TestTLSEdgeConfigWithAnotherEngine(t *testing.T) {
	// A Service given its own engine compiles with it; a stored document
	// the engine cannot compile is a failed precondition, not a crash.
	e := newEnv(t)
	edge := e.tlsEdge(t, e.user)
	if _, err := e.svc.ReplaceTLSEdgeTrafficPolicy(e.ctx, e.user, edge.ID, edges.TrafficPolicyParams{Value: `{"inbound":[{"actions":[{"type":"tarpit"}]}]}`}); err == nil {
		t.Fatal("the default engine accepted an unknown action")
	}
	engine, err := policy.NewEngine(policy.Options{Actions: []policy.ActionType{tarpitType{}}})
	if err != nil {
		t.Fatal(err)
	}
	withTarpit, err := edgeplane.New(e.store, edgeplane.Options{Policy: engine})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := withTarpit.ReplaceTLSEdgeTrafficPolicy(e.ctx, e.user, edge.ID, edges.TrafficPolicyParams{Value: `{"inbound":[{"actions":[{"type":"tarpit"}]}]}`}); err != nil {
		t.Fatal(err)
	}
	if c, err := withTarpit.Host().DataPlane().TLSEdgeConfig(e.ctx, e.user.AccountID, edge.ID); err != nil || c.TrafficPolicy == nil {
		t.Fatalf("config with the custom engine: %+v, %v", c, err)
	}
	_, err = e.svc.Host().DataPlane().TLSEdgeConfig(e.ctx, e.user.AccountID, edge.ID)
	wantCode(t, err, apierr.FailedPrecondition)
}

// tarpitType is a custom action type for TestTLSEdgeConfigWithAnotherEngine.
type tarpitType struct{}

func (tarpitType) Type() string { return "tarpit" }
func (tarpitType) Compile(*policy.CompileContext, []byte) (policy.Action, error) {
	return tarpitAction{}, nil
}

type tarpitAction struct{}

func (tarpitAction) Run(r *policy.RunContext) { r.Close() }

func TestTCPEdgeConfig(t *testing.T) {
	e := newEnv(t)
	acct := e.user.AccountID
	pol := e.policy(t, e.user, [2]string{"10.0.0.0/8", "deny"})
	b := e.backend(t, e.user, map[string]string{"app": "db"})
	edge := e.tcpEdge(t, e.user)
	c, err := e.svc.Host().DataPlane().TCPEdgeConfig(e.ctx, acct, edge.ID)
	if err != nil || c.IPRestriction != nil || c.Backend != nil || c.EdgeID != edge.ID {
		t.Fatalf("config without modules = %+v, %v", c, err)
	}
	if !c.IPRestriction.Allowed(netip.MustParseAddr("10.1.1.1")) {
		t.Error("no restriction refused an address")
	}
	if _, err := e.svc.ReplaceTCPEdgeIPRestriction(e.ctx, e.user, edge.ID, edges.IPRestrictionParams{IPPolicyIDs: []string{pol.ID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ReplaceTCPEdgeBackend(e.ctx, e.user, edge.ID, edges.BackendParams{BackendID: b.ID}); err != nil {
		t.Fatal(err)
	}
	c, err = e.svc.Host().DataPlane().TCPEdgeConfig(e.ctx, acct, edge.ID)
	if err != nil || c.Backend == nil || c.Backend.BackendID != b.ID || c.IPRestriction == nil {
		t.Fatalf("config = %+v, %v", c, err)
	}
	if c.IPRestriction.Allowed(netip.MustParseAddr("10.1.1.1")) || !c.IPRestriction.Allowed(netip.MustParseAddr("192.0.2.1")) {
		t.Error("the restriction does not follow the policy's deny rule")
	}
	_, err = e.svc.Host().DataPlane().TCPEdgeConfig(e.ctx, e.other.AccountID, edge.ID)
	wantNotFoundNaming(t, err, edge.ID)
}

func TestHTTPSEdgeConfig(t *testing.T) {
	e := newEnv(t)
	acct := e.user.AccountID
	edge := e.httpsEdge(t, e.user)
	root := e.route(t, e.user, edge.ID, "path_prefix", "/")
	api := e.route(t, e.user, edge.ID, "path_prefix", "/api/")
	health := e.route(t, e.user, edge.ID, "exact_path", "/api/health")
	for i := range edges.MaxRoutesPerEdge - 3 { // up to the cap
		e.route(t, e.user, edge.ID, "exact_path", "/static/"+strconv.Itoa(i))
	}
	_, err := e.svc.CreateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, edges.CreateRouteParams{MatchType: "exact_path", Match: "/one-too-many"})
	wantCode(t, err, apierr.FailedPrecondition)
	if _, err := e.svc.ReplaceHTTPSRouteOIDC(e.ctx, e.user, edge.ID, api.ID, edges.OIDCParams{Issuer: "https://idp.example", ClientID: "c", ClientSecret: "s", InactivityTimeout: 60}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ReplaceHTTPSRouteCompression(e.ctx, e.user, edge.ID, root.ID, edges.CompressionParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ReplaceHTTPSRouteResponseHeaders(e.ctx, e.user, edge.ID, health.ID, edges.ResponseHeadersParams{Enabled: ptr(false), Remove: []string{"Server"}}); err != nil {
		t.Fatal(err)
	}

	c, err := e.svc.Host().DataPlane().HTTPSEdgeConfig(e.ctx, acct, edge.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Routes) != edges.MaxRoutesPerEdge || c.EdgeID != edge.ID || c.AccountID != acct {
		t.Fatalf("config has %d routes, want %d", len(c.Routes), edges.MaxRoutesPerEdge)
	}
	for path, want := range map[string]string{"/api/health": health.ID, "/api/users": api.ID, "/": root.ID, "/api": root.ID} {
		if got := c.Route(path); got == nil || got.RouteID != want {
			t.Errorf("Route(%q) = %+v, want %s", path, got, want)
		}
	}
	apiCfg := c.Route("/api/users")
	if apiCfg.OIDC == nil || apiCfg.OIDC.CookiePrefix != "service." || apiCfg.OIDC.InactivityTimeout != time.Minute || apiCfg.Compression {
		t.Errorf("api route config = %+v (OIDC %+v)", apiCfg, apiCfg.OIDC)
	}
	if rc := c.Route("/"); !rc.Compression || rc.OIDC != nil {
		t.Errorf("root route config = %+v", rc)
	}
	if rc := c.Route("/api/health"); rc.ResponseHeaders != nil {
		t.Errorf("a disabled module is on: %+v", rc.ResponseHeaders)
	}

	one, err := e.svc.Host().DataPlane().HTTPSRouteConfig(e.ctx, acct, edge.ID, api.ID)
	if err != nil || one.RouteID != api.ID || one.OIDC == nil {
		t.Errorf("route config = %+v, %v", one, err)
	}
	other := e.httpsEdge(t, e.user)
	_, err = e.svc.Host().DataPlane().HTTPSRouteConfig(e.ctx, acct, other.ID, api.ID)
	wantNotFoundNaming(t, err, api.ID)
	_, err = e.svc.Host().DataPlane().HTTPSRouteConfig(e.ctx, acct, edge.ID, "edghtsrt_x")
	wantNotFoundNaming(t, err, "edghtsrt_x")
	_, err = e.svc.Host().DataPlane().HTTPSRouteConfig(e.ctx, e.other.AccountID, edge.ID, api.ID)
	wantNotFoundNaming(t, err, edge.ID)
	_, err = e.svc.Host().DataPlane().HTTPSEdgeConfig(e.ctx, e.other.AccountID, edge.ID)
	wantNotFoundNaming(t, err, edge.ID)
	if c, err := e.svc.Host().DataPlane().HTTPSEdgeConfig(e.ctx, acct, other.ID); err != nil || len(c.Routes) != 0 || c.Route("/") != nil {
		t.Errorf("edge without routes: %+v, %v", c, err)
	}
}

// edgeEventSink records delivered events.
type edgeEventSink struct {
	mu  sync.Mutex
	evs []events.Event
}

func (s *edgeEventSink) Deliver(_ context.Context, ev events.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
	return nil
}

// TestEdgeModuleEvents checks every module's event names (registered in
// the default registry) and that the object of a module event is its edge
// or route as the API shows it.
func TestEdgeModuleEvents(t *testing.T) {
	registered := map[string]bool{}
	for _, typ := range edgeplane.DefaultEventTypes() {
		registered[typ] = true
	}
	for _, m := range allModules() {
		t.Run(m.event, func(t *testing.T) {
			for _, verb := range events.Verbs() {
				if !registered[events.TypeOf(m.event, verb)] {
					t.Fatalf("%s is not in the default registry", events.TypeOf(m.event, verb))
				}
			}
			sink := &edgeEventSink{}
			store := memstore.New()
			svc, err := edgeplane.New(store, edgeplane.Options{BaseURL: testBase, Events: events.Options{Sink: sink},
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			e := &env{svc: svc, store: store, ctx: context.Background()}
			acct := e.account(t, "a")
			e.user = e.subject(t, acct, false, false)
			sub, err := svc.CreateEventSubscription(e.ctx, e.user, events.CreateSubscriptionParams{})
			if err != nil {
				t.Fatal(err)
			}
			for _, verb := range events.Verbs() {
				if _, err := svc.CreateEventSource(e.ctx, e.user, sub.ID, events.CreateSourceParams{Type: events.TypeOf(m.event, verb)}); err != nil {
					t.Fatal(err)
				}
			}
			f := newModuleFixture(t, e, e.user)
			tg := m.target(e, t, e.user)
			if _, err := m.replace(e, e.user, tg, m.valid(f)); err != nil {
				t.Fatal(err)
			}
			if err := m.del(e, e.user, tg); err != nil {
				t.Fatal(err)
			}
			m.del(e, e.user, tg) // not set: no event
			if err := svc.Close(e.ctx); err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, ev := range sink.evs {
				types = append(types, ev.Type)
				var obj struct {
					ID  string `json:"id"`
					URI string `json:"uri"`
				}
				want := tg.edgeID
				if tg.routeID != "" {
					want = tg.routeID
				}
				if err := json.Unmarshal(ev.Object, &obj); err != nil || obj.ID != want || obj.URI == "" {
					t.Errorf("%s object = %s, want the edge or route %s", ev.Type, ev.Object, want)
				}
			}
			want := []string{m.event + "_updated.v0", m.event + "_deleted.v0"}
			if !slices.Equal(types, want) {
				t.Errorf("events %v, want %v", types, want)
			}
		})
	}
}

// TestHTTPSEdgeConfigOverRouteCapFailsClosed: an edge found with more
// routes than the cap (written to the store by other code) gives no
// config built from part of them.
func TestHTTPSEdgeConfigOverRouteCapFailsClosed(t *testing.T) {
	e := newEnv(t)
	edge := e.httpsEdge(t, e.user)
	for i := range edges.MaxRoutesPerEdge + 1 {
		id := fmt.Sprintf("edghtsrt_%027d", i)
		rec := store.Record{Kind: edgeplane.KindHTTPSEdgeRoute, AccountID: e.user.AccountID, ID: id, ParentID: edge.ID, Data: []byte(`{}`)}
		if err := e.store.Create(e.ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.svc.Host().DataPlane().HTTPSEdgeConfig(e.ctx, e.user.AccountID, edge.ID)
	if apierr.CodeOf(err) != apierr.FailedPrecondition || !strings.Contains(err.Error(), "more than 100 HTTPS edge routes") {
		t.Fatalf("HTTPSEdgeConfig over the cap: %v", err)
	}
}
