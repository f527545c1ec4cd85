package edgeplane_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/resource"
)

// tcpRange is the TCP ports of the tests' tunnel server, on tcpHost.
const (
	tcpHost          = "tcp.example.test"
	tcpLow, tcpHigh  = 20000, 20099
	endpointsBaseURL = "https://api.example.test/"
)

// bindParams returns params for proto at where (a domain, or a tcp
// address; "" for a tcp port the server picks), with the test tunnel
// server's TCP range.
func bindParams(proto, where string) agents.EndpointParams {
	p := agents.EndpointParams{Proto: proto, TCPHost: tcpHost, TCPLow: tcpLow, TCPHigh: tcpHigh, ForwardsTo: "app://laptop/server?pid=1234"}
	if proto == agents.ProtoTCP {
		p.Addr = where
	} else {
		p.Domain = where
	}
	return p
}

// bind binds an endpoint in the session of account.
func (e *env) bind(t testing.TB, account, sessionID string, params agents.EndpointParams) *agents.Endpoint {
	t.Helper()
	ep, err := e.svc.Host().Tunnels().BindEndpoint(e.ctx, account, sessionID, params)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// endpointEnv is an env with reserved domains: app.example.com,
// *.apps.example.com and edge.example.com (served by an HTTPS edge) for
// account a, theirs.example.com for account b.
func endpointEnv(t *testing.T) (*env, *edges.HTTPSEdge) {
	t.Helper()
	e := newEnv(t)
	e.reservedDomain(t, e.user, domains.CreateParams{Domain: "app.example.com"})
	e.reservedDomain(t, e.user, domains.CreateParams{Domain: "*.apps.example.com"})
	e.reservedDomain(t, e.user, domains.CreateParams{Domain: "edge.example.com"})
	e.reservedDomain(t, e.other, domains.CreateParams{Domain: "theirs.example.com"})
	edge, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{Hostports: []string{"edge.example.com:443"}})
	if err != nil {
		t.Fatal(err)
	}
	return e, edge
}

