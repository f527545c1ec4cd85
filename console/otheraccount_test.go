package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/ipaccess"
)

// TestOtherAccountPages: for every kind of page, another account's
// resource IDs typed into console URLs answer not found, the forms on
// them change nothing, and no list shows them.
func TestOtherAccountPages(t *testing.T) {
	s := newServer(t, console.Options{})
	ctx := context.Background()
	bp := s.b.p
	_, ep := s.openSession(s.b, "b.example.com")
	dom, err := s.svc.CreateReservedDomain(ctx, bp, domains.CreateParams{Domain: "bb.example.com", Description: "secret-b"})
	must(t, err)
	https, err := s.svc.CreateHTTPSEdge(ctx, bp, edges.CreateEdgeParams{Description: "secret-b"})
	must(t, err)
	route, err := s.svc.CreateHTTPSEdgeRoute(ctx, bp, https.ID, edges.CreateRouteParams{MatchType: "path_prefix", Match: "/", Description: "secret-b"})
	must(t, err)
	tls, err := s.svc.CreateTLSEdge(ctx, bp, edges.CreateTLSEdgeParams{Description: "secret-b"})
	must(t, err)
	tcp, err := s.svc.CreateTCPEdge(ctx, bp, edges.CreateTCPEdgeParams{Description: "secret-b"})
	must(t, err)
	pol, err := s.svc.CreateIPPolicy(ctx, bp, ipaccess.CreatePolicyParams{Description: "secret-b"})
	must(t, err)
	rule, err := s.svc.CreateIPPolicyRule(ctx, bp, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "192.0.2.0/24", Action: "allow", Description: "secret-b"})
	must(t, err)
	x, err := s.svc.CreateIPRestriction(ctx, bp, ipaccess.CreateRestrictionParams{Type: "endpoints", IPPolicyIDs: []string{pol.ID}, Description: "secret-b"})
	must(t, err)
	dest, err := s.svc.CreateEventDestination(ctx, bp, events.CreateDestinationParams{Description: "secret-b",
		Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: "https://192.0.2.10/b"}}})
	must(t, err)
	key, err := s.svc.CreateAPIKey(ctx, bp, identity.CreateAPIKeyParams{Description: "secret-b"})
	must(t, err)
	bk, err := s.svc.CreateTunnelGroupBackend(ctx, bp, backends.CreateParams{Labels: map[string]string{"app": "b"}, Description: "secret-b"})
	must(t, err)
	ownBackend, err := s.svc.CreateTunnelGroupBackend(ctx, s.a.p, backends.CreateParams{Labels: map[string]string{"app": "a"}})
	must(t, err)
	ownPolicy, err := s.svc.CreateIPPolicy(ctx, s.a.p, ipaccess.CreatePolicyParams{})
	must(t, err)

	br := s.browser(t)
	token := br.signIn(s.a.key)
	pages := []struct {
		page   string // the resource's page
		forms  []string
		exists func() error // the resource is still there, unchanged
	}{
		{"/console/endpoints/" + ep.ID, nil, func() error { _, err := s.svc.GetEndpoint(ctx, bp, ep.ID); return err }},
		{"/console/reserved_domains/" + dom.ID, []string{"/delete"}, func() error { _, err := s.svc.GetReservedDomain(ctx, bp, dom.ID); return err }},
		{"/console/edges/https/" + https.ID, []string{"/delete", "/routes"}, func() error {
			page, err := s.svc.ListHTTPSEdgeRoutes(ctx, bp, https.ID, edgeplaneListAll)
			if err == nil && len(page.Items) != 1 {
				t.Errorf("the edge has %d routes", len(page.Items))
			}
			return err
		}},
		{"/console/edges/https/" + https.ID + "/routes/" + route.ID, []string{"/delete", "/traffic_policy", "/traffic_policy/delete", "/backend", "/backend/delete"}, func() error {
			r, err := s.svc.GetHTTPSEdgeRoute(ctx, bp, https.ID, route.ID)
			if err == nil && (r.TrafficPolicy != nil || r.Backend != nil) {
				t.Error("another account's route got a traffic policy or a backend")
			}
			return err
		}},
		{"/console/edges/tls/" + tls.ID, []string{"/delete", "/traffic_policy", "/traffic_policy/delete", "/backend", "/backend/delete", "/ip_restriction", "/ip_restriction/delete"}, func() error {
			e, err := s.svc.GetTLSEdge(ctx, bp, tls.ID)
			if err == nil && (e.TrafficPolicy != nil || e.Backend != nil || e.IPRestriction != nil) {
				t.Error("another account's TLS edge got a traffic policy, a backend or an IP restriction")
			}
			return err
		}},
		{"/console/edges/tcp/" + tcp.ID, []string{"/delete", "/backend", "/backend/delete", "/ip_restriction", "/ip_restriction/delete"}, func() error {
			e, err := s.svc.GetTCPEdge(ctx, bp, tcp.ID)
			if err == nil && (e.Backend != nil || e.IPRestriction != nil) {
				t.Error("another account's TCP edge got a backend or an IP restriction")
			}
			return err
		}},
		{"/console/backends/" + bk.ID, []string{"/delete", "/edit"}, func() error { _, err := s.svc.GetTunnelGroupBackend(ctx, bp, bk.ID); return err }},
		{"/console/ip_policies/" + pol.ID, []string{"/delete"}, func() error { _, err := s.svc.GetIPPolicy(ctx, bp, pol.ID); return err }},
		{"/console/ip_policy_rules/" + rule.ID, []string{"/delete"}, func() error { _, err := s.svc.GetIPPolicyRule(ctx, bp, rule.ID); return err }},
		{"/console/ip_restrictions/" + x.ID, []string{"/delete"}, func() error { _, err := s.svc.GetIPRestriction(ctx, bp, x.ID); return err }},
		{"/console/event_destinations/" + dest.ID, []string{"/delete"}, func() error { _, err := s.svc.GetEventDestination(ctx, bp, dest.ID); return err }},
		{"/console/api_keys/" + key.ID, []string{"/delete"}, func() error { _, err := s.svc.GetAPIKey(ctx, bp, key.ID); return err }},
	}
	form := url.Values{"csrf": {token}, "value": {`{"inbound": [{"actions": [{"type": "deny"}]}]}`}, "enabled": {"on"},
		"match_type": {"path_prefix"}, "match": {"/x"}, "backend_id": {ownBackend.ID}, "ip_policy_ids": {ownPolicy.ID}}
	for _, p := range pages {
		got := br.get(p.page)
		if got.status != http.StatusNotFound || strings.Contains(got.body, "secret-b") {
			t.Errorf("GET %s: %d, want 404 showing nothing of it", p.page, got.status)
		}
		for _, f := range p.forms {
			if got := br.post(p.page+f, form); got.status != http.StatusNotFound {
				t.Errorf("POST %s%s: %d, want 404: %s", p.page, f, got.status, got.body)
			}
		}
		if p.exists != nil {
			if err := p.exists(); err != nil {
				t.Errorf("%s: %v", p.page, err)
			}
		}
	}

	// A's own edge with b's route ID, and a's forms naming b's IDs.
	own, err := s.svc.CreateHTTPSEdge(ctx, s.a.p, edges.CreateEdgeParams{})
	must(t, err)
	if got := br.get("/console/edges/https/" + own.ID + "/routes/" + route.ID); got.status != http.StatusNotFound {
		t.Errorf("b's route under a's edge: %d, want 404", got.status)
	}
	if got := br.post("/console/ip_policy_rules", url.Values{"csrf": {token}, "ip_policy_id": {pol.ID}, "cidr": {"198.51.100.0/24"}, "action": {"allow"}}); got.status == http.StatusSeeOther {
		t.Errorf("a rule added to b's policy: %d", got.status)
	}
	if got := br.post("/console/ip_restrictions", url.Values{"csrf": {token}, "type": {"endpoints"}, "ip_policy_ids": {pol.ID}}); got.status == http.StatusSeeOther {
		t.Errorf("a restriction of b's policy: %d", got.status)
	}
	if got := br.post("/console/ip_policy_rules", url.Values{"csrf": {token}, "back": {"policy"}, "ip_policy_id": {pol.ID}, "cidr": {"198.51.100.0/24"}, "action": {"allow"}}); got.status == http.StatusSeeOther || strings.Contains(got.body, "secret-b") {
		t.Errorf("a rule added to b's policy from its page: %d", got.status)
	}
	rules, err := s.svc.ListIPPolicyRules(ctx, bp, edgeplaneListAll)
	must(t, err)
	if len(rules.Items) != 1 {
		t.Errorf("b's policy has %d rules", len(rules.Items))
	}

	// The edit forms of b's resources, a credential's among them, and
	// turning b's domain's certificate management off.
	if got := br.post("/console/edges/https/"+own.ID+"/routes/"+route.ID+"/edit", url.Values{"csrf": {token}, "description": {"mine"}}); got.status != http.StatusNotFound {
		t.Errorf("editing b's route under a's edge: %d, want 404", got.status)
	}
	cred, err := s.svc.CreateCredential(ctx, bp, credentials.CreateParams{Description: "secret-b"})
	must(t, err)
	managed, err := s.svc.CreateReservedDomain(ctx, bp, domains.CreateParams{Domain: "managed-b.example.com",
		CertificateManagementPolicy: &domains.CertPolicyParams{Authority: domains.AuthorityLetsEncrypt}})
	must(t, err)
	edits := []struct {
		page, form string
		values     url.Values
		snap       func() string
	}{
		{"/console/credentials/" + cred.ID, "/edit", url.Values{"description": {"mine"}, "acl": {"bind:a.example.com"}}, func() string {
			c, err := s.svc.GetCredential(ctx, bp, cred.ID)
			must(t, err)
			return fmt.Sprint(c.Description, c.ACL)
		}},
		{"/console/reserved_domains/" + managed.ID, "/certificate_management_policy/delete", nil, func() string {
			d, err := s.svc.GetReservedDomain(ctx, bp, managed.ID)
			must(t, err)
			return fmt.Sprint(d.CertificateManagementPolicy != nil)
		}},
	}
	for _, k := range editKinds() {
		r := k.make(t, s, s.b)
		edits = append(edits, struct {
			page, form string
			values     url.Values
			snap       func() string
		}{r.page, "/edit", k.good, r.snap})
	}
	for _, e := range edits {
		before := e.snap()
		if got := br.get(e.page); got.status != http.StatusNotFound || strings.Contains(got.body, "secret-b") {
			t.Errorf("GET %s: %d, want 404 showing nothing of it", e.page, got.status)
		}
		form := url.Values{"csrf": {token}}
		for k, v := range e.values {
			form[k] = v
		}
		if got := br.post(e.page+e.form, form); got.status != http.StatusNotFound {
			t.Errorf("POST %s%s: %d, want 404: %s", e.page, e.form, got.status, got.body)
		}
		if after := e.snap(); after != before {
			t.Errorf("POST %s%s changed b's %q to %q", e.page, e.form, before, after)
		}
	}

	for _, path := range s.listPaths() {
		got := br.get(path)
		for _, id := range []string{ep.ID, dom.ID, https.ID, tls.ID, tcp.ID, pol.ID, rule.ID, x.ID, dest.ID, key.ID, "secret-b"} {
			if strings.Contains(got.body, id) {
				t.Errorf("%s shows %s of another account", path, id)
			}
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
