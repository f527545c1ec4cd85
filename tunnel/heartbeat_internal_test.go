package tunnel

import (
	"strings"
	"testing"
	"time"
)

// TestBeats: which heartbeats a session answers, on a fake clock: the
// SDK's pace and HeartbeatRate itself forever, a burst of
// HeartbeatBurst, HeartbeatsBeforeAuth before Auth; anything faster is
// refused, saying why.
func TestBeats(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		every    time.Duration // between beats
		authed   bool
		beats    int
		answered int    // beats answered before one is refused; beats when none is
		why      string // the refusal's words
	}{
		{"the SDK's pace, an hour", 10 * time.Second, true, 360, 360, ""},
		{"HeartbeatRate, ten minutes", time.Second / HeartbeatRate, true, 600 * HeartbeatRate, 600 * HeartbeatRate, ""},
		// At 8 a second the burst drains by 3/8 of a token a beat (10 -
		// 3i/8 tokens before beat i): beat 25, the first to find less
		// than one, is refused.
		{"8 a second", time.Second / 8, true, 1000, 25, "faster than 5 a second (bursts of 10)"},
		{"at once", 0, true, 1000, HeartbeatBurst, "faster than 5 a second"},
		{"before Auth, the SDK's pace", 10 * time.Second, false, HeartbeatsBeforeAuth, HeartbeatsBeforeAuth, ""},
		{"before Auth, one more", 10 * time.Second, false, 100, HeartbeatsBeforeAuth, "more than 3 before Auth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBeats()
			answered, why := 0, ""
			for i := range tc.beats {
				if why = b.allow(t0.Add(time.Duration(i)*tc.every), tc.authed); why != "" {
					break
				}
				answered++
			}
			if answered != tc.answered || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
				t.Errorf("%d beats answered, then %q; want %d, then %q", answered, why, tc.answered, tc.why)
			}
		})
	}
}
