package httpapi_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/httpapi"
)

// Event destinations over HTTP: the shape (the original's fields, our
// target.http), the secret shown once, PATCH, the subscriptions' Refs,
// deletion refused while in use, the per-account cap.
func TestE2EEventDestinations(t *testing.T) {
	s := newE2E(t)
	r := call(t, s, "POST", "/event_destinations", s.keyA,
		`{"description":"audit","metadata":"{\"env\":\"dev\"}","format":"json","target":{"http":{"url":"https://hooks.example.com/in","headers":{"X-Team":"ops"}}}}`)
	id := wantID(t, r.json["id"], "ed_")
	secret, _ := r.json["target"].(map[string]any)["http"].(map[string]any)["secret"].(string)
	if _, err := events.ParseSecret(secret); err != nil {
		t.Fatalf("generated secret %q: %v", secret, err)
	}
	shape := func(secret string) string {
		return `{"id":"{{id}}","uri":"` + base + `/event_destinations/{{id}}","created_at":"` + t0 + `","description":"audit",
			"metadata":"{\"env\":\"dev\"}","format":"json",
			"target":{"http":{"url":"https://hooks.example.com/in","secret":` + secret + `,"headers":{"X-Team":"ops"}},
				"firehose":null,"kinesis":null,"cloudwatch_logs":null,"datadog":null},
			"delivery":{"state":"ok","lag_seconds":0,"attempts":0,"last_error":"",
				"last_delivered_at":null,"delivered":0,"dropped":0,"skipped":0}}`
	}
	exact(t, r, 201, shape(`"`+secret+`"`), "id", id)
	// Never shown again.
	exact(t, call(t, s, "GET", "/event_destinations/"+id, s.keyA, ""), 200, shape("null"), "id", id)
	if strings.Contains(string(call(t, s, "GET", "/event_destinations", s.keyA, "").body), secret) {
		t.Fatal("the list shows the secret")
	}

	// A subscription sends to it: destinations as Refs; the destination
	// cannot be deleted while the subscription names it.
	r = call(t, s, "POST", "/event_subscriptions", s.keyA, `{"sources":[{"type":"ip_policy_created.v0"}],"destination_ids":["`+id+`"]}`)
	sub := wantID(t, r.json["id"], "esb_")
	if got := r.body; !strings.Contains(string(got), `"destinations":[{"id":"`+id+`","uri":"`+base+`/event_destinations/`+id+`"}]`) {
		t.Fatalf("subscription: %s", got)
	}
	checkError(t, call(t, s, "DELETE", "/event_destinations/"+id, s.keyA, ""), apiError{status: 409, code: errConflict, msg: []string{sub}})
	r = call(t, s, "PATCH", "/event_subscriptions/"+sub, s.keyA, `{"destination_ids":[]}`)
	if r.status != 200 || !strings.Contains(string(r.body), `"destinations":[]`) {
		t.Fatalf("PATCH destination_ids: %d %s", r.status, r.body)
	}

	// PATCH: a target without a secret keeps it (shown null); with one,
	// replaces it and shows it.
	r = call(t, s, "PATCH", "/event_destinations/"+id, s.keyA, `{"target":{"http":{"url":"http://hooks.example.com/v2"}}}`)
	if r.status != 200 || !strings.Contains(string(r.body), `"http":{"url":"http://hooks.example.com/v2","secret":null,"headers":{}}`) {
		t.Fatalf("PATCH target: %d %s", r.status, r.body)
	}
	newSecret := events.NewSecret()
	r = call(t, s, "PATCH", "/event_destinations/"+id, s.keyA, `{"description":"x","target":{"http":{"url":"https://h.example.com","secret":"`+newSecret+`"}}}`)
	if r.status != 200 || !strings.Contains(string(r.body), `"secret":"`+newSecret+`"`) || !strings.Contains(string(r.body), `"description":"x"`) {
		t.Fatalf("PATCH secret: %d %s", r.status, r.body)
	}
	noContent(t, call(t, s, "DELETE", "/event_destinations/"+id, s.keyA, ""))
	checkError(t, call(t, s, "GET", "/event_destinations/"+id, s.keyA, ""), apiError{status: 404, code: errNotFound})

	// The cap: the 101st is refused, and nothing is written.
	for i := range events.MaxDestinationsPerAccount {
		create(t, s, s.keyB, "/event_destinations", `{"description":"`+strconv.Itoa(i)+`","target":{"http":{"url":"https://h.example.com"}}}`, "ed_")
	}
	before := snapshot(t, s, s.keyB)
	checkError(t, call(t, s, "POST", "/event_destinations", s.keyB, `{"target":{"http":{"url":"https://h.example.com"}}}`),
		apiError{status: 409, code: "ERR_SERVICE_103", msg: []string{"100 event destinations"}})
	unchanged(t, s, s.keyB, before)
}

