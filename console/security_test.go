package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
)

// TestNoSession: a request without a valid session (no cookie, a forged
// or malformed one, an expired session, the session of a deleted key)
// is sent to the sign-in page, and a form sent with it changes nothing.
func TestNoSession(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, s *server, b *browser) (csrf string)
	}{
		{"no cookie", func(t *testing.T, s *server, b *browser) string { return "x" }},
		{"forged cookie", func(t *testing.T, s *server, b *browser) string {
			b.signIn(s.a.key)
			setSessionCookie(t, s, b, strings.Repeat("A", 43))
			return "x"
		}},
		{"malformed cookie", func(t *testing.T, s *server, b *browser) string {
			setSessionCookie(t, s, b, "not base64!")
			return "x"
		}},
		{"expired session", func(t *testing.T, s *server, b *browser) string {
			token := b.signIn(s.a.key)
			s.clock.Add(console.DefaultSessionLifetime)
			return token
		}},
		{"deleted key", func(t *testing.T, s *server, b *browser) string {
			token := b.signIn(s.a.key)
			keys, err := s.svc.ListAPIKeys(context.Background(), s.a.p, edgeplane.ListOptions{})
			if err != nil || len(keys.Items) != 1 {
				t.Fatalf("%v %v", keys, err)
			}
			if err := s.svc.DeleteAPIKey(context.Background(), s.a.p, keys.Items[0].ID); err != nil {
				t.Fatal(err)
			}
			return token
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, console.Options{})
			b := s.browser(t)
			token := tc.setup(t, s, b)
			for _, path := range append([]string{"/console/", "/console/credentials/cr_x", "/console/reserved_domains/rd_x"}, s.listPaths()...) {
				wantSignIn(t, b.get(path))
			}
			before := s.countCredentials(s.a)
			wantSignIn(t, b.post("/console/credentials", url.Values{"csrf": {token}, "description": {"made without a session"}}))
			if after := s.countCredentials(s.a); after != before {
				t.Errorf("credentials %d, then %d: a request without a session changed them", before, after)
			}
		})
	}
}

func setSessionCookie(t *testing.T, s *server, b *browser, value string) {
	u, _ := url.Parse(s.srv.URL + "/console/")
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "ep_console", Value: value, Path: "/console/"}})
}

// TestCSRF: a form without the session's token, with another token, or
// sent from another site is refused with 403 and changes nothing.
func TestCSRF(t *testing.T) {
	s := newServer(t, console.Options{})
	ts, _ := s.openSession(s.a, "app.example.com")
	b := s.browser(t)
	token := b.signIn(s.a.key)
	other := s.browser(t)
	otherToken := other.signIn(s.a.key)
	if otherToken == token {
		t.Fatal("two sessions have the same CSRF token")
	}
	cases := []struct {
		name string
		form url.Values
		hdr  []string
	}{
		{"no token", url.Values{}, nil},
		{"empty token", url.Values{"csrf": {""}}, nil},
		{"wrong token", url.Values{"csrf": {token[:len(token)-1] + "x"}}, nil},
		{"another session's token", url.Values{"csrf": {otherToken}}, nil},
		{"cross-site origin", url.Values{"csrf": {token}}, []string{"Origin", "https://evil.example"}},
		{"cross-site fetch", url.Values{"csrf": {token}}, []string{"Sec-Fetch-Site", "cross-site", "Origin", ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := s.countCredentials(s.a)
			form := url.Values{"description": {"csrf"}}
			for k, v := range tc.form {
				form[k] = v
			}
			if got := b.post("/console/credentials", form, tc.hdr...); got.status != http.StatusForbidden {
				t.Errorf("create credential: %d, want 403", got.status)
			}
			if after := s.countCredentials(s.a); after != before {
				t.Errorf("credentials %d, then %d", before, after)
			}
			if got := b.post("/console/tunnel_sessions/"+ts.ID+"/stop", tc.form, tc.hdr...); got.status != http.StatusForbidden {
				t.Errorf("stop: %d, want 403", got.status)
			}
			if got, _ := s.svc.GetTunnelSession(context.Background(), s.a.p, ts.ID); got.StopRequested {
				t.Error("the session was asked to stop")
			}
			if got := b.post("/console/signout", tc.form, tc.hdr...); got.status != http.StatusForbidden {
				t.Errorf("sign out: %d, want 403", got.status)
			}
			if got := b.get("/console/"); got.status != http.StatusOK {
				t.Errorf("after a refused sign-out the overview is %d, want 200", got.status)
			}
		})
	}
	t.Run("sign-in without its token", func(t *testing.T) {
		c := s.browser(t)
		if got := c.post("/console/signin", url.Values{"api_key": {s.a.key}}); got.status != http.StatusForbidden {
			t.Errorf("%d, want 403", got.status)
		}
		wantSignIn(t, c.get("/console/"))
	})
	t.Run("the right token", func(t *testing.T) {
		got := b.post("/console/tunnel_sessions/"+ts.ID+"/stop", url.Values{"csrf": {token}})
		if got.status != http.StatusSeeOther {
			t.Fatalf("%d, want 303; %s", got.status, got.body)
		}
		if got, _ := s.svc.GetTunnelSession(context.Background(), s.a.p, ts.ID); !got.StopRequested {
			t.Error("the session was not asked to stop")
		}
		if page := b.get("/console/tunnel_sessions"); !strings.Contains(page.body, "Stop requested for tunnel session "+ts.ID) {
			t.Errorf("no notice of the stop: %s", page.body)
		}
	})
}

