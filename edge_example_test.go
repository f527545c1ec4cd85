package edgeplane_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/policy"
)

// An edge proxy loads everything it applies to a TLS edge in one call: the
// IP restriction, the compiled traffic policy and the TLS termination.
func ExampleHost_DataPlane_tlsEdgeConfig() {
	ctx := context.Background()
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{BaseURL: "https://api.example.com"})
	if err != nil {
		log.Fatal(err)
	}
	acct, _ := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "acme"})
	admin, _ := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "ada", Admin: true})
	p := edgeplane.Principal{AccountID: acct.ID, SubjectID: admin.ID, Admin: true}

	// Management calls: an IP policy, a TLS edge and three modules.
	office, _ := svc.CreateIPPolicy(ctx, p, ipaccess.CreatePolicyParams{Description: "office"})
	svc.CreateIPPolicyRule(ctx, p, ipaccess.CreateRuleParams{IPPolicyID: office.ID, CIDR: "203.0.113.0/24", Action: "allow"})
	edge, _ := svc.CreateTLSEdge(ctx, p, edges.CreateTLSEdgeParams{Description: "postgres"})
	svc.ReplaceTLSEdgeIPRestriction(ctx, p, edge.ID, edges.IPRestrictionParams{IPPolicyIDs: []string{office.ID}})
	tp, err := svc.ReplaceTLSEdgeTrafficPolicy(ctx, p, edge.ID, edges.TrafficPolicyParams{Value: `{
	  "inbound": [{
	    "name": "no lab machines",
	    "expressions": ["inCidrRange(conn.client_ip, '203.0.113.128/25')"],
	    "actions": [{"type": "deny"}]
	  }]
	}`})
	if err != nil {
		panic(err)
	}
	fmt.Println("stored:", tp.Value)
	svc.ReplaceTLSEdgeTLSTermination(ctx, p, edge.ID, edges.TLSTerminationParams{MinVersion: nil})

	// The edge proxy's call: a host operation, by account.
	cfg, err := svc.Host().DataPlane().TLSEdgeConfig(ctx, acct.ID, edge.ID)
	if err != nil {
		panic(err)
	}
	fmt.Printf("terminate at %s, minimum TLS version 0x%04x\n", cfg.TerminateAt, cfg.MinVersion)
	for _, ip := range []string{"203.0.113.7", "203.0.113.200", "192.0.2.1"} {
		addr := netip.MustParseAddr(ip)
		if !cfg.IPRestriction.Allowed(addr) {
			fmt.Println(ip, "refused by the IP restriction")
			continue
		}
		res := cfg.TrafficPolicy.Connect(&policy.Conn{ClientAddr: netip.AddrPortFrom(addr, 51000)}, time.Now())
		fmt.Println(ip, "traffic policy:", res.Verdict)
	}
	// Output:
	// stored: {"inbound":[{"name":"no lab machines","expressions":["inCidrRange(conn.client_ip, '203.0.113.128/25')"],"actions":[{"type":"deny"}]}]}
	// terminate at edge, minimum TLS version 0x0303
	// 203.0.113.7 traffic policy: continue
	// 203.0.113.200 traffic policy: close
	// 192.0.2.1 refused by the IP restriction
}

