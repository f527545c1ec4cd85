package edgeplane_test

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/store"
)

// rateLimitOnly is an HTTP policy whose only rule limits each client
// address to two requests a minute.
const rateLimitOnly = `{"inbound":[{"actions":[{"type":"rate-limit","config":{"name":"two","algorithm":"sliding_window","capacity":2,"rate":"60s","bucket_key":["conn.client_ip"]}}]}]}`

// TestHTTPSRouteTrafficPolicyValidation: documents are compiled for HTTP;
// every problem is a violation located under value, and nothing is stored.
func TestHTTPSRouteTrafficPolicyValidation(t *testing.T) {
	e := newEnv(t)
	f := newModuleFixture(t, e, e.user)
	rt := routeTarget(e, t, e.user)
	replace := func(doc string) (*edges.TrafficPolicy, error) {
		return e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID, edges.TrafficPolicyParams{Value: doc})
	}
	for _, tc := range []struct {
		name, doc, field, reason string
	}{
		{"empty", "", "value", "is required"},
		{"too large", `{"inbound":[]}` + strings.Repeat(" ", edges.MaxTrafficPolicyBytes), "value", "at most"},
		{"not JSON", "inbound: []", "value", "JSON object"},
		{"a JSON string", `"{}"`, "value", "JSON object"},
		{"trailing data", `{} {}`, "value", ""},
		{"unknown phase", `{"inbound":[],"sideways":[]}`, "value.sideways", "unknown phase"},
		{"connection-only phase", `{"on_tcp_connect":[{"actions":[{"type":"deny"}]}]}`, "value.on_tcp_connect", "TLS/TCP connection policies"},
		{"unknown outbound phase", `{"on_tcp_close":[]}`, "value.on_tcp_close", "unknown phase"},
		{"rule not an object", `{"inbound":[1]}`, "value.inbound[0]", "object"},
		{"expression syntax", `{"inbound":[{"expressions":["req.method =="],"actions":[{"type":"deny"}]}]}`, "value.inbound[0].expressions[0]", ""},
		{"second expression not boolean", `{"inbound":[{"expressions":["true","req.method"],"actions":[{"type":"deny"}]}]}`, "value.inbound[0].expressions[1]", ""},
		{"response variable in a request rule", `{"inbound":[{"expressions":["res.status_code == 500"],"actions":[{"type":"deny"}]}]}`, "value.inbound[0].expressions[0]", ""},
		{"unknown action", `{"inbound":[{"actions":[{"type":"explode"}]}]}`, "value.inbound[0].actions[0].type", ""},
		{"rate-limit on responses", `{"outbound":[{"actions":[{"type":"rate-limit","config":{"name":"n","algorithm":"sliding_window","capacity":1,"rate":"60s","bucket_key":["req.host"]}}]}]}`,
			"value.outbound[0].actions[0].type", "only available in inbound"},
		{"rate-limit rate not a multiple of ten seconds", `{"inbound":[{"actions":[{"type":"rate-limit","config":{"name":"n","algorithm":"sliding_window","capacity":1,"rate":"65s","bucket_key":["req.host"]}}]}]}`,
			"value.inbound[0].actions[0].config.rate", ""},
		{"rate-limit capacity 0", `{"inbound":[{"actions":[{"type":"rate-limit","config":{"name":"n","algorithm":"sliding_window","capacity":0,"rate":"60s","bucket_key":["req.host"]}}]}]}`,
			"value.inbound[0].actions[0].config.capacity", ""},
		{"rate-limit bucket key", `{"inbound":[{"actions":[{"type":"rate-limit","config":{"name":"n","algorithm":"sliding_window","capacity":1,"rate":"60s","bucket_key":["req.body"]}}]}]}`,
			"value.inbound[0].actions[0].config.bucket_key[0]", ""},
		{"bad action config", `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"allow":["10.0.0.0/33"]}}]}]}`, "value.inbound[0].actions[0].config.allow[0]", "CIDR"},
		{"unknown config field", `{"inbound":[{"actions":[{"type":"deny","config":{"nope":1}}]}]}`, "value.inbound[0].actions[0].config.nope", ""},
		{"missing IP policy", `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["ipp_000000000000000000000000000"]}}]}]}`,
			"value.inbound[0].actions[0].config.ip_policies", "IP policy ipp_000000000000000000000000000 not found in this account"},
		{"malformed IP policy", `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + f.backend + `"]}}]}]}`,
			"value.inbound[0].actions[0].config.ip_policies", "is not an IP policy ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := replace(tc.doc)
			wantViolation(t, err, tc.field, tc.reason)
		})
	}
	foreign := e.policy(t, e.other)
	_, err := replace(`{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + foreign.ID + `"]}}]}]}`)
	wantViolation(t, err, "value.inbound[0].actions[0].config.ip_policies", "IP policy "+foreign.ID+" not found in this account")
	// Every violation at once, each located.
	_, err = replace(`{"inbound":[{"expressions":["1"],"actions":[{"type":"explode"}]},{"actions":[]}],"outbound":[{"expressions":["nope("]}]}`)
	if vs := apierr.ViolationsOf(err); len(vs) < 4 {
		t.Errorf("want every violation, got %v", vs)
	}
	for _, v := range apierr.ViolationsOf(err) {
		if !strings.HasPrefix(v.Field, "value.") {
			t.Errorf("violation %v is not located under value", v)
		}
	}
	if r, _ := e.svc.GetHTTPSEdgeRoute(e.ctx, e.user, rt.edgeID, rt.routeID); r.TrafficPolicy != nil {
		t.Errorf("refused documents stored %+v", r.TrafficPolicy)
	}
}