// Bad input names the field and the rule, and changes nothing; another
// account's destination does not exist.
func TestE2EEventDestinationsBadInput(t *testing.T) {
	s := newE2E(t)
	a := create(t, s, s.keyA, "/event_destinations", `{"target":{"http":{"url":"https://h.example.com"}}}`, "ed_")
	b := create(t, s, s.keyB, "/event_destinations", `{"target":{"http":{"url":"https://h.example.com"}}}`, "ed_")
	sub := create(t, s, s.keyA, "/event_subscriptions", `{}`, "esb_")
	headers21 := `{`
	for i := range 21 {
		headers21 += `"X-H` + strconv.Itoa(i) + `":"v",`
	}
	headers21 = strings.TrimSuffix(headers21, ",") + `}`
	cases := []struct {
		name, method, path, body string
		field, msg               string
	}{
		{"no target", "POST", "/event_destinations", `{}`, "target", "target.http"},
		{"no http", "POST", "/event_destinations", `{"target":{}}`, "target.http", "target.http only"},
		{"kinesis", "POST", "/event_destinations", `{"target":{"kinesis":{"stream_arn":"arn:x"}}}`, "target.kinesis", "target.http only"},
		{"datadog beside http", "POST", "/event_destinations", `{"target":{"http":{"url":"https://h.example.com"},"datadog":{"api_key":"k"}}}`, "target.datadog", "target.http only"},
		{"no url", "POST", "/event_destinations", `{"target":{"http":{}}}`, "target.http.url", ""},
		{"ftp url", "POST", "/event_destinations", `{"target":{"http":{"url":"ftp://h.example.com"}}}`, "target.http.url", ""},
		{"long url", "POST", "/event_destinations", `{"target":{"http":{"url":"https://h.example.com/` + strings.Repeat("a", 2048) + `"}}}`, "target.http.url", ""},
		{"bad secret", "POST", "/event_destinations", `{"target":{"http":{"url":"https://h.example.com","secret":"hunter2"}}}`, "target.http.secret", "whsec_"},
		{"short secret", "POST", "/event_destinations", `{"target":{"http":{"url":"https://h.example.com","secret":"whsec_AAAA"}}}`, "target.http.secret", "24 to 64"},
		{"reserved header", "POST", "/event_destinations", `{"target":{"http":{"url":"https://h.example.com","headers":{"webhook-id":"x"}}}}`, "target.http.headers.webhook-id", "set by the delivery"},
		{"bad header name", "POST", "/event_destinations", `{"target":{"http":{"url":"https://h.example.com","headers":{"a b":"x"}}}}`, "target.http.headers", "not a valid header name"},
		{"header newline", "POST", "/event_destinations", `{"target":{"http":{"url":"https://h.example.com","headers":{"X-A":"a\nb"}}}}`, "target.http.headers.X-A", "CR, LF"},
		{"21 headers", "POST", "/event_destinations", `{"target":{"http":{"url":"https://h.example.com","headers":` + headers21 + `}}}`, "target.http.headers", "20"},
		{"format", "POST", "/event_destinations", `{"format":"xml","target":{"http":{"url":"https://h.example.com"}}}`, "format", ""},
		{"long description", "POST", "/event_destinations", `{"description":"` + strings.Repeat("d", 256) + `","target":{"http":{"url":"https://h.example.com"}}}`, "description", "255"},
		{"patch kinesis", "PATCH", "/event_destinations/" + a, `{"target":{"kinesis":{}}}`, "target.kinesis", "target.http only"},
		{"patch format", "PATCH", "/event_destinations/" + a, `{"format":"xml"}`, "format", ""},
		{"subscription names a policy", "POST", "/event_subscriptions", `{"destination_ids":["ipp_0000000000000000000000000"]}`, "destination_ids[0]", "event destination ID"},
		{"subscription names another account's", "POST", "/event_subscriptions", `{"destination_ids":["` + a + `","` + b + `"]}`, "destination_ids[1]", "not found"},
		{"subscription names one twice", "POST", "/event_subscriptions", `{"destination_ids":["` + a + `","` + a + `"]}`, "destination_ids", ""},
		{"patch subscription to another account's", "PATCH", "/event_subscriptions/" + sub, `{"destination_ids":["` + b + `"]}`, "destination_ids[0]", "not found"},
	}
	before := snapshot(t, s, s.keyA)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := apiError{status: 400, code: errInvalid, fields: []string{c.field}}
			if c.msg != "" {
				want.msg = []string{c.msg}
			}
			checkError(t, call(t, s, c.method, c.path, s.keyA, c.body), want)
		})
	}
	unchanged(t, s, s.keyA, before)

	// Isolation: B's destination is not A's to read, change or delete.
	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		body := ""
		if m == "PATCH" {
			body = `{"description":"x"}`
		}
		checkError(t, call(t, s, m, "/event_destinations/"+b, s.keyA, body), apiError{status: 404, code: errNotFound})
	}
	if ids := listIDs(t, s, s.keyA, "/event_destinations", "event_destinations"); len(ids) != 1 || ids[0] != a {
		t.Fatalf("A lists %v", ids)
	}
}