func TestBindEndpoint(t *testing.T) {
	e, _ := endpointEnv(t)
	cred, token := e.token(t, e.user)
	ts := e.session(t, token)
	acct := e.user.AccountID
	at := time.Date(2026, 11, 21, 9, 30, 15, 0, time.UTC)
	rd, err := e.svc.ListReservedDomains(e.ctx, e.user, edgeplane.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	domainRef := func(name string) *resource.Ref {
		for _, d := range rd.Items {
			if d.Domain == name {
				return &resource.Ref{ID: d.ID, URI: endpointsBaseURL + "reserved_domains/" + d.ID}
			}
		}
		t.Fatalf("no reserved domain %s", name)
		return nil
	}
	sessionRef := &resource.Ref{ID: ts.ID, URI: endpointsBaseURL + "tunnel_sessions/" + ts.ID}
	tlsParams := bindParams(agents.ProtoTLS, "x.apps.example.com")
	tlsParams.PassthroughTLS = true
	described := bindParams(agents.ProtoHTTPS, "App.Example.com.")
	described.Metadata, described.Description = `{"team":"web"}`, "the web app"
	for _, tc := range []struct {
		name   string
		params agents.EndpointParams
		want   agents.Endpoint
	}{
		{"https on a reserved domain, named in any case", described, agents.Endpoint{
			URL: "https://app.example.com", Proto: "https", Host: "app.example.com", Port: 443, Hostport: "app.example.com:443",
			Domain: domainRef("app.example.com"), Metadata: `{"team":"web"}`, Description: "the web app"}},
		{"http on the same domain", bindParams(agents.ProtoHTTP, "app.example.com"), agents.Endpoint{
			URL: "http://app.example.com", Proto: "http", Host: "app.example.com", Port: 80, Hostport: "app.example.com:80",
			Domain: domainRef("app.example.com")}},
		{"tls passed through, under a wildcard domain", tlsParams, agents.Endpoint{
			URL: "tls://x.apps.example.com:443", Proto: "tls", Host: "x.apps.example.com", Port: 443, Hostport: "x.apps.example.com:443",
			Domain: domainRef("*.apps.example.com"), PassthroughTLS: true}},
		{"https on the wildcard domain itself", bindParams(agents.ProtoHTTPS, "*.apps.example.com"), agents.Endpoint{
			URL: "https://*.apps.example.com", Proto: "https", Host: "*.apps.example.com", Port: 443, Hostport: "*.apps.example.com:443",
			Domain: domainRef("*.apps.example.com")}},
		{"tcp at an address", bindParams(agents.ProtoTCP, "TCP.example.test:20001"), agents.Endpoint{
			URL: "tcp://tcp.example.test:20001", Proto: "tcp", Host: "tcp.example.test", Port: 20001, Hostport: "tcp.example.test:20001"}},
		{"tcp at an IP address", bindParams(agents.ProtoTCP, "192.0.2.1:20002"), agents.Endpoint{
			URL: "tcp://192.0.2.1:20002", Proto: "tcp", Host: "192.0.2.1", Port: 20002, Hostport: "192.0.2.1:20002"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := e.bind(t, acct, ts.ID, tc.params)
			want := tc.want
			want.ID, want.URI = got.ID, endpointsBaseURL+"endpoints/"+got.ID
			want.AccountID, want.Region, want.CreatedAt, want.UpdatedAt = acct, "eu", at, at
			want.PublicURL, want.Scheme, want.Type = want.URL, want.Proto, agents.EndpointType
			want.UpstreamURL, want.TunnelSession, want.Node = "app://laptop/server?pid=1234", sessionRef, e.node
			want.Bindings = []string{agents.BindingPublic}
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("BindEndpoint (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(got.ID, agents.EndpointPrefix) || len(got.ID) != len(agents.EndpointPrefix)+27 {
				t.Errorf("endpoint ID %q", got.ID)
			}
			if h, err := e.svc.Host().Tunnels().GetEndpoint(e.ctx, acct, got.ID); err != nil || !cmp.Equal(&want, h) {
				t.Errorf("TunnelHost.GetEndpoint (%v): %s", err, cmp.Diff(&want, h))
			}
			// The API shows neither the account nor passthrough nor the
			// credential.
			api, err := e.svc.GetEndpoint(e.ctx, e.bot, got.ID)
			if err != nil || !cmp.Equal(&want, api) {
				t.Errorf("GetEndpoint (%v): %s", err, cmp.Diff(&want, api))
			}
			b, _ := json.Marshal(api)
			var obj map[string]any
			json.Unmarshal(b, &obj)
			for _, hidden := range []string{"account_id", "passthrough_tls", "credential", "credential_id"} {
				if _, ok := obj[hidden]; ok {
					t.Errorf("the API shows %s: %s", hidden, b)
				}
			}
			if strings.Contains(string(b), cred.ID) {
				t.Errorf("the API shows the credential: %s", b)
			}
		})
	}

	// Another account sees nothing of them.
	page, err := e.svc.ListEndpoints(e.ctx, e.user, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 6 {
		t.Fatalf("ListEndpoints: %v, %v", page, err)
	}
	if page.URI != endpointsBaseURL+"endpoints" || page.NextPageURI != nil {
		t.Errorf("list uri %q, next %v", page.URI, page.NextPageURI)
	}
	id := page.Items[0].ID
	_, err = e.svc.GetEndpoint(e.ctx, e.other, id)
	wantNotFoundNaming(t, err, id)
	_, err = e.svc.Host().Tunnels().GetEndpoint(e.ctx, e.other.AccountID, id)
	wantNotFoundNaming(t, err, id)
	if page, err := e.svc.ListEndpoints(e.ctx, e.other, edgeplane.ListOptions{}); err != nil || len(page.Items) != 0 {
		t.Errorf("another account lists %+v, %v", page, err)
	}
	for _, bad := range []string{"ep_bad", "", ts.ID} {
		_, err := e.svc.GetEndpoint(e.ctx, e.user, bad)
		wantCode(t, err, apierr.NotFound)
		_, err = e.svc.Host().Tunnels().GetEndpoint(e.ctx, acct, bad)
		wantCode(t, err, apierr.NotFound)
	}
	// Filtered on the fields the API shows.
	page, err = e.svc.ListEndpoints(e.ctx, e.user, edgeplane.ListOptions{Filter: `obj.proto == "tcp"`})
	if err != nil || len(page.Items) != 2 {
		t.Errorf("tcp endpoints: %v, %v", page, err)
	}
}

// TestBindEndpointRules: every rule of a bind, each broken alone.
func TestBindEndpointRules(t *testing.T) {
	e, _ := endpointEnv(t)
	acct := e.user.AccountID
	_, open := e.token(t, e.user)
	_, restricted := e.token(t, e.user, "bind:app.example.com", "bind:*.apps.example.com", "bind:tcp.example.test:20001", "bind:edge.example.com")
	openSession, restrictedSession := e.session(t, open).ID, e.session(t, restricted).ID
	// What the rules are checked against: an endpoint and a TCP edge that
	// hold their hostports.
	e.bind(t, acct, openSession, bindParams(agents.ProtoHTTPS, "taken.apps.example.com"))
	e.reservedDomain(t, e.user, domains.CreateParams{Domain: "db.example.com"})
	if _, err := e.svc.CreateTCPEdge(e.ctx, e.user, edges.CreateTCPEdgeParams{Hostports: []string{"db.example.com:20050"}}); err != nil {
		t.Fatal(err)
	}

	with := func(p agents.EndpointParams, f func(*agents.EndpointParams)) agents.EndpointParams {
		f(&p)
		return p
	}
	https := bindParams(agents.ProtoHTTPS, "a.apps.example.com")
	tcp := bindParams(agents.ProtoTCP, "tcp.example.test:20001")
	for _, tc := range []struct {
		name       string
		restricted bool // bound with the restricted credential
		params     agents.EndpointParams
		code       apierr.Code // 0: bound
		field      string      // the violation's field, for InvalidArgument
		parts      []string    // what the message names
	}{
		{name: "an unknown proto", params: with(https, func(p *agents.EndpointParams) { p.Proto = "ssh" }), code: apierr.InvalidArgument, field: "Proto", parts: []string{"http, https, tcp or tls"}},
		{name: "no domain", params: bindParams(agents.ProtoHTTPS, ""), code: apierr.InvalidArgument, field: "Domain", parts: []string{"required"}},
		{name: "a malformed domain", params: bindParams(agents.ProtoTLS, "no_underscores.example.com"), code: apierr.InvalidArgument, field: "Domain"},
		{name: "an address for https", params: with(https, func(p *agents.EndpointParams) { p.Addr = "x:1" }), code: apierr.InvalidArgument, field: "Addr"},
		{name: "a domain for tcp", params: with(tcp, func(p *agents.EndpointParams) { p.Domain = "app.example.com" }), code: apierr.InvalidArgument, field: "Domain"},
		{name: "passthrough for https", params: with(https, func(p *agents.EndpointParams) { p.PassthroughTLS = true }), code: apierr.InvalidArgument, field: "PassthroughTLS"},
		{name: "metadata too long", params: with(https, func(p *agents.EndpointParams) { p.Metadata = strings.Repeat("m", agents.MaxMetadataBytes+1) }), code: apierr.InvalidArgument, field: "Metadata", parts: []string{"4096"}},
		{name: "a description too long", params: with(https, func(p *agents.EndpointParams) { p.Description = strings.Repeat("d", 256) }), code: apierr.InvalidArgument, field: "Description", parts: []string{"255"}},
		{name: "forwards_to not UTF-8", params: with(https, func(p *agents.EndpointParams) { p.ForwardsTo = "\xff" }), code: apierr.InvalidArgument, field: "ForwardsTo", parts: []string{"UTF-8"}},
		{name: "a malformed ID", params: with(https, func(p *agents.EndpointParams) { p.ID = "tn_1" }), code: apierr.InvalidArgument, field: "ID", parts: []string{"not an endpoint ID"}},
		{name: "an invalid traffic policy", params: with(https, func(p *agents.EndpointParams) { p.TrafficPolicy = `{"inbound":[{"expressions":["nope("]}]}` }),
			code: apierr.InvalidArgument, field: "TrafficPolicy.inbound[0].expressions[0]"},
		{name: "an HTTP policy on tcp", params: with(tcp, func(p *agents.EndpointParams) {
			p.Addr = "tcp.example.test:20003"
			p.TrafficPolicy = `{"on_http_request":[{"actions":[{"type":"deny"}]}]}`
		}), code: apierr.InvalidArgument, field: "TrafficPolicy.on_http_request", parts: []string{"HTTP policies"}},
		{name: "a policy naming a missing IP policy", params: with(https, func(p *agents.EndpointParams) {
			p.TrafficPolicy = `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["ipp_0ERXRgyLSiGx770M6iHOif8EUPf"]}}]}]}`
		}), code: apierr.InvalidArgument, field: "TrafficPolicy.inbound[0].actions[0].config.ip_policies", parts: []string{"not found"}},

		{name: "a domain the ACL names", restricted: true, params: bindParams(agents.ProtoHTTPS, "app.example.com")},
		{name: "a domain the ACL's wildcard covers", restricted: true, params: https},
		{name: "a domain outside the ACL", restricted: true, params: bindParams(agents.ProtoHTTPS, "x.edge.example.com"),
			code: apierr.PermissionDenied, parts: []string{"x.edge.example.com", "bind:x.edge.example.com or bind:*.edge.example.com"}},
		{name: "a wildcard domain outside the ACL", restricted: true, params: bindParams(agents.ProtoHTTPS, "*.example.com"),
			code: apierr.PermissionDenied, parts: []string{"bind:*.example.com"}},
		{name: "an address the ACL names", restricted: true, params: tcp},
		{name: "an address outside the ACL", restricted: true, params: bindParams(agents.ProtoTCP, "tcp.example.test:20002"),
			code: apierr.PermissionDenied, parts: []string{"tcp.example.test:20002", "bind:tcp.example.test:20002"}},
		{name: "a picked port, restricted", restricted: true, params: bindParams(agents.ProtoTCP, ""),
			code: apierr.PermissionDenied, parts: []string{"permits everything", "bind:<host>:<port>"}},

		{name: "a domain not reserved", params: bindParams(agents.ProtoHTTPS, "nobody.example.com"),
			code: apierr.FailedPrecondition, parts: []string{"nobody.example.com", "not a reserved domain", "reserve it"}},
		{name: "a domain another account reserved", params: bindParams(agents.ProtoTLS, "theirs.example.com"),
			code: apierr.FailedPrecondition, parts: []string{"theirs.example.com", "not a reserved domain"}},
		{name: "a name below a wildcard's level", params: bindParams(agents.ProtoHTTPS, "a.b.apps.example.com"),
			code: apierr.FailedPrecondition, parts: []string{"a.b.apps.example.com"}},
		{name: "an HTTPS edge's hostport", params: bindParams(agents.ProtoHTTPS, "edge.example.com"),
			code: apierr.Conflict, parts: []string{"edge.example.com:443", "edge or an agent's endpoint"}},
		{name: "tls on an HTTPS edge's hostport", params: bindParams(agents.ProtoTLS, "edge.example.com"),
			code: apierr.Conflict, parts: []string{"edge.example.com:443"}},
		{name: "http beside an HTTPS edge", params: bindParams(agents.ProtoHTTP, "edge.example.com")},
		{name: "another endpoint's hostport", params: bindParams(agents.ProtoTLS, "taken.apps.example.com"),
			code: apierr.Conflict, parts: []string{"taken.apps.example.com:443"}},
		{name: "a TCP edge's port", params: bindParams(agents.ProtoTCP, "other.example.test:20050"),
			code: apierr.Conflict, parts: []string{"other.example.test:20050", "port"}},
		{name: "a port below the range", params: bindParams(agents.ProtoTCP, "tcp.example.test:19999"),
			code: apierr.InvalidArgument, field: "Addr", parts: []string{"20000 to 20099"}},
		{name: "a port above the range", params: bindParams(agents.ProtoTCP, "tcp.example.test:20100"),
			code: apierr.InvalidArgument, field: "Addr"},
		{name: "a malformed address", params: bindParams(agents.ProtoTCP, "tcp.example.test"), code: apierr.InvalidArgument, field: "Addr"},
		{name: "a wildcard address", params: bindParams(agents.ProtoTCP, "*.example.test:20004"), code: apierr.InvalidArgument, field: "Addr"},
		{name: "a server without TCP ports", params: with(tcp, func(p *agents.EndpointParams) { p.TCPLow, p.TCPHigh = 0, 0 }),
			code: apierr.FailedPrecondition, parts: []string{"serves no TCP ports"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess := openSession
			if tc.restricted {
				sess = restrictedSession
			}
			before := e.revision(t)
			ep, err := e.svc.Host().Tunnels().BindEndpoint(e.ctx, acct, sess, tc.params)
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if err := e.svc.Host().Tunnels().UnbindEndpoint(e.ctx, acct, ep.ID); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantCode(t, err, tc.code)
			if tc.field != "" {
				wantViolation(t, err, tc.field, "")
			}
			for _, p := range tc.parts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q does not name %q", err, p)
				}
			}
			if after := e.revision(t); after != before {
				t.Errorf("a refused bind wrote %d records", after-before)
			}
		})
	}
}