// TestRateLimitIsForHTTP: the rate-limit action of SPEC 2.8 is accepted in
// a route's policy and refused in a TLS edge's connection policy.
func TestRateLimitIsForHTTP(t *testing.T) {
	e := newEnv(t)
	rt := routeTarget(e, t, e.user)
	tls := e.tlsEdge(t, e.user)
	for _, doc := range []string{rateLimitOnly, rateLimitDoc(10)} {
		got, err := e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID, edges.TrafficPolicyParams{Value: doc})
		if err != nil || got.Value != doc || !got.Enabled {
			t.Errorf("route: %+v, %v", got, err)
		}
	}
	_, err := e.svc.ReplaceTLSEdgeTrafficPolicy(e.ctx, e.user, tls.ID, edges.TrafficPolicyParams{Value: rateLimitOnly})
	wantViolation(t, err, "value.inbound[0].actions[0].type", "only available in HTTP policies")
	// And the other way round: connection variables that only make sense
	// for TLS (conn.tls.*) are fine in both; HTTP ones only on the route.
	reqVar := `{"inbound":[{"expressions":["req.url.path == '/admin'"],"actions":[{"type":"deny"}]}]}`
	if _, err := e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID, edges.TrafficPolicyParams{Value: reqVar}); err != nil {
		t.Errorf("route with an HTTP variable: %v", err)
	}
	_, err = e.svc.ReplaceTLSEdgeTrafficPolicy(e.ctx, e.user, tls.ID, edges.TrafficPolicyParams{Value: reqVar})
	wantViolation(t, err, "value.inbound[0].expressions[0]", "")
}

