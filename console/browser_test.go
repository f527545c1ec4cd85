package console_test

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/internal/browsertest"
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
	s := newServer(t, console.Options{PollInterval: 100 * time.Millisecond})
	ctx := newTab(t, 60*time.Second)
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
