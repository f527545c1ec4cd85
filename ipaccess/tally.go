package ipaccess

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// WarnInterval is how often a [Tally] lets the warning of one restriction
// that is not enforced about one address be logged.
const WarnInterval = time.Minute

// maxWarned bounds the (restriction, address) pairs a Tally remembers:
// past it, those logged more than WarnInterval ago are forgotten, and if
// that is not enough every pair is, so a flood of addresses costs at
// most more log lines, never more memory.
const maxWarned = 10_000

// Types lists the restriction types, in the order of [Tally.Counts].
var Types = [...]string{TypeDashboard, TypeAPI, TypeAgent, TypeEndpoints}

// Tally counts the decisions of IP restrictions by type (traffic
// refused by an enforced restriction, traffic let through with a warning
// by one that is not enforced) and says which warnings to log: one per
// restriction and address per [WarnInterval], so that a client retrying
// in a loop does not flood the log. The zero value is ready; a Tally is
// safe for concurrent use. A nil *Tally counts nothing and logs every
// warning.
type Tally struct {
	refused [len(Types)]atomic.Uint64
	warned  [len(Types)]atomic.Uint64

	mu     sync.Mutex
	logged map[warnKey]time.Time // when each pair was last logged
}

type warnKey struct {
	restriction string
	ip          netip.Addr
}

// TypeCount is how many decisions of each kind the restrictions of one
// type took.
type TypeCount struct {
	// Type is the restriction type, such as [TypeAPI].
	Type string
	// Refused counts traffic refused by an enforced restriction.
	Refused uint64
	// Warned counts traffic a restriction that is not enforced would
	// have refused, let through with a warning.
	Warned uint64
}

// typeIndex returns the index of typ in [Types], -1 for another string.
func typeIndex(typ string) int {
	for i, t := range Types {
		if t == typ {
			return i
		}
	}
	return -1
}

// Refused counts one refusal by a restriction of type typ.
func (t *Tally) Refused(typ string) {
	if i := typeIndex(typ); t != nil && i >= 0 {
		t.refused[i].Add(1)
	}
}

// Warned counts one warning of restriction id (of type typ) about ip at
// now, and reports whether to log it: true unless the same restriction's
// warning about ip was logged less than [WarnInterval] before now.
func (t *Tally) Warned(typ, id string, ip netip.Addr, now time.Time) bool {
	if t == nil {
		return true
	}
	if i := typeIndex(typ); i >= 0 {
		t.warned[i].Add(1)
	}
	k := warnKey{id, ip}
	t.mu.Lock()
	defer t.mu.Unlock()
	if last, ok := t.logged[k]; ok && now.Sub(last) < WarnInterval && !now.Before(last) {
		return false
	}
	if t.logged == nil {
		t.logged = make(map[warnKey]time.Time)
	}
	if len(t.logged) >= maxWarned {
		for k, last := range t.logged {
			if now.Sub(last) >= WarnInterval {
				delete(t.logged, k)
			}
		}
		if len(t.logged) >= maxWarned {
			clear(t.logged)
		}
	}
	t.logged[k] = now
	return true
}

// Counts returns the counts of every type, in the order of [Types].
func (t *Tally) Counts() []TypeCount {
	out := make([]TypeCount, len(Types))
	for i, typ := range Types {
		out[i].Type = typ
		if t != nil {
			out[i].Refused, out[i].Warned = t.refused[i].Load(), t.warned[i].Load()
		}
	}
	return out
}
