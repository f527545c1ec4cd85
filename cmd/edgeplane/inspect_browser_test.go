package main

import (
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/edgeplane/edgeplane/internal/browsertest"
)

var screenshots = flag.String("screenshots", "", "write a PNG of each page the browser tests visit into this `directory`")

// TestInspectBrowser drives the inspector's page in a real headless
// Chromium: a request made through a real tunnel (serve -proxy, the
// agent, a local app) appears on the page without a reload, shows its
// JSON body pretty-printed, Replay produces a second request, and
// "Replay with changes" a third with the path changed; the page fits a
// phone-width window. It skips when Chromium is not installed.
func TestInspectBrowser(t *testing.T) {
	browsertest.Chromium(t) // skip before starting the server
	ts := startTunnelServe(t)
	ts.api.must(201, "POST", "/reserved_domains", `{"domain":"app.example.com"}`)
	token := ts.api.must(201, "POST", "/credentials", `{"acl":["bind:app.example.com"]}`)["token"].(string)
	up := newUpstream(t, "local")
	_, upPort, _ := net.SplitHostPort(strings.TrimPrefix(up.URL, "http://"))
	a := ts.startAgent(t, token, "http", upPort, "-domain", "app.example.com", "-scheme", "http")
	base := a.apiURL(t)

	ctx := browsertest.NewTab(t, 60*time.Second, 1024, 768)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	value := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		v, err := chromedp.Run(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	check := func(what, expr string) bool {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	run("the page", chromedp.Navigate(base+"/inspect/http"), chromedp.WaitVisible(`//*[@id="live-state" and text()="Live."]`))
	check("mark the page", "(window.notReloaded = true)")
	browsertest.Shot(t, ctx, *screenshots, "inspector-empty")

	c := through(ts.proxyHTTP, nil)
	if _, ok := within(5*time.Second, func() bool {
		resp, err := c.Post("http://app.example.com/hello?x=1", "application/json", strings.NewReader(`{"event":"paid","amount":3}`))
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200 && string(body) == "upstream local /hello"
	}); !ok {
		t.Fatalf("no answer through the tunnel; agent log: %s", a.stderr.String())
	}

	row := `//ol[@id="requests"]/li/button[span[@class="uri" and text()="/hello?x=1"]]`
	run("the request appears", chromedp.WaitVisible(row))
	if !check("no reload", "window.notReloaded === true") {
		t.Error("the page was reloaded")
	}
	run("its detail", chromedp.Click(row), chromedp.WaitVisible("#detail"))
	reqBody := value("the request body", chromedp.Text("#req-body"))
	if want := "{\n  \"event\": \"paid\",\n  \"amount\": 3\n}"; reqBody != want {
		t.Errorf("the request body shown: %q, want %q", reqBody, want)
	}
	status := value("the response", chromedp.Text("#resp-status"))
	if status != "200 OK" {
		t.Errorf("the response status shown: %q", status)
	}
	browsertest.Shot(t, ctx, *screenshots, "inspector-request")

	run("replay", chromedp.Click("#replay"), chromedp.WaitVisible(`//ol[@id="requests"]/li[2]`))
	check("reset the replay's state", `(document.getElementById("replay-state").textContent = "", true)`)
	run("replay with changes", chromedp.Click("#edit"), chromedp.WaitVisible("#m-uri"))
	check("clear the path", `(document.getElementById("m-uri").value = "", true)`)
	run("send the change", chromedp.SendKeys("#m-uri", "/changed"), chromedp.Click("#m-send"),
		chromedp.WaitVisible(`//*[@id="replay-state" and (starts-with(text(), "Replayed") or starts-with(text(), "Replay failed"))]`))
	if msg := value("the replay's state", chromedp.Text("#replay-state")); !strings.HasPrefix(msg, "Replayed") {
		t.Fatalf("replay with changes: %s", msg)
	}
	run("the changed request appears", chromedp.WaitVisible(`//ol[@id="requests"]/li[1]/button[span[@class="uri" and text()="/changed"]]`))
	browsertest.Shot(t, ctx, *screenshots, "inspector-replayed")

	resp, err := http.Get(base + "/api/requests/http")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Requests []struct {
			Request struct {
				Method, URI string
			}
			Response struct {
				StatusCode int `json:"status_code"`
			}
		}
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	var got []string
	for _, r := range list.Requests {
		got = append(got, r.Request.Method+" "+r.Request.URI)
	}
	if want := "POST /changed,POST /hello?x=1,POST /hello?x=1"; strings.Join(got, ",") != want {
		t.Errorf("captured: %v, want %s", got, want)
	}
	if up.count("") != 3 {
		t.Errorf("the upstream got %d requests, want 3", up.count(""))
	}

	run("phone width", chromedp.EmulateViewport(390, 844), chromedp.Click(row), chromedp.WaitVisible("#detail"))
	if !check("fits", "document.documentElement.scrollWidth <= window.innerWidth") {
		t.Error("the page is wider than a phone's window")
	}
	browsertest.Shot(t, ctx, *screenshots, "inspector-phone")
}
