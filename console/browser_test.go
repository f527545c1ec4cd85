package console_test

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/browsertest"
	"github.com/edgeplane/edgeplane/ipaccess"
)

// The browser tests drive a real headless Chromium (Debian's chromium
// package; EDGEPLANE_CHROMIUM names another binary) through the console.
// They skip when there is none; .ci/run installs it.

var screenshots = flag.String("screenshots", "", "write a PNG of each page the browser tests visit into this `directory`")

// newTab starts a headless Chromium (internal/browsertest) with a fresh
// profile and returns a tab's context, bounded by timeout.
func newTab(t *testing.T, timeout time.Duration) context.Context {
	return browsertest.NewTab(t, timeout, 1024, 768)
}

// do runs steps in the tab, failing t with what for context.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// shot writes a PNG of the tab's viewport as DIR/name.png when
// -screenshots DIR is given.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	browsertest.Shot(t, ctx, *screenshots, name)
}

// TestBrowser walks the console in a real browser, each step on the
// state the last one left: sign in; an invalid credential shows the
// API's message at its field; a credential's token is shown once, then
// not after a reload; an agent's session and endpoint appear on the
// overview without a reload, and the page fits a phone's width; a
// session is stopped; sign out; a dashboard IP restriction locks the
// console.
func TestBrowser(t *testing.T) {
	s := newServer(t, console.Options{PollInterval: time.Hour}) // only the change feed makes the overview live
	ctx := newTab(t, 120*time.Second)
	base := s.srv.URL

	t.Run("sign in", func(t *testing.T) {
		do(t, ctx, "the sign-in page", chromedp.Navigate(base+"/console/"), chromedp.WaitVisible("#api_key"))
		shot(t, ctx, "signin")
		do(t, ctx, "sign in", chromedp.SendKeys("#api_key", s.a.key), chromedp.Submit("#api_key"),
			chromedp.WaitVisible("#live"))
		if loc := run(t, ctx, "location", chromedp.Location()); loc != base+"/console/" {
			t.Errorf("after signing in at %s, want the overview", loc)
		}
	})

	t.Run("credential violations at their field", func(t *testing.T) {
		do(t, ctx, "the credentials page", chromedp.Navigate(base+"/console/credentials"), chromedp.WaitVisible("#acl"),
			chromedp.SendKeys("#acl", "not-a-rule"), chromedp.Submit("#acl"), chromedp.WaitVisible("#acl-error"))
		msg := run(t, ctx, "the ACL's error", chromedp.Text("#acl-error"))
		if !strings.HasPrefix(msg, "line 1 (not-a-rule): must be") {
			t.Errorf("the ACL's error says %q", msg)
		}
		shot(t, ctx, "credentials-invalid")
	})

	t.Run("token shown once", func(t *testing.T) {
		do(t, ctx, "create", chromedp.Navigate(base+"/console/credentials"), chromedp.WaitVisible("#description"),
			chromedp.SendKeys("#description", "laptop"), chromedp.SendKeys("#acl", "bind:*.example.com"),
			chromedp.Submit("#description"), chromedp.WaitVisible("#token"))
		token := run(t, ctx, "the token", chromedp.Value("#token"))
		command := run(t, ctx, "the command", chromedp.Value("#command"))
		if !strings.HasPrefix(token, "ept_") || command != "edgeplane agent config add-authtoken "+token {
			t.Errorf("token %q, command %q", token, command)
		}
		shot(t, ctx, "credential-created")
		do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible("#token-gone"))
		if html := run(t, ctx, "the page", chromedp.Evaluate[string]("document.body.innerHTML")); strings.Contains(html, token) {
			t.Error("the token is shown again after a reload")
		}
		shot(t, ctx, "credential")

		// Edit its ACL: one bad rule's message at its line, nothing saved;
		// then a good ACL, saved and shown.
		loc := run(t, ctx, "the credential's URL", chromedp.Location())
		id := loc[strings.LastIndex(loc, "/")+1:]
		do(t, ctx, "a bad ACL", chromedp.SetValue("#acl", "bind:*.example.com\nnot-a-rule"),
			chromedp.Submit("#acl"), chromedp.WaitVisible("#acl-error"))
		if msg := run(t, ctx, "the ACL's error", chromedp.Text("#acl-error")); !strings.Contains(msg, "line 2 (not-a-rule)") {
			t.Errorf("the ACL's error %q does not name line 2", msg)
		}
		shot(t, ctx, "credential-edit-invalid")
		if c, err := s.svc.GetCredential(ctx, s.a.p, id); err != nil || len(c.ACL) != 1 || c.ACL[0] != "bind:*.example.com" {
			t.Fatalf("after a bad edit: %v, %v", c, err)
		}
		do(t, ctx, "a good ACL", chromedp.SetValue("#acl", "bind:*.example.com\nbind:app.example.net"),
			chromedp.Submit("#acl"), chromedp.WaitVisible(`//dd/code[text()="bind:app.example.net"]`))
		if c, err := s.svc.GetCredential(ctx, s.a.p, id); err != nil || len(c.ACL) != 2 || c.ACL[1] != "bind:app.example.net" {
			t.Fatalf("after a good edit: %v, %v", c, err)
		}
		shot(t, ctx, "credential-edited")
	})

	t.Run("live overview", func(t *testing.T) {
		do(t, ctx, "the overview", chromedp.Navigate(base+"/console/"), chromedp.WaitVisible("#live"))
		run(t, ctx, "mark the page", chromedp.Evaluate[bool]("window.notReloaded = true"))
		do(t, ctx, "live", chromedp.WaitVisible(`//*[@id="live-state" and text()="Live."]`))
		ts, ep := s.openSession(s.a, "app.example.com")
		do(t, ctx, "the endpoint appears", chromedp.WaitVisible(`//table[@id="endpoints"]//td[contains(., "`+ep.URL+`")]`),
			chromedp.WaitVisible(`//table[@id="sessions"]//code[text()="`+ts.ID+`"]`))
		if !run(t, ctx, "no reload", chromedp.Evaluate[bool]("window.notReloaded === true")) {
			t.Error("the page was reloaded")
		}
		shot(t, ctx, "overview")
		do(t, ctx, "phone width", chromedp.EmulateViewport(390, 844))
		if !run(t, ctx, "fits", chromedp.Evaluate[bool]("document.documentElement.scrollWidth <= window.innerWidth")) {
			t.Error("the overview is wider than a phone's window")
		}
		shot(t, ctx, "overview-phone")
		do(t, ctx, "desktop width", chromedp.EmulateViewport(1024, 768))
	})

	t.Run("stop a session", func(t *testing.T) {
		do(t, ctx, "stop", chromedp.Navigate(base+"/console/tunnel_sessions"), chromedp.WaitVisible("#tunnel-sessions"),
			chromedp.Click(`//button[text()="Stop"]`), chromedp.WaitVisible(".notice"))
		if n := run(t, ctx, "stopping", chromedp.Evaluate[int]("document.querySelectorAll('#tunnel-sessions .tag').length")); n != 1 {
			t.Errorf("%d sessions marked stopping, want 1", n)
		}
		shot(t, ctx, "tunnel-sessions")
	})

	t.Run("reserved domain and its DNS records", func(t *testing.T) {
		do(t, ctx, "reserve", chromedp.Navigate(base+"/console/reserved_domains"), chromedp.WaitVisible("#domain"),
			chromedp.SendKeys("#domain", "*.example.org"), chromedp.Click(`//form[@id="create-domain"]//button[@type="submit"]`),
			chromedp.WaitVisible("#dns-records"))
		records := run(t, ctx, "the records", chromedp.Text("#dns-records"))
		for _, want := range []string{"*.example.org", "_acme-challenge.example.org", "CNAME", ".acme.edgeplane-cname.com"} {
			if !strings.Contains(records, want) {
				t.Errorf("the DNS records lack %q: %s", want, records)
			}
		}
		if status := run(t, ctx, "the certificate", chromedp.Text("#certificate")); !strings.Contains(status, "provisioning") {
			t.Errorf("the certificate's status: %s", status)
		}
		shot(t, ctx, "reserved-domain")
		do(t, ctx, "delete", chromedp.Click("#delete"), chromedp.WaitVisible(`//p[@class="notice" and starts-with(., "Deleted")]`))
		if notice := run(t, ctx, "the notice", chromedp.Text(".notice")); !strings.HasPrefix(notice, "Deleted reserved domain rd_") {
			t.Errorf("the notice says %q", notice)
		}
		if html := run(t, ctx, "the list", chromedp.Evaluate[string]("document.querySelector('main').innerHTML")); strings.Contains(html, "example.org") {
			t.Error("the deleted domain is still listed")
		}
		shot(t, ctx, "reserved-domains")
	})

	t.Run("traffic policy editor", func(t *testing.T) {
		bctx := context.Background()
		e, err := s.svc.CreateHTTPSEdge(bctx, s.a.p, edges.CreateEdgeParams{Description: "web"})
		if err != nil {
			t.Fatal(err)
		}
		rt, err := s.svc.CreateHTTPSEdgeRoute(bctx, s.a.p, e.ID, edges.CreateRouteParams{MatchType: "path_prefix", Match: "/api"})
		if err != nil {
			t.Fatal(err)
		}
		bad := "{\n  \"on_http_request\": [\n    {\n      \"actions\": [\n        {\"type\": \"deny\",\n         \"config\": {\"status_code\": 200}}\n      ]\n    }\n  ]\n}"
		do(t, ctx, "a refused policy", chromedp.Navigate(base+"/console/edges/https/"+e.ID+"/routes/"+rt.ID), chromedp.WaitVisible("#value"),
			chromedp.SetValue("#value", bad), chromedp.Click("#save-policy"), chromedp.WaitVisible("#value-error"))
		msg := run(t, ctx, "the error", chromedp.Text("#value-error"))
		if !strings.Contains(msg, "line 6 (on_http_request[0].actions[0].config.status_code): must be between 400 and 599, got 200") {
			t.Errorf("the editor's error says %q", msg)
		}
		if !run(t, ctx, "next to the editor", chromedp.Evaluate[bool](`(function () {
			var v = document.getElementById("value");
			return v.nextElementSibling.id === "value-error" && v.getAttribute("aria-describedby") === "value-error" && v.getAttribute("aria-invalid") === "true";
		})()`)) {
			t.Error("the error is not next to the editor, or the editor does not point to it")
		}
		do(t, ctx, "go to the line", chromedp.Click(`#value-error button.goto`))
		if line := run(t, ctx, "the selection", chromedp.Evaluate[string](`(function () {
			var v = document.getElementById("value");
			return document.activeElement === v ? v.value.substring(v.selectionStart, v.selectionEnd) : "not focused";
		})()`)); line != `         "config": {"status_code": 200}}` {
			t.Errorf("the button selects %q, want line 6", line)
		}
		if kept := run(t, ctx, "the text kept", chromedp.Value("#value")); kept != strings.ReplaceAll(bad, "\\n", "\n") {
			t.Errorf("the editor holds %q, not the text typed", kept)
		}
		if _, err := s.svc.GetHTTPSRouteTrafficPolicy(bctx, s.a.p, e.ID, rt.ID); err == nil {
			t.Error("the refused policy was saved")
		}
		shot(t, ctx, "traffic-policy-error")
		good := `{"on_http_request": [{"expressions": ["req.url.path.startsWith('/api/admin')"], "actions": [{"type": "deny", "config": {"status_code": 403}}]}]}`
		do(t, ctx, "a valid policy", chromedp.SetValue("#value", good), chromedp.Click("#save-policy"), chromedp.WaitVisible(`//p[@class="notice" and starts-with(., "Saved")]`))
		if notice := run(t, ctx, "the notice", chromedp.Text(".notice")); notice != "Saved the traffic policy." {
			t.Errorf("the notice says %q", notice)
		}
		m, err := s.svc.GetHTTPSRouteTrafficPolicy(bctx, s.a.p, e.ID, rt.ID)
		if err != nil || !m.Enabled || !strings.Contains(m.Value, "/api/admin") {
			t.Fatalf("the saved policy: %+v %v", m, err)
		}
		if n := run(t, ctx, "no error", chromedp.Evaluate[int]("document.querySelectorAll('#value-error').length")); n != 0 {
			t.Error("an error is still shown after saving")
		}
		shot(t, ctx, "traffic-policy")
	})

	t.Run("every page", func(t *testing.T) {
		bctx := context.Background()
		tls, err := s.svc.CreateTLSEdge(bctx, s.a.p, edges.CreateTLSEdgeParams{Description: "mail"})
		if err != nil {
			t.Fatal(err)
		}
		pol, err := s.svc.CreateIPPolicy(bctx, s.a.p, ipaccess.CreatePolicyParams{Description: "office"})
		if err != nil {
			t.Fatal(err)
		}
		rule, err := s.svc.CreateIPPolicyRule(bctx, s.a.p, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "198.51.100.0/24", Action: "allow"})
		if err != nil {
			t.Fatal(err)
		}
		x, err := s.svc.CreateIPRestriction(bctx, s.a.p, ipaccess.CreateRestrictionParams{Type: "endpoints", IPPolicyIDs: []string{pol.ID}})
		if err != nil {
			t.Fatal(err)
		}
		https, err := s.svc.CreateHTTPSEdge(bctx, s.a.p, edges.CreateEdgeParams{Description: "web"})
		if err != nil {
			t.Fatal(err)
		}
		tcp, err := s.svc.CreateTCPEdge(bctx, s.a.p, edges.CreateTCPEdgeParams{Description: "ssh"})
		if err != nil {
			t.Fatal(err)
		}
		keys, err := s.svc.ListAPIKeys(bctx, s.a.p, edgeplaneListAll)
		if err != nil || len(keys.Items) == 0 {
			t.Fatal(keys, err)
		}
		dest, err := s.svc.CreateEventDestination(bctx, s.a.p, events.CreateDestinationParams{Description: "ops",
			Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: "https://192.0.2.10/hook"}}})
		if err != nil {
			t.Fatal(err)
		}
		bk, err := s.svc.CreateTunnelGroupBackend(bctx, s.a.p, backends.CreateParams{Labels: map[string]string{"app": "web"}, Description: "web app"})
		if err != nil {
			t.Fatal(err)
		}
		sub, err := s.svc.CreateEventSubscription(bctx, s.a.p, events.CreateSubscriptionParams{Description: "ops", DestinationIDs: []string{dest.ID},
			Sources: []events.CreateSourceParams{{Type: "credential_created.v0"}}})
		if err != nil {
			t.Fatal(err)
		}
		bot, err := s.svc.CreateBotUser(bctx, s.a.p, identity.CreateBotUserParams{Name: "deploys"})
		if err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM := selfSigned(t, "mail.example.com")
		cert, err := s.svc.CreateTLSCertificate(bctx, s.a.p, domains.CreateCertificateParams{CertificatePEM: certPEM, PrivateKeyPEM: keyPEM, Description: "mail"})
		if err != nil {
			t.Fatal(err)
		}
		_, ep := s.openSession(s.a, "tour.example.com")
		pages := map[string]string{
			"bot-user": "/console/bot_users/" + bot.ID, "tls-certificate": "/console/tls_certificates/" + cert.ID,
			"endpoint": "/console/endpoints/" + ep.ID, "tunnel-sessions": "/console/tunnel_sessions",
			"backends": "/console/backends", "backend": "/console/backends/" + bk.ID,
			"tls-certificates": "/console/tls_certificates", "bot-users": "/console/bot_users",
			"event-subscriptions": "/console/event_subscriptions", "event-subscription": "/console/event_subscriptions/" + sub.ID,
			"endpoints": "/console/endpoints", "edges-https": "/console/edges/https", "edges-tls": "/console/edges/tls",
			"edges-tcp": "/console/edges/tcp", "edge-tls": "/console/edges/tls/" + tls.ID, "ip-policies": "/console/ip_policies",
			"ip-policy": "/console/ip_policies/" + pol.ID, "ip-policy-rules": "/console/ip_policy_rules", "ip-restrictions": "/console/ip_restrictions",
			"event-destinations": "/console/event_destinations", "event-destination": "/console/event_destinations/" + dest.ID,
			"api-keys": "/console/api_keys", "credentials": "/console/credentials",
			"edge-https": "/console/edges/https/" + https.ID, "edge-tcp": "/console/edges/tcp/" + tcp.ID,
			"ip-policy-rule": "/console/ip_policy_rules/" + rule.ID, "ip-restriction": "/console/ip_restrictions/" + x.ID,
			"api-key": "/console/api_keys/" + keys.Items[0].ID,
		}
		for name, path := range pages {
			do(t, ctx, name, chromedp.Navigate(base+path), chromedp.WaitVisible("main h1"))
			if n := run(t, ctx, "errors", chromedp.Evaluate[int]("document.querySelectorAll('#error-message').length")); n != 0 {
				t.Errorf("%s shows an error", path)
			}
			shot(t, ctx, name)
			do(t, ctx, "phone width", chromedp.EmulateViewport(390, 844))
			if !run(t, ctx, "fits", chromedp.Evaluate[bool]("document.documentElement.scrollWidth <= window.innerWidth")) {
				wide := run(t, ctx, "what", chromedp.Evaluate[string](`Array.from(document.querySelectorAll("body *")).filter(function (e) { return e.getBoundingClientRect().right > window.innerWidth; }).map(function (e) { return e.tagName + "#" + e.id + "." + e.className; }).join(" ")`))
				t.Errorf("%s is wider than a phone's window: %s", path, wide)
			}
			shot(t, ctx, name+"-phone")
			do(t, ctx, "desktop width", chromedp.EmulateViewport(1024, 768))
		}
	})

	t.Run("edit forms", func(t *testing.T) {
		bctx := context.Background()
		pol, err := s.svc.CreateIPPolicy(bctx, s.a.p, ipaccess.CreatePolicyParams{})
		if err != nil {
			t.Fatal(err)
		}
		rule, err := s.svc.CreateIPPolicyRule(bctx, s.a.p, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "192.0.2.0/24", Action: "allow"})
		if err != nil {
			t.Fatal(err)
		}
		do(t, ctx, "a bad CIDR", chromedp.Navigate(base+"/console/ip_policy_rules/"+rule.ID), chromedp.WaitVisible("#edit-cidr"),
			chromedp.SetValue("#edit-cidr", "192.0.2.0/33"), chromedp.SetValue("#edit-description", "office"),
			chromedp.Submit("#edit-cidr"), chromedp.WaitVisible("#cidr-error"))
		if !run(t, ctx, "next to the field", chromedp.Evaluate[bool](`(function () {
			var f = document.getElementById("edit-cidr");
			return f.nextElementSibling.id === "cidr-error" && f.getAttribute("aria-describedby") === "cidr-error" && f.value === "192.0.2.0/33";
		})()`)) {
			t.Error("the CIDR's error is not next to it, or the field lost what was typed")
		}
		shot(t, ctx, "ip-policy-rule-edit-invalid")
		if r, err := s.svc.GetIPPolicyRule(bctx, s.a.p, rule.ID); err != nil || r.CIDR != "192.0.2.0/24" || r.Description != "" {
			t.Fatalf("after a refused edit: %+v %v", r, err)
		}
		do(t, ctx, "a good edit", chromedp.SetValue("#edit-cidr", "198.51.100.0/24"), chromedp.SetValue("#edit-action", "deny"),
			chromedp.Submit("#edit-cidr"), chromedp.WaitVisible(`//p[@class="notice" and starts-with(., "Saved")]`))
		if r, err := s.svc.GetIPPolicyRule(bctx, s.a.p, rule.ID); err != nil || r.CIDR != "198.51.100.0/24" || r.Action != "deny" || r.Description != "office" {
			t.Fatalf("after the edit: %+v %v", r, err)
		}
		shot(t, ctx, "ip-policy-rule-edited")

		tcp, err := s.svc.CreateTCPEdge(bctx, s.a.p, edges.CreateTCPEdgeParams{})
		if err != nil {
			t.Fatal(err)
		}
		do(t, ctx, "an edge's IP restriction", chromedp.Navigate(base+"/console/edges/tcp/"+tcp.ID), chromedp.WaitVisible("#ip_policy_ids"),
			chromedp.SetValue("#ip_policy_ids", pol.ID), chromedp.Submit("#ip_policy_ids"),
			chromedp.WaitVisible(`//p[@class="notice" and starts-with(., "IP restriction enabled")]`))
		if e, err := s.svc.GetTCPEdge(bctx, s.a.p, tcp.ID); err != nil || e.IPRestriction == nil || !e.IPRestriction.Enabled || len(e.IPRestriction.IPPolicies) != 1 || e.IPRestriction.IPPolicies[0].ID != pol.ID {
			t.Fatalf("the TCP edge after setting its IP restriction in the browser: %+v %v", e, err)
		}
		shot(t, ctx, "edge-tcp-ip-restriction")
	})

	t.Run("sign out", func(t *testing.T) {
		do(t, ctx, "sign out", chromedp.Click("#signout"), chromedp.WaitVisible("#api_key"))
		do(t, ctx, "the overview again", chromedp.Navigate(base+"/console/"), chromedp.WaitVisible("#api_key"))
	})

	t.Run("dashboard restriction locks the console", func(t *testing.T) {
		do(t, ctx, "sign in", chromedp.SendKeys("#api_key", s.a.key), chromedp.Submit("#api_key"), chromedp.WaitVisible("#live"))
		r := s.restrictDashboard(s.a)
		do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible("#error-message"))
		msg := run(t, ctx, "the refusal", chromedp.Text("#error-message"))
		if !strings.Contains(msg, "the console refuses") || !strings.Contains(msg, r.ID) {
			t.Errorf("the page says %q", msg)
		}
		if n := run(t, ctx, "nothing else", chromedp.Evaluate[int]("document.querySelectorAll('nav, table, form').length")); n != 0 {
			t.Errorf("the refusal shows %d navigation bars, tables or forms", n)
		}
		shot(t, ctx, "denied")
	})
}