// An HTTPS edge proxy loads every route of an edge with its modules and
// picks the route of each request by path.
func ExampleHost_DataPlane_httpsEdgeConfig() {
	ctx := context.Background()
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{})
	if err != nil {
		log.Fatal(err)
	}
	acct, _ := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "acme"})
	user, _ := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "ada"})
	p := edgeplane.Principal{AccountID: acct.ID, SubjectID: user.ID}

	edge, _ := svc.CreateHTTPSEdge(ctx, p, edges.CreateEdgeParams{})
	site, _ := svc.CreateHTTPSEdgeRoute(ctx, p, edge.ID, edges.CreateRouteParams{MatchType: "path_prefix", Match: "/"})
	admin, _ := svc.CreateHTTPSEdgeRoute(ctx, p, edge.ID, edges.CreateRouteParams{MatchType: "path_prefix", Match: "/admin/"})
	svc.ReplaceHTTPSRouteCompression(ctx, p, edge.ID, site.ID, edges.CompressionParams{})
	svc.ReplaceHTTPSRouteOIDC(ctx, p, edge.ID, admin.ID, edges.OIDCParams{
		Issuer: "https://accounts.example.com", ClientID: "admin-ui", ClientSecret: "s3cret", Scopes: []string{"openid", "email"},
	})
	headers, _ := svc.ReplaceHTTPSRouteResponseHeaders(ctx, p, edge.ID, admin.ID, edges.ResponseHeadersParams{
		Add: map[string]string{"X-Frame-Options": "DENY"}, Remove: []string{"Server"},
	})
	fmt.Println("stored header names:", headers.Add, headers.Remove)

	cfg, _ := svc.Host().DataPlane().HTTPSEdgeConfig(ctx, acct.ID, edge.ID)
	for _, path := range []string{"/index.html", "/admin/users"} {
		r := cfg.Route(path)
		fmt.Printf("%s: route %s, compression %v, oidc %v\n", path, r.Match, r.Compression, r.OIDC != nil)
	}
	oidc := cfg.Route("/admin/").OIDC
	fmt.Println("session cookie prefix:", oidc.CookiePrefix)
	// Output:
	// stored header names: map[x-frame-options:DENY] [server]
	// /index.html: route /, compression true, oidc false
	// /admin/users: route /admin/, compression false, oidc true
	// session cookie prefix: service.
}

// A route's traffic policy runs on HTTP requests, so it can hold the
// rate-limit action. The edge proxy gets it compiled, scoped to the route:
// reloading the route's config keeps the counts.
func ExampleHost_DataPlane_httpsRouteConfig() {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{Clock: func() time.Time { return now }})
	if err != nil {
		log.Fatal(err)
	}
	acct, _ := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "acme"})
	user, _ := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "ada"})
	p := edgeplane.Principal{AccountID: acct.ID, SubjectID: user.ID}

	edge, _ := svc.CreateHTTPSEdge(ctx, p, edges.CreateEdgeParams{})
	api, _ := svc.CreateHTTPSEdgeRoute(ctx, p, edge.ID, edges.CreateRouteParams{MatchType: "path_prefix", Match: "/api/"})
	tp, err := svc.ReplaceHTTPSRouteTrafficPolicy(ctx, p, edge.ID, api.ID, edges.TrafficPolicyParams{Value: `{
	  "on_http_request": [{
	    "name": "two a minute",
	    "actions": [{"type": "rate-limit", "config": {
	      "name": "per client", "algorithm": "sliding_window",
	      "capacity": 2, "rate": "60s", "bucket_key": ["conn.client_ip"]}}]
	  }]
	}`})
	if err != nil {
		panic(err)
	}
	fmt.Println("stored:", tp.Value)

	cfg, err := svc.Host().DataPlane().HTTPSRouteConfig(ctx, acct.ID, edge.ID, api.ID)
	if err != nil {
		panic(err)
	}
	client := policy.Conn{ClientAddr: netip.MustParseAddrPort("192.0.2.1:51000")}
	for i := range 3 {
		res := cfg.TrafficPolicy.Inbound(&policy.Request{Method: "GET", Host: "app.example.com", Path: "/api/users", Conn: client, Time: now})
		fmt.Printf("request %d: %s %d, retry-after given: %v\n", i+1, res.Verdict, res.StatusCode, res.Header.Get("Retry-After") != "")
	}
	// Output:
	// stored: {"on_http_request":[{"name":"two a minute","actions":[{"type":"rate-limit","config":{"name":"per client","algorithm":"sliding_window","capacity":2,"rate":"60s","bucket_key":["conn.client_ip"]}}]}]}
	// request 1: continue 0, retry-after given: false
	// request 2: continue 0, retry-after given: false
	// request 3: respond 429, retry-after given: true
}
