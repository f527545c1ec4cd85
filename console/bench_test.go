package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/ipaccess"
)

// BenchmarkCredentialsPage renders the credentials page (its first page
// of 100, newest first, with the create form) for an account with 1,000
// credentials: the whole request, from the session cookie's lookup and
// the key's authentication to the page's last byte. Target: 50 ms.
func BenchmarkCredentialsPage(b *testing.B) {
	s := newServer(b, console.Options{})
	ctx := context.Background()
	for i := range 1000 {
		if _, err := s.svc.CreateCredential(ctx, s.a.p, credentials.CreateParams{Description: fmt.Sprintf("agent %d", i),
			ACL: []string{"bind:*.example.com", "bind:app=web"}}); err != nil {
			b.Fatal(err)
		}
	}
	benchPage(b, s, "/console/credentials", "agent 999")
}

// benchPage measures GET path of the console for account a of s, a page
// that must contain want: the whole request, from the session cookie's
// lookup and the key's authentication to the page's last byte.
func benchPage(b *testing.B, s *server, path, want string) {
	b.Helper()
	h, err := console.New(s.svc, console.Options{})
	if err != nil {
		b.Fatal(err)
	}
	cookie := signInHandler(b, h, s.a.key)
	req := httptest.NewRequest("GET", path, nil)
	req.RemoteAddr = "192.0.2.1:1234"
	req.AddCookie(cookie)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), want) {
			b.Fatalf("%d, want 200 with %q", w.Code, want)
		}
	}
}

// BenchmarkEndpointsPage renders the endpoints page (its first 100, each
// with its agent's session) for an account with 1,000 endpoints, bound
// by 10 agents. Target: 50 ms.
func BenchmarkEndpointsPage(b *testing.B) {
	s := newServer(b, console.Options{})
	bindEndpoints(b, s, 1000)
	benchPage(b, s, "/console/endpoints", "app999.example.com")
}

// BenchmarkOverviewPage renders the overview (the newest 50 tunnel
// sessions and 50 endpoints: what its live stream reads and renders
// again at each change) for an account with 1,000 endpoints, bound by 10
// agents. Target: 50 ms.
func BenchmarkOverviewPage(b *testing.B) {
	s := newServer(b, console.Options{})
	bindEndpoints(b, s, 1000)
	benchPage(b, s, "/console/", "app999.example.com")
}

