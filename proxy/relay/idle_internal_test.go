package relay

import (
	"testing"
	"time"
)

// TestReportIdle drives the idle bookkeeping with an injected clock:
// each step is one direction reporting a window (or finishing), and the
// pipe is idle only when both directions vouch for a whole timeout
// without a byte.
func TestReportIdle(t *testing.T) {
	const idle = 100 * time.Millisecond
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	type step struct {
		at     int  // ms after t0, the clock when the step runs
		dir    int  // 0 client->upstream, 1 upstream->client
		finish bool // the direction ends (EOF) instead of reporting
		moved  bool
		last   int // ms, when it last moved a byte (with moved)
		idle   bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"both quiet for a whole timeout", []step{
			{at: 50, dir: 0}, {at: 50, dir: 1},
			{at: 100, dir: 0}, // direction 1 vouches to 50 only
			{at: 100, dir: 1, idle: true},
		}},
		{"not before both vouch for it", []step{
			{at: 50, dir: 0}, {at: 100, dir: 0}, {at: 149, dir: 0},
			// direction 1 has not reported since t0: it may be moving
			// bytes (until 150, an idle timeout past its window's end)
		}},
		{"the other direction is in a window that may be moving bytes", []step{
			{at: 50, dir: 0}, {at: 50, dir: 1}, {at: 100, dir: 0},
			{at: 120, dir: 1, moved: true, last: 110},
			{at: 150, dir: 0},
			{at: 200, dir: 0}, // 1's last window ended at 120: it vouches to 120 only
			{at: 170, dir: 1},
			{at: 210, dir: 1}, // 0 vouches to 200, 1 to 210, quiet since 110: 90 ms
			{at: 250, dir: 0, idle: true},
		}},
		{"one-way traffic", []step{
			{at: 50, dir: 0}, {at: 50, dir: 1, moved: true, last: 49},
			{at: 100, dir: 0}, {at: 100, dir: 1, moved: true, last: 99},
			{at: 150, dir: 0}, {at: 150, dir: 1, moved: true, last: 140},
			{at: 200, dir: 0}, {at: 200, dir: 1, moved: true, last: 199},
			{at: 250, dir: 0},
		}},
		{"a finished direction vouches for ever, from its last byte", []step{
			{at: 50, dir: 0, finish: true, moved: true, last: 90},
			{at: 150, dir: 1},
			{at: 189, dir: 1},
			{at: 190, dir: 1, idle: true},
		}},
		{"a direction stuck writing an idle timeout past its window vouches", []step{
			{at: 50, dir: 1, moved: true, last: 20}, // then stuck in a write: its window ends at 100
			{at: 50, dir: 0}, {at: 100, dir: 0}, {at: 150, dir: 0},
			{at: 199, dir: 0},
			{at: 200, dir: 0, idle: true},
		}},
		{"the quiet time counts from the later direction's last byte", []step{
			{at: 50, dir: 0, moved: true, last: 10},
			{at: 50, dir: 1, moved: true, last: 40},
			{at: 120, dir: 0}, {at: 120, dir: 1}, // quiet since 40: 80 ms
			{at: 140, dir: 0}, {at: 140, dir: 1, idle: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var clock time.Time
			p := &pipe{idle: idle, now: func() time.Time { return clock }}
			for i := range p.dirs {
				p.dirs[i] = direction{from: Side(i + 1), quiet: t0, covered: t0, windowEnd: t0.Add(idle / 2)}
			}
			for i, s := range tt.steps {
				clock = at(s.at)
				var last time.Time
				if s.moved {
					last = at(s.last)
				}
				if s.finish {
					p.finish(&p.dirs[s.dir], s.moved, last, nil)
					continue
				}
				if got := p.report(&p.dirs[s.dir], s.moved, last); got != s.idle {
					t.Fatalf("step %d (%+v): idle = %v, want %v", i, s, got, s.idle)
				}
				p.dirs[s.dir].windowEnd = clock.Add(idle / 2) // its next window
			}
		})
	}
}