// TestOtherAccount: another account's IDs in console URLs are not found,
// and a form on them changes nothing.
func TestOtherAccount(t *testing.T) {
	s := newServer(t, console.Options{})
	bSession, _ := s.openSession(s.b, "b.example.com")
	bCred, err := s.svc.CreateCredential(context.Background(), s.b.p, credentials.CreateParams{Description: "b's"})
	if err != nil {
		t.Fatal(err)
	}
	br := s.browser(t)
	token := br.signIn(s.a.key)
	if got := br.get("/console/credentials/" + bCred.ID); got.status != http.StatusNotFound || strings.Contains(got.body, "b&#39;s") {
		t.Errorf("another account's credential: %d, want 404; %s", got.status, got.body)
	}
	if got := br.post("/console/credentials/"+bCred.ID+"/delete", url.Values{"csrf": {token}}); got.status != http.StatusNotFound {
		t.Errorf("deleting another account's credential: %d, want 404", got.status)
	}
	if _, err := s.svc.GetCredential(context.Background(), s.b.p, bCred.ID); err != nil {
		t.Errorf("another account's credential: %v", err)
	}
	if got := br.post("/console/tunnel_sessions/"+bSession.ID+"/stop", url.Values{"csrf": {token}}); got.status != http.StatusNotFound {
		t.Errorf("stopping another account's session: %d, want 404", got.status)
	}
	if got, _ := s.svc.GetTunnelSession(context.Background(), s.b.p, bSession.ID); got.StopRequested {
		t.Error("another account's session was asked to stop")
	}
	for _, path := range []string{"/console/", "/console/tunnel_sessions", "/console/credentials"} {
		got := br.get(path)
		if strings.Contains(got.body, bSession.ID) || strings.Contains(got.body, bCred.ID) || strings.Contains(got.body, "b.example.com") {
			t.Errorf("%s shows another account's resources", path)
		}
	}
}

// TestBodyBound: a form over MaxBodyBytes gets 413 and changes nothing.
func TestBodyBound(t *testing.T) {
	s := newServer(t, console.Options{MaxBodyBytes: 1024})
	b := s.browser(t)
	token := b.signIn(s.a.key)
	got := b.post("/console/credentials", url.Values{"csrf": {token}, "metadata": {strings.Repeat("m", 2000)}})
	if got.status != http.StatusRequestEntityTooLarge {
		t.Errorf("%d, want 413", got.status)
	}
	if n := s.countCredentials(s.a); n != 0 {
		t.Errorf("%d credentials made", n)
	}
}

