package ratelimit_test

import (
	"fmt"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/ratelimit"
)

// One limiter per action instance, keyed by the request's bucket key.
func Example() {
	cfg := ratelimit.Config{
		Name:      "per-client",
		Algorithm: "sliding_window",
		Capacity:  2,
		Rate:      "60s",
		BucketKey: []string{"conn.client_ip"},
	}
	opts, err := cfg.Options()
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := ratelimit.New(opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, after := range []time.Duration{0, 10 * time.Second, 20 * time.Second, 66 * time.Second} {
		d := l.AllowAt("203.0.113.9", start.Add(after))
		if d.Allowed {
			fmt.Printf("+%v: allowed\n", after)
		} else {
			fmt.Printf("+%v: 429, retry-after: %d\n", after, d.RetryAfterSeconds())
		}
	}
	// Output:
	// +0s: allowed
	// +10s: allowed
	// +20s: 429, retry-after: 46
	// +1m6s: allowed
}

func ExampleConfig_Validate() {
	cfg := ratelimit.Config{
		Name:      "api",
		Algorithm: "token_bucket",
		Capacity:  0,
		Rate:      "65s",
		BucketKey: []string{"req.host", "req.path"},
	}
	for _, v := range apierr.ViolationsOf(cfg.Validate()) {
		fmt.Println(v)
	}
	// Output:
	// algorithm: must be "sliding_window", got "token_bucket"
	// capacity: must be between 1 and 2000000000, got 0
	// rate: must be a whole multiple of 10s, got "65s"
	// bucket_key[1]: must be one of "req.host", "conn.client_ip", "conn.client_ip_prefix", "req.headers['<header-name>']" or "getReqHeader('<Header-Name>')", got "req.path"
}

func ExampleParseRate() {
	for _, s := range []string{"90s", "1h30m", "65s"} {
		d, err := ratelimit.ParseRate(s)
		fmt.Println(d, err)
	}
	// Output:
	// 1m30s <nil>
	// 1h30m0s <nil>
	// 0s invalid request: must be a whole multiple of 10s, got "65s"
}

func ExampleParseKeyElement() {
	for _, s := range []string{"conn.client_ip", "getReqHeader('X-Api-Key')", `req.headers["x-api-key"]`} {
		el, err := ratelimit.ParseKeyElement(s)
		fmt.Println(el.Kind, el.Header, err)
	}
	// Output:
	// client_ip  <nil>
	// header x-api-key <nil>
	// header x-api-key <nil>
}

// A bucket key of several elements, built without allocation into a reused
// buffer. The parts are length-prefixed, so no two tuples share a key.
func ExampleAppendKeyPart() {
	buf := make([]byte, 0, 128)
	buf = ratelimit.AppendKeyPart(buf, "example.com")
	buf = ratelimit.AppendKeyPart(buf, "203.0.113.9")
	fmt.Printf("%q\n", buf)

	a := ratelimit.AppendKeyPart(ratelimit.AppendKeyPart(nil, "a"), "bc")
	b := ratelimit.AppendKeyPart(ratelimit.AppendKeyPart(nil, "ab"), "c")
	fmt.Println(string(a) == string(b))
	// Output:
	// "\vexample.com\v203.0.113.9"
	// false
}

func ExampleDecision_RetryAfterSeconds() {
	fmt.Println(ratelimit.Decision{Allowed: true}.RetryAfterSeconds())
	fmt.Println(ratelimit.Decision{RetryAfter: 300 * time.Millisecond}.RetryAfterSeconds())
	fmt.Println(ratelimit.Decision{RetryAfter: 45*time.Second + time.Millisecond}.RetryAfterSeconds())
	// Output:
	// 0
	// 1
	// 46
}

// A Clock gives callers without a timestamp a cheap one.
func ExampleNewClock() {
	clock := ratelimit.NewClock(time.Millisecond)
	defer clock.Stop()
	l, err := ratelimit.New(ratelimit.Options{Capacity: 1, Window: time.Minute, MaxKeys: 10_000})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(l.AllowAt("account-42", clock.Now()).Allowed)
	fmt.Println(l.AllowAt("account-42", clock.Now()).Allowed)
	// Output:
	// true
	// false
}