// TestHTTPSRouteTrafficPolicyReferences: the IP policies of restrict-ips
// actions are held through the route record's Refs, never shown, and
// released when the module, or the route, goes.
func TestHTTPSRouteTrafficPolicyReferences(t *testing.T) {
	e := newEnv(t)
	f := newModuleFixture(t, e, e.user)
	rt := routeTarget(e, t, e.user)
	doc := `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + f.pol2 + `","` + f.pol1 + `","` + f.pol2 + `"]}}]}]}`
	m, err := e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID, edges.TrafficPolicyParams{Value: doc})
	if err != nil {
		t.Fatal(err)
	}
	if m.IPPolicyIDs != nil || m.Value != doc {
		t.Errorf("replace = %+v", m)
	}
	if got, _ := e.svc.GetHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID); got.IPPolicyIDs != nil {
		t.Errorf("get shows the stored IP policy IDs: %+v", got)
	}
	if got, _ := e.svc.GetHTTPSEdgeRoute(e.ctx, e.user, rt.edgeID, rt.routeID); got.TrafficPolicy.IPPolicyIDs != nil {
		t.Errorf("the route shows the stored IP policy IDs: %+v", got.TrafficPolicy)
	}
	if got, _ := e.svc.ListHTTPSEdgeRoutes(e.ctx, e.user, rt.edgeID, edgeplane.ListOptions{}); got.Items[0].TrafficPolicy.IPPolicyIDs != nil {
		t.Errorf("the list shows the stored IP policy IDs: %+v", got.Items[0].TrafficPolicy)
	}
	rec, err := e.store.Get(e.ctx, edgeplane.KindHTTPSEdgeRoute, e.user.AccountID, rt.routeID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Refs) != 2 || rec.Refs[0] != f.pol2 || rec.Refs[1] != f.pol1 {
		t.Errorf("route record Refs = %v, want [%s %s]", rec.Refs, f.pol2, f.pol1)
	}

	err = e.svc.DeleteIPPolicy(e.ctx, e.user, f.pol1)
	wantCode(t, err, apierr.Conflict)
	if want := "the traffic_policy module of HTTPS edge route " + rt.routeID; !strings.Contains(err.Error(), want) {
		t.Errorf("conflict %q does not say %q", err, want)
	}
	// A disabled module still holds them.
	if _, err := e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID, edges.TrafficPolicyParams{Value: doc, Enabled: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.svc.DeleteIPPolicy(e.ctx, e.user, f.pol2), apierr.Conflict)
	// A backend module beside it keeps its own reference.
	if _, err := e.svc.ReplaceHTTPSRouteBackend(e.ctx, e.user, rt.edgeID, rt.routeID, edges.BackendParams{BackendID: f.backend}); err != nil {
		t.Fatal(err)
	}
	// Narrowing the document releases the policy it no longer names.
	narrow := `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + f.pol1 + `"]}}]}]}`
	if _, err := e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID, edges.TrafficPolicyParams{Value: narrow}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteIPPolicy(e.ctx, e.user, f.pol2); err != nil {
		t.Errorf("delete of a released policy: %v", err)
	}
	wantCode(t, e.svc.DeleteTunnelGroupBackend(e.ctx, e.user, f.backend), apierr.Conflict)
	// Deleting the module releases the rest; the backend stays held.
	if err := e.svc.DeleteHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteIPPolicy(e.ctx, e.user, f.pol1); err != nil {
		t.Errorf("delete after the module is gone: %v", err)
	}
	wantCode(t, e.svc.DeleteTunnelGroupBackend(e.ctx, e.user, f.backend), apierr.Conflict)

	// Deleting the route releases its policy's references.
	pol := e.policy(t, e.user)
	doc = `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + pol.ID + `"]}}]}]}`
	if _, err := e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID, edges.TrafficPolicyParams{Value: doc}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.svc.DeleteIPPolicy(e.ctx, e.user, pol.ID), apierr.Conflict)
	if err := e.svc.DeleteHTTPSEdgeRoute(e.ctx, e.user, rt.edgeID, rt.routeID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteIPPolicy(e.ctx, e.user, pol.ID); err != nil {
		t.Errorf("delete after the route is gone: %v", err)
	}
}