// TestCreateCredential: the API's violations are shown next to their
// fields with the values typed; a credential made shows its token and
// agent command once.
func TestCreateCredential(t *testing.T) {
	s := newServer(t, console.Options{})
	b := s.browser(t)
	token := b.signIn(s.a.key)

	got := b.post("/console/credentials", url.Values{"csrf": {token}, "description": {strings.Repeat("d", 256)}, "acl": {"bind:*.example.com\n\nnot-a-rule"}})
	if got.status != http.StatusBadRequest {
		t.Fatalf("%d, want 400", got.status)
	}
	for _, want := range []string{`id="description-error"`, `id="acl-error"`, "line 3 (not-a-rule): must be", `aria-invalid="true"`} {
		if !strings.Contains(got.body, want) {
			t.Errorf("the page lacks %q:\n%s", want, got.body)
		}
	}
	if n := s.countCredentials(s.a); n != 0 {
		t.Fatalf("%d credentials made by an invalid form", n)
	}

	got = b.post("/console/credentials", url.Values{"csrf": {token}, "description": {"laptop"}, "acl": {"bind:*.example.com"}})
	if got.status != http.StatusSeeOther || !strings.HasPrefix(got.location, "/console/credentials/cr_") {
		t.Fatalf("%d to %q, want 303 to the credential", got.status, got.location)
	}
	first := b.get(got.location)
	if !strings.Contains(first.body, "edgeplane agent config add-authtoken ") || !strings.Contains(first.body, `id="token"`) {
		t.Fatalf("the new credential's page does not show its token and command:\n%s", first.body)
	}
	again := b.get(got.location)
	if strings.Contains(again.body, `id="token"`) || strings.Contains(again.body, "add-authtoken") || !strings.Contains(again.body, `id="token-gone"`) {
		t.Errorf("the token is shown again:\n%s", again.body)
	}
	list := b.get("/console/credentials")
	if !strings.Contains(list.body, "laptop") {
		t.Error("the list does not show the new credential")
	}
	if del := b.post(got.location+"/delete", url.Values{"csrf": {token}}); del.status != http.StatusSeeOther || del.location != "/console/credentials" {
		t.Fatalf("delete: %d to %q", del.status, del.location)
	}
	if n := s.countCredentials(s.a); n != 0 {
		t.Errorf("%d credentials after the delete", n)
	}
}

// TestDashboardRestriction: an enforced restriction of type dashboard
// that refuses the client's address answers every page with a 403 that
// says so and shows nothing else, and refuses a sign-in.
func TestDashboardRestriction(t *testing.T) {
	s := newServer(t, console.Options{})
	s.openSession(s.a, "app.example.com")
	b := s.browser(t)
	b.signIn(s.a.key)
	r := s.restrictDashboard(s.a)
	for _, path := range append([]string{"/console/"}, s.listPaths()...) {
		got := b.get(path)
		if got.status != http.StatusForbidden || !strings.Contains(got.body, r.ID) || !strings.Contains(got.body, "the console refuses") {
			t.Errorf("%s: %d, want 403 naming %s: %s", path, got.status, r.ID, got.body)
		}
		if strings.Contains(got.body, "app.example.com") || strings.Contains(got.body, "<nav") {
			t.Errorf("%s shows more than the refusal: %s", path, got.body)
		}
	}
	c := s.browser(t)
	form := c.get("/console/signin")
	got := c.post("/console/signin", url.Values{"csrf": {csrf(t, form)}, "api_key": {s.a.key}})
	if got.status != http.StatusForbidden {
		t.Errorf("sign-in from a refused address: %d, want 403", got.status)
	}
	// Another account is not restricted.
	d := s.browser(t)
	d.signIn(s.b.key)
}

// TestSignInOut: a wrong key is refused on the sign-in page; sign-out
// ends the session (the cookie no longer works, even if kept).
func TestSignInOut(t *testing.T) {
	s := newServer(t, console.Options{})
	b := s.browser(t)
	form := b.get("/console/signin")
	got := b.post("/console/signin", url.Values{"csrf": {csrf(t, form)}, "api_key": {"epk_" + strings.Repeat("x", 40)}})
	if got.status != http.StatusUnauthorized || !strings.Contains(got.body, "the API key is missing, malformed or unknown") {
		t.Errorf("%d %s", got.status, got.body)
	}
	token := b.signIn(s.a.key)
	u, _ := url.Parse(s.srv.URL + "/console/")
	kept := b.c.Jar.Cookies(u)
	if got := b.post("/console/signout", url.Values{"csrf": {token}}); got.status != http.StatusSeeOther {
		t.Fatalf("sign out: %d", got.status)
	}
	wantSignIn(t, b.get("/console/"))
	b.c.Jar.SetCookies(u, kept)
	wantSignIn(t, b.get("/console/"))
}

