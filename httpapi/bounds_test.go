package httpapi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
)

// bounded lists at most MaxViolations violations with the count of the
// rest, each once (the msg names only the first), and cuts fields and
// reasons to their bounds.
func TestBounded(t *testing.T) {
	many := func(n int) *apierr.Error {
		var vs apierr.Violations
		for i := range n {
			vs.Add(fmt.Sprintf("acl[%d]", i), "must be a rule like bind:<domain>")
		}
		return vs.Err().(*apierr.Error)
	}
	long := strings.Repeat("é", MaxMessageBytes)
	tests := []struct {
		name      string
		err       *apierr.Error
		msg       string
		listed    int
		omitted   int
		maxField  int
		maxReason int
	}{
		{"no violations", apierr.NotFoundf("credential %s not found", "cr_x"), "credential cr_x not found", 0, 0, 0, 0},
		{"one", many(1), "invalid request: acl[0]: must be a rule like bind:<domain>", 1, 0, 6, 33},
		{"two", many(2), "invalid request: acl[0]: must be a rule like bind:<domain>; and 1 more violations", 2, 0, 6, 33},
		{"at the cap", many(MaxViolations), fmt.Sprintf("invalid request: acl[0]: must be a rule like bind:<domain>; and %d more violations", MaxViolations-1), MaxViolations, 0, 7, 33},
		{"over the cap", many(MaxViolations + 1), fmt.Sprintf("invalid request: acl[0]: must be a rule like bind:<domain>; and %d more violations", MaxViolations), MaxViolations, 1, 7, 33},
		{"long message", apierr.NotFoundf("credential %s not found", long), "credential " + long[:MaxMessageBytes-len("credential ")-3] + "…", 0, 0, 0, 0},
		{"long field and reason", apierr.Invalidf(long, "%s", long), "", 1, 0, MaxEchoBytes, MaxMessageBytes},
		{"long first of several", func() *apierr.Error {
			var vs apierr.Violations
			vs.Add("a", "%s", long)
			vs.Add("b", "short")
			return vs.Err().(*apierr.Error)
		}(), "", 2, 0, 1, MaxMessageBytes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg, vs, omitted := bounded(tc.err, 0)
			if tc.msg != "" && msg != tc.msg {
				t.Errorf("msg %q, want %q", msg, tc.msg)
			}
			if len(msg) > MaxMessageBytes {
				t.Errorf("msg of %d bytes", len(msg))
			}
			if len(tc.err.Violations) > 1 && !strings.HasSuffix(msg, fmt.Sprintf("; and %d more violations", len(tc.err.Violations)-1)) {
				t.Errorf("msg %q does not count the other violations", msg)
			}
			if len(vs) != tc.listed || omitted != tc.omitted {
				t.Errorf("%d listed, %d omitted; want %d and %d", len(vs), omitted, tc.listed, tc.omitted)
			}
			for i, v := range vs {
				if len(v.Field) > tc.maxField || len(v.Reason) > tc.maxReason {
					t.Errorf("violation %d: field of %d bytes, reason of %d; want at most %d and %d", i, len(v.Field), len(v.Reason), tc.maxField, tc.maxReason)
				}
				if i > 0 && strings.Contains(msg, v.Field+": ") {
					t.Errorf("msg %q repeats violation %d", msg, i)
				}
			}
		})
	}
}