// slowHosts is a resolver that never answers: each lookup waits for its
// context to end.
type slowHosts struct{}

func (slowHosts) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A destination may point only where delivery may go: a target URL
// whose host is an address outside the server's networks (public
// addresses only by default), or a name that resolves only outside them
// or not at all, is refused at create and at update with a violation of
// target.http.url that says why and names the networks allowed, and
// nothing is written; inside them it is accepted.
func TestE2EEventDestinationNetworks(t *testing.T) {
	public := newE2E(t)
	loopback := newServerWith(t, httpapi.Options{RateLimit: -1}, events.Options{Networks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	slow := newServerWith(t, httpapi.Options{RateLimit: -1}, events.Options{Resolver: slowHosts{}, ResolveTimeout: 20 * time.Millisecond})
	cases := []struct {
		name string
		s    *server
		url  string
		msg  []string // what the reason says; none when accepted
	}{
		{"private address", public, "http://10.1.2.3:9/", []string{"10.1.2.3 is private (10.0.0.0/8)", "public addresses only"}},
		{"private address with a path", public, "http://10.1.2.3:9/hook", []string{"10.1.2.3 is private (10.0.0.0/8)"}},
		{"loopback", public, "http://127.0.0.1:9/", []string{"127.0.0.1 is loopback", "public addresses only"}},
		{"link-local IPv6", public, "http://[fe80::1]/", []string{"fe80::1 is link-local"}},
		{"cloud metadata", public, "http://169.254.169.254/latest", []string{"169.254.169.254 is link-local"}},
		{"name of private addresses only", public, "https://private.example.net/hook",
			[]string{"private.example.net resolves only to addresses not allowed", "10.0.0.5 is private", "fd00::5 is unique local", "public addresses only"}},
		{"name that does not resolve", public, "https://nx.example.org/hook", []string{"nx.example.org did not resolve (no such host)", "public addresses only"}},
		{"name the resolver does not answer in time", slow, "https://hooks.example.com/hook", []string{"hooks.example.com did not resolve within 20ms"}},
		{"public name", public, "https://hooks.example.com/hook", nil},
		{"public address", public, "https://93.184.215.14/hook", nil},
		{"loopback allowed by the networks", loopback, "http://127.0.0.1:9/", nil},
		{"private address outside the networks", loopback, "http://10.1.2.3:9/", []string{"10.1.2.3 is outside the allowed networks", "only 127.0.0.0/8"}},
		{"public name outside the networks", loopback, "https://hooks.example.com/", []string{"93.184.215.14 is outside the allowed networks", "only 127.0.0.0/8"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			// An existing destination, to update.
			d := create(t, s, s.keyA, "/event_destinations", `{"description":"before","target":{"http":{"url":"`+okURL(s, loopback)+`"}}}`, "ed_")
			before := snapshot(t, s, s.keyA)
			post := call(t, s, "POST", "/event_destinations", s.keyA, `{"target":{"http":{"url":"`+c.url+`"}}}`)
			patch := call(t, s, "PATCH", "/event_destinations/"+d, s.keyA, `{"description":"after","target":{"http":{"url":"`+c.url+`"}}}`)
			if c.msg == nil {
				if post.status != 201 || patch.status != 200 || !strings.Contains(string(patch.body), `"url":"`+c.url+`"`) {
					t.Fatalf("create %d %s; update %d %s", post.status, post.body, patch.status, patch.body)
				}
				return
			}
			for _, r := range []response{post, patch} {
				checkError(t, r, apiError{status: 400, code: errInvalid, fields: []string{"target.http.url"}, msg: c.msg})
				// The resolver's error (its address, Go's error chain) is
				// never shown.
				if strings.Contains(string(r.body), "10.53.0.1") || strings.Contains(string(r.body), "lookup ") || strings.Contains(string(r.body), "context deadline") {
					t.Errorf("the message shows the resolver's error: %s", r.body)
				}
			}
			unchanged(t, s, s.keyA, before)
		})
	}
}

// okURL is a target URL s accepts without a lookup.
func okURL(s, loopback *server) string {
	if s == loopback {
		return "http://127.0.0.1:9/"
	}
	return "https://93.184.215.14/in"
}

// A destination's delivery state tells its owner nothing of other
// accounts' writes: B writing, even changes of the very type A's
// subscription sends, leaves A's delivery as it was (no store revision
// is shown; the lag is time only).
func TestE2EEventDestinationLagIsolation(t *testing.T) {
	s := newE2E(t)
	d := create(t, s, s.keyA, "/event_destinations", `{"target":{"http":{"url":"https://hooks.example.com/in"}}}`, "ed_")
	create(t, s, s.keyA, "/event_subscriptions", `{"sources":[{"type":"ip_policy_created.v0"}],"destination_ids":["`+d+`"]}`, "esb_")
	delivery := func() string {
		t.Helper()
		r := call(t, s, "GET", "/event_destinations/"+d, s.keyA, "")
		if r.status != 200 {
			t.Fatalf("GET: %d %s", r.status, r.body)
		}
		b, err := json.Marshal(r.json["delivery"])
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := delivery()
	for i := range 20 {
		create(t, s, s.keyB, "/ip_policies", `{"description":"b`+strconv.Itoa(i)+`"}`, "ipp_")
	}
	if after := delivery(); after != before {
		t.Fatalf("A's delivery moved when B wrote:\nbefore %s\nafter  %s", before, after)
	}
	if strings.Contains(before, "cursor") || strings.Contains(before, "revision") {
		t.Fatalf("delivery shows a store revision: %s", before)
	}
}