// TestSessionBound: beyond MaxSessions, the session that would expire
// first ends.
func TestSessionBound(t *testing.T) {
	s := newServer(t, console.Options{MaxSessions: 2})
	first, second, third := s.browser(t), s.browser(t), s.browser(t)
	first.signIn(s.a.key)
	s.clock.Add(time.Minute)
	second.signIn(s.a.key)
	s.clock.Add(time.Minute)
	third.signIn(s.b.key)
	wantSignIn(t, first.get("/console/"))
	for _, b := range []*browser{second, third} {
		if got := b.get("/console/"); got.status != http.StatusOK {
			t.Errorf("%d, want 200", got.status)
		}
	}
}

// TestCookie: the session cookie is HttpOnly, SameSite=Strict, of the
// console's path, with the session's lifetime.
func TestCookie(t *testing.T) {
	s := newServer(t, console.Options{})
	b := s.browser(t)
	form := b.get("/console/signin")
	req, _ := http.NewRequest("POST", s.srv.URL+"/console/signin", strings.NewReader(url.Values{"csrf": {csrf(t, form)}, "api_key": {s.a.key}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var set string
	for _, v := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(v, "ep_console=") {
			set = v
		}
	}
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/console/", "Max-Age=43200"} {
		if !strings.Contains(set, want) {
			t.Errorf("Set-Cookie %q lacks %s", set, want)
		}
	}
	if strings.Contains(set, "Secure") {
		t.Errorf("Set-Cookie %q is Secure over plain HTTP", set)
	}
}

// TestCSRFPages: every new form refuses a request without its session's
// token (403) and changes nothing; so does every edit form.
func TestCSRFPages(t *testing.T) {
	s := newServer(t, console.Options{})
	ctx := context.Background()
	dom, err := s.svc.CreateReservedDomain(ctx, s.a.p, domains.CreateParams{Domain: "app.example.com"})
	must(t, err)
	tls, err := s.svc.CreateTLSEdge(ctx, s.a.p, edges.CreateTLSEdgeParams{})
	must(t, err)
	certPEM, keyPEM := selfSigned(t, "app.example.com")
	b := s.browser(t)
	b.signIn(s.a.key)
	forms := []struct {
		path string
		form url.Values
	}{
		{"/console/reserved_domains", url.Values{"domain": {"new.example.com"}}},
		{"/console/reserved_domains/" + dom.ID + "/delete", nil},
		{"/console/edges/tls", url.Values{"description": {"x"}}},
		{"/console/edges/tls/" + tls.ID + "/traffic_policy", url.Values{"value": {`{"on_tcp_connect": [{"actions": [{"type": "deny"}]}]}`}}},
		{"/console/edges/tls/" + tls.ID + "/delete", nil},
		{"/console/ip_policies", url.Values{"description": {"x"}}},
		{"/console/ip_restrictions", url.Values{"type": {"dashboard"}}},
		{"/console/event_destinations", url.Values{"url": {"https://192.0.2.10/x"}}},
		{"/console/api_keys", url.Values{"description": {"x"}}},
		{"/console/backends", url.Values{"labels": {"app=web"}}},
		{"/console/bot_users", url.Values{"name": {"x"}, "active": {"on"}}},
		{"/console/tls_certificates", url.Values{"certificate_pem": {certPEM}, "private_key_pem": {keyPEM}}},
	}
	for _, f := range forms {
		form := url.Values{"csrf": {"wrong"}}
		for k, v := range f.form {
			form[k] = v
		}
		if got := b.post(f.path, form); got.status != http.StatusForbidden {
			t.Errorf("POST %s without the token: %d, want 403", f.path, got.status)
		}
	}
	if _, err := s.svc.GetReservedDomain(ctx, s.a.p, dom.ID); err != nil {
		t.Error(err)
	}
	if e, err := s.svc.GetTLSEdge(ctx, s.a.p, tls.ID); err != nil || e.TrafficPolicy != nil {
		t.Errorf("the TLS edge: %+v %v", e, err)
	}
	for name, n := range map[string]func() int{
		"reserved domains": func() int { p, _ := s.svc.ListReservedDomains(ctx, s.a.p, edgeplaneListAll); return len(p.Items) },
		"TLS edges":        func() int { p, _ := s.svc.ListTLSEdges(ctx, s.a.p, edgeplaneListAll); return len(p.Items) },
		"IP policies":      func() int { p, _ := s.svc.ListIPPolicies(ctx, s.a.p, edgeplaneListAll); return len(p.Items) },
		"destinations":     func() int { p, _ := s.svc.ListEventDestinations(ctx, s.a.p, edgeplaneListAll); return len(p.Items) },
		"API keys":         func() int { p, _ := s.svc.ListAPIKeys(ctx, s.a.p, edgeplaneListAll); return len(p.Items) },
		"backends":         func() int { p, _ := s.svc.ListTunnelGroupBackends(ctx, s.a.p, edgeplaneListAll); return len(p.Items) },
		"bot users":        func() int { p, _ := s.svc.ListBotUsers(ctx, s.a.p, edgeplaneListAll); return len(p.Items) },
		"TLS certificates": func() int { p, _ := s.svc.ListTLSCertificates(ctx, s.a.p, edgeplaneListAll); return len(p.Items) },
	} {
		want := 1
		if name == "IP policies" || name == "destinations" || name == "backends" || name == "bot users" || name == "TLS certificates" {
			want = 0
		}
		if got := n(); got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
	}

	// The edit forms, a credential's among them, and turning a domain's
	// certificate management off.
	cred, err := s.svc.CreateCredential(ctx, s.a.p, credentials.CreateParams{Description: "d"})
	must(t, err)
	managed, err := s.svc.CreateReservedDomain(ctx, s.a.p, domains.CreateParams{Domain: "managed.example.com",
		CertificateManagementPolicy: &domains.CertPolicyParams{Authority: domains.AuthorityLetsEncrypt}})
	must(t, err)
	edits := []struct {
		path string
		form url.Values
		snap func() string
	}{
		{"/console/credentials/" + cred.ID + "/edit", url.Values{"description": {"x"}, "acl": {"bind:x.example.com"}}, func() string {
			c, err := s.svc.GetCredential(ctx, s.a.p, cred.ID)
			must(t, err)
			return fmt.Sprint(c.Description, c.ACL)
		}},
		{"/console/reserved_domains/" + managed.ID + "/certificate_management_policy/delete", nil, func() string {
			d, err := s.svc.GetReservedDomain(ctx, s.a.p, managed.ID)
			must(t, err)
			return fmt.Sprint(d.CertificateManagementPolicy != nil)
		}},
	}
	for _, k := range editKinds() {
		r := k.make(t, s, s.a)
		edits = append(edits, struct {
			path string
			form url.Values
			snap func() string
		}{r.page + "/edit", k.good, r.snap})
	}
	for _, e := range edits {
		before := e.snap()
		for _, token := range []string{"", "wrong"} {
			form := url.Values{}
			for k, v := range e.form {
				form[k] = v
			}
			if token != "" {
				form.Set("csrf", token)
			}
			if got := b.post(e.path, form); got.status != http.StatusForbidden {
				t.Errorf("POST %s with token %q: %d, want 403", e.path, token, got.status)
			}
		}
		if after := e.snap(); after != before {
			t.Errorf("POST %s without the token changed %q to %q", e.path, before, after)
		}
	}
}

// TestEveryRoute: every route the console registered, reached by its
// pattern (path values filled with an ID of no resource): a page without
// a session is sent to the sign-in page, and a form with the session but
// not its CSRF token is refused with 403, so that no page or form added
// later can skip the checks.
func TestEveryRoute(t *testing.T) {
	s := newServer(t, console.Options{})
	anon := s.browser(t)
	signed := s.browser(t)
	signed.signIn(s.a.key)
	fill := regexp.MustCompile(`\{[^}]*\}`)
	var gets, posts int
	for _, p := range console.Patterns(s.h) {
		method, path, _ := strings.Cut(p, " ")
		path = fill.ReplaceAllString(strings.ReplaceAll(path, "{$}", ""), "x") // {$} ends a path; a value is any ID
		switch method {
		case http.MethodGet:
			if path == "/console/static/" {
				continue // the stylesheet and scripts, public
			}
			gets++
			got := anon.get(path)
			if path == "/console/edges" {
				continue // a redirect to /console/edges/https, which is checked
			}
			wantSignIn(t, got)
		case http.MethodPost:
			posts++
			if got := signed.post(path, url.Values{"csrf": {"wrong"}}); got.status != http.StatusForbidden {
				t.Errorf("POST %s (%s) without the CSRF token: %d, want 403", path, p, got.status)
			}
		default:
			t.Errorf("route %q: a method the test does not know", p)
		}
	}
	t.Logf("%d GET and %d POST routes", gets, posts)
	if gets < 30 || posts < 40 {
		t.Errorf("reached %d GET and %d POST routes; the console has more (is handle used?)", gets, posts)
	}
}