// TestHTTPSRouteTrafficPolicyRacesPolicyDeletion: a replace racing the
// deletion of the IP policy it names never leaves a dangling reference;
// when the deletion wins, the replace fails with a violation of value.
func TestHTTPSRouteTrafficPolicyRacesPolicyDeletion(t *testing.T) {
	e := newEnv(t)
	rt := routeTarget(e, t, e.user)
	for range 20 {
		pol := e.policy(t, e.user)
		doc := `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + pol.ID + `"]}}]}]}`
		done := make(chan error)
		go func() {
			_, err := e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID, edges.TrafficPolicyParams{Value: doc})
			done <- err
		}()
		deleteErr := e.svc.DeleteIPPolicy(e.ctx, e.user, pol.ID)
		replaceErr := <-done
		switch {
		case replaceErr == nil && deleteErr == nil:
			t.Fatal("both the module naming a policy and the policy's deletion succeeded")
		case replaceErr != nil && deleteErr != nil:
			t.Fatalf("both failed: %v; %v", replaceErr, deleteErr)
		case replaceErr != nil:
			// Found missing while compiling (located in the document) or
			// when the record was written (the value as a whole).
			wantCode(t, replaceErr, apierr.InvalidArgument)
			if vs := apierr.ViolationsOf(replaceErr); len(vs) != 1 || !strings.HasPrefix(vs[0].Field, "value") || !strings.Contains(vs[0].Reason, "not found") {
				t.Errorf("replace after the policy's deletion: %v", vs)
			}
		default:
			wantCode(t, deleteErr, apierr.Conflict)
			if err := e.svc.DeleteHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// request is an HTTP request from ip at now, as an edge proxy would hand it
// to a route's policy.
func request(ip string, now time.Time) *policy.Request {
	return &policy.Request{Method: "GET", Scheme: "https", Host: "app.example.com", Path: "/", Header: http.Header{},
		ContentLength: -1, Proto: "HTTP/1.1", Conn: *connFrom(ip), Time: now}
}

// limited runs c's policy on a request from ip and reports whether it was
// refused with 429 and a retry-after header.
func limited(t *testing.T, c *edgeconfig.Route, ip string, now time.Time) bool {
	t.Helper()
	res := c.TrafficPolicy.Inbound(request(ip, now))
	switch {
	case res.Verdict == policy.Continue:
		return false
	case res.Verdict == policy.Respond && res.StatusCode == http.StatusTooManyRequests && res.Header.Get("Retry-After") != "":
		return true
	}
	t.Fatalf("unexpected result %+v", res)
	return false
}

func TestHTTPSRouteConfigTrafficPolicy(t *testing.T) {
	e := newEnv(t)
	acct := e.user.AccountID
	edge := e.httpsEdge(t, e.user)
	api := e.route(t, e.user, edge.ID, "path_prefix", "/api")
	web := e.route(t, e.user, edge.ID, "path_prefix", "/")
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	routeConfig := func(id string) *edgeconfig.Route {
		t.Helper()
		c, err := e.svc.Host().DataPlane().HTTPSRouteConfig(e.ctx, acct, edge.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// No module: no policy.
	if c := routeConfig(api.ID); c.TrafficPolicy != nil {
		t.Errorf("a route without the module has a policy: %v", c.TrafficPolicy)
	}
	for _, r := range []*edges.HTTPSRoute{api, web} {
		if _, err := e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, edge.ID, r.ID, edges.TrafficPolicyParams{Value: rateLimitOnly}); err != nil {
			t.Fatal(err)
		}
	}
	first := routeConfig(api.ID)
	if first.TrafficPolicy == nil || first.TrafficPolicy.Target() != policy.TargetHTTP {
		t.Fatalf("config = %+v", first)
	}
	if b, _ := first.TrafficPolicy.MarshalJSON(); string(b) != rateLimitOnly {
		t.Errorf("compiled policy document %s", b)
	}
	if limited(t, first, "192.0.2.1", now) || limited(t, first, "192.0.2.1", now) {
		t.Fatal("the first two requests were limited")
	}
	if !limited(t, first, "192.0.2.1", now) {
		t.Fatal("the third request in a minute was not limited")
	}
	if limited(t, first, "192.0.2.2", now) {
		t.Error("another client shares the bucket")
	}

	// A reload of the same route (while the proxy still holds the old
	// config, as it does until the new one is in place) keeps the counts,
	// and so does a replace with the same config.
	reloaded := routeConfig(api.ID)
	runtime.KeepAlive(first)
	if !limited(t, reloaded, "192.0.2.1", now) {
		t.Error("a reload of the same route forgot the counts")
	}
	if _, err := e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, edge.ID, api.ID, edges.TrafficPolicyParams{Value: rateLimitOnly}); err != nil {
		t.Fatal(err)
	}
	edgeCfg, err := e.svc.Host().DataPlane().HTTPSEdgeConfig(e.ctx, acct, edge.ID)
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(reloaded)
	fromEdge := edgeCfg.Route("/api/users")
	if fromEdge == nil || fromEdge.RouteID != api.ID || fromEdge.TrafficPolicy == nil {
		t.Fatalf("edge config route = %+v", fromEdge)
	}
	if !limited(t, fromEdge, "192.0.2.1", now) {
		t.Error("the edge config's policy of the route does not share its counts")
	}

	// Another route with the same config counts on its own.
	other := edgeCfg.Route("/")
	if other == nil || other.RouteID != web.ID || other.TrafficPolicy == nil {
		t.Fatalf("edge config route = %+v", other)
	}
	if limited(t, other, "192.0.2.1", now) || limited(t, other, "192.0.2.1", now) {
		t.Error("two routes with the same config share counts")
	}
	if !limited(t, other, "192.0.2.1", now) {
		t.Error("the other route does not limit")
	}
	// The window passes: allowed again.
	if limited(t, fromEdge, "192.0.2.1", now.Add(2*time.Minute)) {
		t.Error("still limited after the window")
	}
	runtime.KeepAlive(edgeCfg)

	// The outbound phase runs on responses and reads the inbound results.
	if _, err := e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, edge.ID, web.ID, edges.TrafficPolicyParams{Value: rateLimitDoc(5)}); err != nil {
		t.Fatal(err)
	}
	c := routeConfig(web.ID)
	req := request("198.51.100.7", now)
	in := c.TrafficPolicy.Inbound(req)
	out := c.TrafficPolicy.Outbound(req, &policy.Response{StatusCode: 200, Header: http.Header{}}, &in)
	if in.Verdict != policy.Continue || len(out.HeaderEdits) != 1 || out.HeaderEdits[0].Value != "false" {
		t.Errorf("inbound %+v, outbound %+v", in, out)
	}

	// Disabled: no policy, in either config.
	if _, err := e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, edge.ID, api.ID, edges.TrafficPolicyParams{Value: rateLimitOnly, Enabled: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if c := routeConfig(api.ID); c.TrafficPolicy != nil {
		t.Error("a disabled module has a policy")
	}
	edgeCfg, _ = e.svc.Host().DataPlane().HTTPSEdgeConfig(e.ctx, acct, edge.ID)
	if c := edgeCfg.Route("/api"); c.TrafficPolicy != nil {
		t.Error("a disabled module has a policy in the edge config")
	}
	if err := e.svc.DeleteHTTPSRouteTrafficPolicy(e.ctx, e.user, edge.ID, api.ID); err != nil {
		t.Fatal(err)
	}
	if c := routeConfig(api.ID); c.TrafficPolicy != nil {
		t.Error("a deleted module has a policy")
	}
}

// TestHTTPSRouteConfigRestrictIPs: restrict-ips actions of a route's policy
// apply the IP policies' current rules when the config is loaded.
func TestHTTPSRouteConfigRestrictIPs(t *testing.T) {
	e := newEnv(t)
	acct := e.user.AccountID
	blocked := e.policy(t, e.user, [2]string{"198.51.100.0/24", "deny"})
	rt := routeTarget(e, t, e.user)
	doc := `{"inbound":[{"name":"blocked","actions":[{"type":"restrict-ips","config":{"ip_policies":["` + blocked.ID + `"]}}]}]}`
	if _, err := e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID, edges.TrafficPolicyParams{Value: doc}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	c, err := e.svc.Host().DataPlane().HTTPSRouteConfig(e.ctx, acct, rt.edgeID, rt.routeID)
	if err != nil {
		t.Fatal(err)
	}
	if res := c.TrafficPolicy.Inbound(request("198.51.100.9", now)); res.Verdict != policy.Respond || res.StatusCode != http.StatusForbidden || res.Location != "inbound[0].actions[0]" {
		t.Errorf("blocked client: %+v", res)
	}
	if res := c.TrafficPolicy.Inbound(request("203.0.113.9", now)); res.Verdict != policy.Continue {
		t.Errorf("other client: %+v", res)
	}
	// A reload sees a new rule.
	if _, err := e.svc.CreateIPPolicyRule(e.ctx, e.user, ipaccess.CreateRuleParams{IPPolicyID: blocked.ID, CIDR: "203.0.113.9", Action: "deny"}); err != nil {
		t.Fatal(err)
	}
	c, err = e.svc.Host().DataPlane().HTTPSRouteConfig(e.ctx, acct, rt.edgeID, rt.routeID)
	if err != nil {
		t.Fatal(err)
	}
	if res := c.TrafficPolicy.Inbound(request("203.0.113.9", now)); res.Verdict != policy.Respond {
		t.Errorf("after a new deny rule: %+v", res)
	}
}

// TestHTTPSRouteConfigErrors: a stored document another engine cannot
// compile is a failed precondition naming the route; a store failure while
// reading the IP policies of restrict-ips passes through.
func TestHTTPSRouteConfigErrors(t *testing.T) {
	e := newEnv(t)
	rt := routeTarget(e, t, e.user)
	engine, err := policy.NewEngine(policy.Options{Actions: []policy.ActionType{tarpitType{}}})
	if err != nil {
		t.Fatal(err)
	}
	withTarpit, err := edgeplane.New(e.store, edgeplane.Options{Policy: engine})
	if err != nil {
		t.Fatal(err)
	}
	doc := `{"inbound":[{"actions":[{"type":"tarpit"}]}]}`
	_, err = e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID, edges.TrafficPolicyParams{Value: doc})
	wantViolation(t, err, "value.inbound[0].actions[0].type", "")
	if _, err := withTarpit.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID, edges.TrafficPolicyParams{Value: doc}); err != nil {
		t.Fatal(err)
	}
	if c, err := withTarpit.Host().DataPlane().HTTPSRouteConfig(e.ctx, e.user.AccountID, rt.edgeID, rt.routeID); err != nil || c.TrafficPolicy == nil {
		t.Fatalf("config with the custom engine: %+v, %v", c, err)
	}
	_, err = e.svc.Host().DataPlane().HTTPSRouteConfig(e.ctx, e.user.AccountID, rt.edgeID, rt.routeID)
	wantCode(t, err, apierr.FailedPrecondition)
	if !strings.Contains(err.Error(), "HTTPS edge route "+rt.routeID) {
		t.Errorf("error %q does not name the route", err)
	}
	_, err = e.svc.Host().DataPlane().HTTPSEdgeConfig(e.ctx, e.user.AccountID, rt.edgeID)
	wantCode(t, err, apierr.FailedPrecondition)

	// Reading the rules of a restrict-ips policy fails.
	pol := e.policy(t, e.user)
	good := `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + pol.ID + `"]}}]}]}`
	if _, err := e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, rt.edgeID, rt.routeID, edges.TrafficPolicyParams{Value: good}); err != nil {
		t.Fatal(err)
	}
	broken, err := edgeplane.New(listFails{e.store, edgeplane.KindIPPolicyRule}, edgeplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = broken.Host().DataPlane().HTTPSRouteConfig(e.ctx, e.user.AccountID, rt.edgeID, rt.routeID)
	wantCode(t, err, apierr.Internal)
	_, err = broken.Host().DataPlane().HTTPSEdgeConfig(e.ctx, e.user.AccountID, rt.edgeID)
	wantCode(t, err, apierr.Internal)
}

var errStoreDown = errors.New("store down")

// listFails is a Store whose List of one kind fails.
type listFails struct {
	store.Store
	kind store.Kind
}

func (s listFails) List(ctx context.Context, q store.Query) ([]store.Record, error) {
	if q.Kind == s.kind {
		return nil, errStoreDown
	}
	return s.Store.List(ctx, q)
}