// bindEndpoints binds n https endpoints in account a of s, 100 per
// tunnel session.
func bindEndpoints(b *testing.B, s *server, n int) {
	b.Helper()
	ctx := context.Background()
	if _, err := s.svc.CreateReservedDomain(ctx, s.a.p, domains.CreateParams{Domain: "*.example.com"}); err != nil {
		b.Fatal(err)
	}
	c, err := s.svc.CreateCredential(ctx, s.a.p, credentials.CreateParams{})
	if err != nil {
		b.Fatal(err)
	}
	tunnels := s.svc.Host().Tunnels()
	node, err := tunnels.RegisterNode(ctx, agents.NodeParams{})
	if err != nil {
		b.Fatal(err)
	}
	var ts *agents.TunnelSession
	for i := range n {
		if i%100 == 0 {
			if ts, err = tunnels.OpenTunnelSession(ctx, *c.Token, agents.SessionParams{AgentVersion: "3.18.4", OS: "linux/amd64",
				IP: netip.MustParseAddr("203.0.113.7"), Node: node.ID}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := tunnels.BindEndpoint(ctx, s.a.p.AccountID, ts.ID, agents.EndpointParams{Proto: "https", Domain: fmt.Sprintf("app%d.example.com", i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// signInHandler signs in to h with key, directly, and returns the
// session cookie.
func signInHandler(tb testing.TB, h http.Handler, key string) *http.Cookie {
	tb.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/console/signin", nil))
	form := csrfField.FindStringSubmatch(w.Body.String())
	pre := w.Result().Cookies()
	req := httptest.NewRequest("POST", "/console/signin", strings.NewReader(url.Values{"csrf": {form[1]}, "api_key": {key}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range pre {
		req.AddCookie(c)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	io.Copy(io.Discard, w.Body)
	for _, c := range w.Result().Cookies() {
		if c.Name == "ep_console" && c.Value != "" {
			return c
		}
	}
	tb.Fatalf("no session: %d %s", w.Code, w.Body)
	return nil
}

// BenchmarkReservedDomainsPage renders the reserved domains page (its
// first 100, each with its certificate's status and DNS records, and the
// create form) for an account with 1,000 reserved domains, half of them
// with certificate management. Target: 50 ms.
func BenchmarkReservedDomainsPage(b *testing.B) {
	s := newServer(b, console.Options{})
	ctx := context.Background()
	for i := range 1000 {
		p := domains.CreateParams{Domain: fmt.Sprintf("app%d.example.com", i)}
		if i%2 == 0 {
			p.CertificateManagementPolicy = &domains.CertPolicyParams{Authority: domains.AuthorityLetsEncrypt}
		}
		if _, err := s.svc.CreateReservedDomain(ctx, s.a.p, p); err != nil {
			b.Fatal(err)
		}
	}
	benchPage(b, s, "/console/reserved_domains", "app999.example.com")
}

// BenchmarkEdgesPage renders each edge list page (its first 100, with
// the create form) for an account with 1,000 edges of that type, TLS
// edges with a traffic policy. Target: 50 ms.
func BenchmarkEdgesPage(b *testing.B) {
	kinds := []struct {
		name   string
		create func(s *server, i int) error
	}{
		{"https", func(s *server, i int) error {
			_, err := s.svc.CreateHTTPSEdge(context.Background(), s.a.p, edges.CreateEdgeParams{Description: fmt.Sprintf("edge %d", i)})
			return err
		}},
		{"tls", func(s *server, i int) error {
			_, err := s.svc.CreateTLSEdge(context.Background(), s.a.p, edges.CreateTLSEdgeParams{Description: fmt.Sprintf("edge %d", i),
				TrafficPolicy: &edges.TrafficPolicyParams{Value: `{"on_tcp_connect": [{"expressions": ["conn.client_ip == '192.0.2.1'"], "actions": [{"type": "deny"}]}]}`}})
			return err
		}},
		{"tcp", func(s *server, i int) error {
			_, err := s.svc.CreateTCPEdge(context.Background(), s.a.p, edges.CreateTCPEdgeParams{Description: fmt.Sprintf("edge %d", i)})
			return err
		}},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			s := newServer(b, console.Options{})
			for i := range 1000 {
				if err := k.create(s, i); err != nil {
					b.Fatal(err)
				}
			}
			benchPage(b, s, "/console/edges/"+k.name, "edge 999")
		})
	}
}

// BenchmarkRoutesPage renders an HTTPS edge's page (the edge, its
// routes, each with a traffic policy, and the route form) for an edge
// with 100 routes: an edge has at most edges.MaxRoutesPerEdge (100), so
// 1,000 cannot be. Target: 50 ms.
func BenchmarkRoutesPage(b *testing.B) {
	s := newServer(b, console.Options{})
	ctx := context.Background()
	e, err := s.svc.CreateHTTPSEdge(ctx, s.a.p, edges.CreateEdgeParams{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range edges.MaxRoutesPerEdge {
		if _, err := s.svc.CreateHTTPSEdgeRoute(ctx, s.a.p, e.ID, edges.CreateRouteParams{MatchType: "path_prefix", Match: fmt.Sprintf("/r%d", i),
			TrafficPolicy: &edges.TrafficPolicyParams{Value: `{"on_http_request": [{"actions": [{"type": "deny", "config": {"status_code": 404}}]}]}`}}); err != nil {
			b.Fatal(err)
		}
	}
	benchPage(b, s, "/console/edges/https/"+e.ID, "/r99")
}

// BenchmarkIPPoliciesPage renders the IP policies page for an account
// with 1,000 IP policies. Target: 50 ms.
func BenchmarkIPPoliciesPage(b *testing.B) {
	s := newServer(b, console.Options{})
	for i := range 1000 {
		if _, err := s.svc.CreateIPPolicy(context.Background(), s.a.p, ipaccess.CreatePolicyParams{Description: fmt.Sprintf("policy %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	benchPage(b, s, "/console/ip_policies", "policy 999")
}

// BenchmarkIPPolicyRulesPage renders the IP policy rules page for an
// account with 1,000 rules (one policy's most,
// ipaccess.MaxRulesPerPolicy). Target: 50 ms.
func BenchmarkIPPolicyRulesPage(b *testing.B) {
	s := newServer(b, console.Options{})
	ctx := context.Background()
	pol, err := s.svc.CreateIPPolicy(ctx, s.a.p, ipaccess.CreatePolicyParams{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range ipaccess.MaxRulesPerPolicy {
		if _, err := s.svc.CreateIPPolicyRule(ctx, s.a.p, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256),
			Action: ipaccess.ActionAllow, Description: fmt.Sprintf("rule %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	benchPage(b, s, "/console/ip_policy_rules", "rule 999")
}

// BenchmarkIPRestrictionsPage renders the IP restrictions page for an
// account with 100 restrictions, each of 10 policies: an account has at
// most ipaccess.MaxRestrictionsPerAccount (100), so 1,000 cannot be.
// Target: 50 ms.
func BenchmarkIPRestrictionsPage(b *testing.B) {
	s := newServer(b, console.Options{})
	ctx := context.Background()
	var ids []string
	for range 10 {
		pol, err := s.svc.CreateIPPolicy(ctx, s.a.p, ipaccess.CreatePolicyParams{})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, pol.ID)
	}
	for i := range ipaccess.MaxRestrictionsPerAccount {
		if _, err := s.svc.CreateIPRestriction(ctx, s.a.p, ipaccess.CreateRestrictionParams{Type: ipaccess.TypeEndpoints, IPPolicyIDs: ids,
			Description: fmt.Sprintf("restriction %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	benchPage(b, s, "/console/ip_restrictions", "restriction 99")
}

// BenchmarkEventDestinationsPage renders the event destinations page,
// each with its delivery state, for an account with 100 destinations:
// an account has at most events.MaxDestinationsPerAccount (100), so
// 1,000 cannot be. Target: 50 ms.
func BenchmarkEventDestinationsPage(b *testing.B) {
	s := newServer(b, console.Options{})
	for i := range events.MaxDestinationsPerAccount {
		if _, err := s.svc.CreateEventDestination(context.Background(), s.a.p, events.CreateDestinationParams{Description: fmt.Sprintf("destination %d", i),
			Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: fmt.Sprintf("https://192.0.2.10/hook/%d", i)}}}); err != nil {
			b.Fatal(err)
		}
	}
	benchPage(b, s, "/console/event_destinations", "destination 99")
}

// BenchmarkAPIKeysPage renders the API keys page, as an admin sees it,
// for an account with 1,000 API keys. Target: 50 ms.
func BenchmarkAPIKeysPage(b *testing.B) {
	s := newServer(b, console.Options{})
	for i := range 1000 {
		if _, err := s.svc.CreateAPIKey(context.Background(), s.a.p, identity.CreateAPIKeyParams{Description: fmt.Sprintf("key %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	benchPage(b, s, "/console/api_keys", "key 999")
}

// BenchmarkTunnelSessionsPage renders the tunnel sessions page for an
// account with 1,000 agents connected (the account's limit raised to
// 1,000 from 200; 40 credentials' worth, one authtoken holding at most
// 50). Target: 50 ms.
func BenchmarkTunnelSessionsPage(b *testing.B) {
	s := newServer(b, console.Options{}, func(o *edgeplane.Options) { o.AgentLimits.SessionsPerAccount = 1000 })
	ctx := context.Background()
	tunnels := s.svc.Host().Tunnels()
	node, err := tunnels.RegisterNode(ctx, agents.NodeParams{})
	if err != nil {
		b.Fatal(err)
	}
	var c *credentials.Credential
	for i := range 1000 {
		if i%25 == 0 {
			if c, err = s.svc.CreateCredential(ctx, s.a.p, credentials.CreateParams{}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := tunnels.OpenTunnelSession(ctx, *c.Token, agents.SessionParams{AgentVersion: fmt.Sprintf("3.18.%d", i), OS: "linux/amd64",
			IP: netip.MustParseAddr("203.0.113.7"), Node: node.ID}); err != nil {
			b.Fatal(err)
		}
	}
	benchPage(b, s, "/console/tunnel_sessions", "3.18.999")
}

// BenchmarkBackendsPage renders the backends page (the first page of the
// list, each with its labels and online tunnels, and the create form)
// for an account with 1,000 tunnel group backends. Target: 50 ms.
func BenchmarkBackendsPage(b *testing.B) {
	s := newServer(b, console.Options{})
	for i := range 1000 {
		if _, err := s.svc.CreateTunnelGroupBackend(context.Background(), s.a.p, backends.CreateParams{
			Labels: map[string]string{"app": fmt.Sprintf("app-%d", i), "env": "prod"}, Description: fmt.Sprintf("backend %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	benchPage(b, s, "/console/backends", "backend 999")
}

// BenchmarkEventSubscriptionsPage renders the subscriptions page (the
// first page of the list, each with its sources and destinations, and
// the create form with the event types) for an account with 1,000
// subscriptions. Target: 50 ms.
func BenchmarkEventSubscriptionsPage(b *testing.B) {
	s := newServer(b, console.Options{})
	ctx := context.Background()
	dest, err := s.svc.CreateEventDestination(ctx, s.a.p, events.CreateDestinationParams{
		Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: "https://192.0.2.10/hook"}}})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		if _, err := s.svc.CreateEventSubscription(ctx, s.a.p, events.CreateSubscriptionParams{Description: fmt.Sprintf("subscription %d", i),
			DestinationIDs: []string{dest.ID}, Sources: []events.CreateSourceParams{{Type: "credential_created.v0"}, {Type: "ip_policy_created.v0"}}}); err != nil {
			b.Fatal(err)
		}
	}
	benchPage(b, s, "/console/event_subscriptions", "subscription 999")
}

// BenchmarkTLSCertificatesPage renders the TLS certificates page (the
// first page of the list and the upload form) for an account with 1,000
// uploaded certificates. Target: 50 ms.
func BenchmarkTLSCertificatesPage(b *testing.B) {
	s := newServer(b, console.Options{})
	certPEM, keyPEM := selfSigned(b, "app.example.com")
	for i := range 1000 {
		if _, err := s.svc.CreateTLSCertificate(context.Background(), s.a.p, domains.CreateCertificateParams{CertificatePEM: certPEM, PrivateKeyPEM: keyPEM,
			Description: fmt.Sprintf("certificate %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	benchPage(b, s, "/console/tls_certificates", "certificate 999")
}

// BenchmarkBotUsersPage renders the bot users page (the first page of the
// list and the create form) for an account with 1,000 bots. Target:
// 50 ms.
func BenchmarkBotUsersPage(b *testing.B) {
	s := newServer(b, console.Options{})
	for i := range 1000 {
		if _, err := s.svc.CreateBotUser(context.Background(), s.a.p, identity.CreateBotUserParams{Name: fmt.Sprintf("bot %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	benchPage(b, s, "/console/bot_users", "bot 999")
}