// TestBindEndpointSessions: a bind needs a live session of the account.
func TestBindEndpointSessions(t *testing.T) {
	e, _ := endpointEnv(t)
	_, token := e.token(t, e.user)
	ts := e.session(t, token)
	params := bindParams(agents.ProtoHTTPS, "app.example.com")
	_, err := e.svc.Host().Tunnels().BindEndpoint(e.ctx, e.other.AccountID, ts.ID, params)
	wantNotFoundNaming(t, err, ts.ID)
	_, err = e.svc.Host().Tunnels().BindEndpoint(e.ctx, e.user.AccountID, "ts_nope", params)
	wantCode(t, err, apierr.NotFound)
	e.clock.Advance(edgeplane.DefaultTunnelLease)
	_, err = e.svc.Host().Tunnels().BindEndpoint(e.ctx, e.user.AccountID, ts.ID, params)
	wantCode(t, err, apierr.FailedPrecondition)
}

// TestBindEndpointFreePort: a tcp endpoint without an address gets a
// free port of the range; none free is resource exhausted.
func TestBindEndpointFreePort(t *testing.T) {
	e := newEnv(t)
	_, token := e.token(t, e.user, "*")
	acct := e.user.AccountID
	ts := e.session(t, token)
	tiny := bindParams(agents.ProtoTCP, "")
	tiny.TCPHost, tiny.TCPLow, tiny.TCPHigh = "TCP.example.test", 30000, 30002
	// One port of the range is a TCP edge's.
	e.reservedDomain(t, e.user, domains.CreateParams{Domain: "db.example.com"})
	if _, err := e.svc.CreateTCPEdge(e.ctx, e.user, edges.CreateTCPEdgeParams{Hostports: []string{"db.example.com:30001"}}); err != nil {
		t.Fatal(err)
	}
	var ports []int64
	for range 2 {
		ep := e.bind(t, acct, ts.ID, tiny)
		if ep.Host != "tcp.example.test" || ep.URL != "tcp://tcp.example.test:"+strconv.FormatInt(ep.Port, 10) {
			t.Errorf("a picked port's endpoint: %+v", ep)
		}
		ports = append(ports, ep.Port)
	}
	slices.Sort(ports)
	if !slices.Equal(ports, []int64{30000, 30002}) {
		t.Errorf("picked ports %v, want 30000 and 30002 (30001 is an edge's)", ports)
	}
	_, err := e.svc.Host().Tunnels().BindEndpoint(e.ctx, acct, ts.ID, tiny)
	wantCode(t, err, apierr.ResourceExhausted)
	if !strings.Contains(err.Error(), "30000 to 30002") {
		t.Errorf("exhaustion %q does not name the range", err)
	}
	// Named, a port of the range is taken like any other.
	_, err = e.svc.Host().Tunnels().BindEndpoint(e.ctx, acct, ts.ID, with(tiny, "tcp.example.test:30000"))
	wantConflictNaming(t, err, "tcp.example.test:30000")
	// A port freed is picked again.
	page, err := e.svc.ListEndpoints(e.ctx, e.user, edgeplane.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Host().Tunnels().UnbindEndpoint(e.ctx, acct, page.Items[0].ID); err != nil {
		t.Fatal(err)
	}
	if ep := e.bind(t, acct, ts.ID, tiny); ep.Port != page.Items[0].Port {
		t.Errorf("picked %d, want the freed %d", ep.Port, page.Items[0].Port)
	}
	err = e.svc.Host().Tunnels().UnbindEndpoint(e.ctx, acct, page.Items[0].ID)
	wantNotFoundNaming(t, err, page.Items[0].ID)
}

// with returns p with the address addr.
func with(p agents.EndpointParams, addr string) agents.EndpointParams {
	p.Addr = addr
	return p
}

// TestRebindEndpoint: an agent that reconnects binds its endpoint again
// under the ID it was given, in its new session.
func TestRebindEndpoint(t *testing.T) {
	e, _ := endpointEnv(t)
	acct := e.user.AccountID
	_, token := e.token(t, e.user)
	first := e.session(t, token)
	params := bindParams(agents.ProtoHTTPS, "app.example.com")
	ep := e.bind(t, acct, first.ID, params)
	picked := e.bind(t, acct, first.ID, bindParams(agents.ProtoTCP, ""))

	e.clock.Advance(10 * time.Second)
	second := e.session(t, token)
	params.ID = ep.ID
	// Without TakeOver (the agent's token is too old) the endpoint stays
	// with the session that holds it.
	_, err := e.svc.Host().Tunnels().BindEndpoint(e.ctx, acct, second.ID, params)
	wantCode(t, err, apierr.FailedPrecondition)
	if !strings.Contains(err.Error(), first.ID) {
		t.Fatalf("a rebind without TakeOver of an endpoint another session holds: %v; want it to name %s", err, first.ID)
	}
	if got, err := e.svc.Host().Tunnels().GetEndpoint(e.ctx, acct, ep.ID); err != nil || got.TunnelSession.ID != first.ID || !got.UpdatedAt.Equal(ep.UpdatedAt) {
		t.Fatalf("after the refused rebind: %+v, %v; want it unchanged", got, err)
	}
	params.TakeOver = true
	again := e.bind(t, acct, second.ID, params)
	if again.ID != ep.ID || again.URL != ep.URL || !again.CreatedAt.Equal(ep.CreatedAt) || !again.UpdatedAt.Equal(ep.UpdatedAt.Add(10*time.Second)) {
		t.Errorf("rebound %+v; want the ID, URL and created_at of %+v, updated 10s later", again, ep)
	}
	if again.TunnelSession.ID != second.ID {
		t.Errorf("rebound in session %s, want %s", again.TunnelSession.ID, second.ID)
	}
	// A tcp endpoint whose port the server picked keeps it.
	tcp := bindParams(agents.ProtoTCP, "")
	tcp.ID, tcp.TakeOver = picked.ID, true
	if got := e.bind(t, acct, second.ID, tcp); got.URL != picked.URL {
		t.Errorf("rebound tcp endpoint at %s, want %s", got.URL, picked.URL)
	}
	// The old session's close leaves them: they are the new session's.
	if err := e.svc.Host().Tunnels().CloseTunnelSession(e.ctx, acct, first.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{ep.ID, picked.ID} {
		if got, err := e.svc.Host().Tunnels().GetEndpoint(e.ctx, acct, id); err != nil || got.TunnelSession.ID != second.ID {
			t.Errorf("after the old session closed: %+v, %v", got, err)
		}
	}

	// Another credential of the account, or another account, cannot
	// take it over.
	_, otherToken := e.token(t, e.user)
	thief := e.session(t, otherToken)
	_, err = e.svc.Host().Tunnels().BindEndpoint(e.ctx, acct, thief.ID, params)
	wantCode(t, err, apierr.PermissionDenied)
	if !strings.Contains(err.Error(), ep.ID) {
		t.Errorf("error %q does not name the endpoint", err)
	}
	_, theirToken := e.token(t, e.other)
	theirs := e.session(t, theirToken)
	_, err = e.svc.Host().Tunnels().BindEndpoint(e.ctx, e.other.AccountID, theirs.ID, bindParams(agents.ProtoTCP, ""))
	if err != nil {
		t.Fatal(err) // a tcp endpoint of b's own: b may bind
	}
	theft := bindParams(agents.ProtoTCP, "")
	theft.ID = ep.ID
	_, err = e.svc.Host().Tunnels().BindEndpoint(e.ctx, e.other.AccountID, theirs.ID, theft)
	wantCode(t, err, apierr.PermissionDenied)
	if got, err := e.svc.Host().Tunnels().GetEndpoint(e.ctx, acct, ep.ID); err != nil || got.TunnelSession.ID != second.ID || got.URL != ep.URL {
		t.Errorf("after refused takeovers: %+v, %v", got, err)
	}

	// Gone (its session reaped), it is bound anew under its ID.
	if err := e.svc.Host().Tunnels().CloseTunnelSession(e.ctx, acct, second.ID); err != nil {
		t.Fatal(err)
	}
	third := e.session(t, token)
	back := e.bind(t, acct, third.ID, params)
	if back.ID != ep.ID || back.URL != ep.URL || back.TunnelSession.ID != third.ID {
		t.Errorf("bound anew: %+v", back)
	}
}

// TestEndpointsGoWithTheirSession: closing the session, reaping it or
// deleting its credential removes its endpoints; the reserved domain of
// an online endpoint cannot be released.
func TestEndpointsGoWithTheirSession(t *testing.T) {
	e, _ := endpointEnv(t)
	acct := e.user.AccountID
	gone := func(t *testing.T, ids ...string) {
		t.Helper()
		for _, id := range ids {
			_, err := e.svc.Host().Tunnels().GetEndpoint(e.ctx, acct, id)
			wantNotFoundNaming(t, err, id)
		}
	}
	t.Run("closed", func(t *testing.T) {
		_, token := e.token(t, e.user)
		ts := e.session(t, token)
		a := e.bind(t, acct, ts.ID, bindParams(agents.ProtoHTTPS, "app.example.com"))
		b := e.bind(t, acct, ts.ID, bindParams(agents.ProtoTCP, ""))
		if err := e.svc.Host().Tunnels().CloseTunnelSession(e.ctx, acct, ts.ID); err != nil {
			t.Fatal(err)
		}
		gone(t, a.ID, b.ID)
		e.bind(t, acct, e.session(t, token).ID, bindParams(agents.ProtoHTTPS, "app.example.com")) // the hostport is free
	})
	t.Run("credential deleted", func(t *testing.T) {
		cred, token := e.token(t, e.user)
		ep := e.bind(t, acct, e.session(t, token).ID, bindParams(agents.ProtoTLS, "y.apps.example.com"))
		if err := e.svc.DeleteCredential(e.ctx, e.user, cred.ID); err != nil {
			t.Fatal(err)
		}
		gone(t, ep.ID)
	})
	t.Run("reaped", func(t *testing.T) {
		_, token := e.token(t, e.user)
		ep := e.bind(t, acct, e.session(t, token).ID, bindParams(agents.ProtoTLS, "z.apps.example.com"))
		e.clock.Advance(2 * edgeplane.DefaultTunnelLease)
		if _, err := e.svc.Host().ReapTunnels(e.ctx, 100); err != nil {
			t.Fatal(err)
		}
		gone(t, ep.ID)
		e.node = "" // reaped with its sessions: the next session registers another
	})
	t.Run("domain in use", func(t *testing.T) {
		_, token := e.token(t, e.user)
		d := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "busy.example.com"})
		ep := e.bind(t, acct, e.session(t, token).ID, bindParams(agents.ProtoHTTPS, "busy.example.com"))
		err := e.svc.DeleteReservedDomain(e.ctx, e.user, d.ID)
		wantConflictNaming(t, err, ep.ID)
		if err := e.svc.Host().Tunnels().UnbindEndpoint(e.ctx, acct, ep.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.svc.DeleteReservedDomain(e.ctx, e.user, d.ID); err != nil {
			t.Fatalf("the domain of an unbound endpoint: %v", err)
		}
	})
}

// TestHostListEndpoints: every account's endpoints, newest first, paged.
func TestHostListEndpoints(t *testing.T) {
	e, _ := endpointEnv(t)
	_, a := e.token(t, e.user)
	_, b := e.token(t, e.other)
	sa, sb := e.session(t, a), e.session(t, b)
	var want []string
	for i := range 3 {
		e.clock.Advance(time.Second)
		want = append([]string{e.bind(t, e.user.AccountID, sa.ID, bindParams(agents.ProtoTCP, "")).ID}, want...)
		e.clock.Advance(time.Second)
		theirs := bindParams(agents.ProtoHTTPS, "theirs.example.com")
		if i > 0 {
			theirs = bindParams(agents.ProtoTCP, "")
		}
		want = append([]string{e.bind(t, e.other.AccountID, sb.ID, theirs).ID}, want...)
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		list, next, err := e.svc.Host().DataPlane().ListEndpoints(e.ctx, edgeplane.ListOptions{Limit: 4, BeforeID: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range list {
			got = append(got, ep.ID)
			if ep.AccountID == "" || ep.URI == "" || ep.URL == "" {
				t.Errorf("listed without its account, URI or URL: %+v", ep)
			}
		}
		if next == "" {
			if pages != 1 {
				t.Errorf("%d pages of 4 for 6 endpoints", pages+1)
			}
			break
		}
		cursor = next
	}
	if !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	if _, _, err := e.svc.Host().DataPlane().ListEndpoints(e.ctx, edgeplane.ListOptions{Limit: edgeplane.MaxPageSize + 1}); apierr.CodeOf(err) != apierr.InvalidArgument {
		t.Errorf("a limit above the page size: %v", err)
	}
}

func TestEndpointEventTypes(t *testing.T) {
	types := edgeplane.DefaultEventTypes()
	for _, want := range []string{"endpoint_created.v0", "endpoint_deleted.v0"} {
		if !slices.Contains(types, want) {
			t.Errorf("DefaultEventTypes lacks %s", want)
		}
	}
}

// TestBindEndpointConcurrently: agents binding one hostport at once, in
// sessions of two credentials, get it once; the others get a conflict.
// A tcp range of ports bound at once is allocated once each.
func TestBindEndpointConcurrently(t *testing.T) {
	e, _ := endpointEnv(t)
	acct := e.user.AccountID
	_, a := e.token(t, e.user)
	_, b := e.token(t, e.user)
	sessions := []string{e.session(t, a).ID, e.session(t, b).ID}
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := e.svc.Host().Tunnels().BindEndpoint(e.ctx, acct, sessions[i%2], bindParams(agents.ProtoHTTPS, "app.example.com"))
			errs <- err
		}()
	}
	bound := 0
	for range n {
		switch err := <-errs; apierr.CodeOf(err) {
		case 0:
			bound++
		case apierr.Conflict:
		default:
			t.Errorf("a concurrent bind: %v", err)
		}
	}
	if bound != 1 {
		t.Errorf("%d binds of one hostport succeeded, want 1", bound)
	}

	tiny := bindParams(agents.ProtoTCP, "")
	tiny.TCPLow, tiny.TCPHigh = 30000, 30007
	ports := make(chan int64, n)
	for i := range n {
		go func() {
			ep, err := e.svc.Host().Tunnels().BindEndpoint(e.ctx, acct, sessions[i%2], tiny)
			switch {
			case err == nil:
				ports <- ep.Port
			case apierr.CodeOf(err) == apierr.ResourceExhausted:
				ports <- 0
			default:
				t.Errorf("a concurrent bind of a picked port: %v", err)
				ports <- 0
			}
		}()
	}
	seen := map[int64]bool{}
	for range n {
		if p := <-ports; p != 0 {
			if seen[p] {
				t.Errorf("port %d picked twice", p)
			}
			seen[p] = true
		}
	}
	if len(seen) != 8 {
		t.Errorf("%d ports of 8 picked by %d binds", len(seen), n)
	}
}
