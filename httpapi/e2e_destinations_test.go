package httpapi_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/events"
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
			"delivery":{"state":"ok","cursor":{{cursor}},"lag_revisions":{{lag}},"lag_seconds":0,"attempts":0,"last_error":"",
				"last_delivered_at":null,"delivered":0,"dropped":0,"skipped":0}}`
	}
	delivery := r.json["delivery"].(map[string]any)
	cursor, lag := strconv.Itoa(int(delivery["cursor"].(float64))), strconv.Itoa(int(delivery["lag_revisions"].(float64)))
	exact(t, r, 201, shape(`"`+secret+`"`), "id", id, "cursor", cursor, "lag", lag)
	// Never shown again.
	got := call(t, s, "GET", "/event_destinations/"+id, s.keyA, "")
	lag = strconv.Itoa(int(got.json["delivery"].(map[string]any)["lag_revisions"].(float64)))
	exact(t, got, 200, shape("null"), "id", id, "cursor", cursor, "lag", lag)
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
