//go:build race

package policy

// raceEnabled reports a -race build, in which sync.Pool drops objects at
// random, so allocation counts mean nothing.
const raceEnabled = true
