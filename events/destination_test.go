package events_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/events"
)

func TestParseSecret(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(make([]byte, n)) }
	cases := []struct {
		in string
		ok bool
	}{
		{events.NewSecret(), true},
		{"whsec_" + b64(24), true},
		{"whsec_" + b64(64), true},
		{"whsec_" + b64(23), false},
		{"whsec_" + b64(65), false},
		{b64(32), false},
		{"whsec_not base64!", false},
		{"", false},
	}
	for _, c := range cases {
		key, err := events.ParseSecret(c.in)
		if (err == nil) != c.ok {
			t.Errorf("ParseSecret(%q) = %v, want ok %v", c.in, err, c.ok)
		}
		if err == nil && len(key) < 24 {
			t.Errorf("ParseSecret(%q): key of %d bytes", c.in, len(key))
		}
	}
}

// FuzzParseSecret: any input is parsed or refused without a panic, and a
// secret that parses is whsec_ and the base64 of the key returned.
func FuzzParseSecret(f *testing.F) {
	f.Add(events.NewSecret())
	f.Add("whsec_")
	f.Add("whsec_====")
	f.Fuzz(func(t *testing.T, s string) {
		key, err := events.ParseSecret(s)
		if err != nil {
			return
		}
		if !strings.HasPrefix(s, events.SecretPrefix) || base64.StdEncoding.EncodeToString(key) != strings.TrimPrefix(s, events.SecretPrefix) {
			t.Fatalf("ParseSecret(%q) = %x", s, key)
		}
	})
}

// TestTargetBounds: the bounds the package states are the ones Validate
// enforces: a URL of MaxTargetURLBytes and MaxTargetHeaders headers pass,
// one byte or one header more fails naming the field.
func TestTargetBounds(t *testing.T) {
	const base = "https://h.example.com/"
	params := func(url string, headers int) events.CreateDestinationParams {
		h := map[string]string{}
		for i := range headers {
			h["X-H"+strings.Repeat("a", i)] = "v"
		}
		return events.CreateDestinationParams{Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: url, Headers: h}}}
	}
	atURL := base + strings.Repeat("p", events.MaxTargetURLBytes-len(base))
	for _, tc := range []struct {
		name  string
		p     events.CreateDestinationParams
		field string // "" when valid
	}{
		{"URL at the bound", params(atURL, 0), ""},
		{"URL past the bound", params(atURL+"p", 0), "target.http.url"},
		{"headers at the bound", params(base, events.MaxTargetHeaders), ""},
		{"headers past the bound", params(base, events.MaxTargetHeaders+1), "target.http.headers"},
	} {
		err := tc.p.Validate()
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (err == nil || !strings.Contains(err.Error(), tc.field)):
			t.Errorf("%s: %v, want a violation of %s", tc.name, err, tc.field)
		}
	}
}

// TestTargetHeaders: a header name that is not an HTTP token, one the
// delivery sets (in any case) or a value with CR or LF is refused,
// naming the header.
func TestTargetHeaders(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers map[string]string
		field   string // "" when valid
	}{
		{"token name", map[string]string{"X-Team_1!": "ops"}, ""},
		{"space in name", map[string]string{"X Team": "ops"}, "target.http.headers"},
		{"name too long", map[string]string{strings.Repeat("x", 257): "v"}, "target.http.headers"},
		{"reserved, any case", map[string]string{"webhook-signature": "v1,x"}, "target.http.headers.webhook-signature"},
		{"CRLF in value", map[string]string{"X-A": "a\r\nB: b"}, "target.http.headers.X-A"},
	} {
		p := events.CreateDestinationParams{Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: "https://h.example.com", Headers: tc.headers}}}
		err := p.Validate()
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (err == nil || !strings.Contains(err.Error(), tc.field)):
			t.Errorf("%s: %v, want a violation of %s", tc.name, err, tc.field)
		}
	}
}

// TestSubscriptionDestinationsBound: a subscription may name
// MaxSubscriptionDestinations destinations, on create and on update, and
// no more.
func TestSubscriptionDestinationsBound(t *testing.T) {
	reg, err := events.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	ids := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, events.DestinationPrefix+strings.Repeat(string(rune('a'+i)), 27))
		}
		return out
	}
	for _, n := range []int{events.MaxSubscriptionDestinations, events.MaxSubscriptionDestinations + 1} {
		list := ids(n)
		want := n <= events.MaxSubscriptionDestinations
		for name, err := range map[string]error{
			"create": events.CreateSubscriptionParams{DestinationIDs: list}.Validate(reg),
			"update": events.UpdateSubscriptionParams{DestinationIDs: &list}.Validate(),
		} {
			if (err == nil) != want || (err != nil && !strings.Contains(err.Error(), "destination_ids")) {
				t.Errorf("%s with %d destinations: %v, want ok %v", name, n, err, want)
			}
		}
	}
}
