package edges

import (
	"github.com/edgeplane/edgeplane/apierr"
)

// MaxTrafficPolicyBytes bounds a traffic policy module's value. It is
// tighter than the policy package's document limit because the value is
// stored inside its edge's record.
const MaxTrafficPolicyBytes = 128 << 10

// Validate reports the broken rules of p that need no policy engine: value
// is required and at most [MaxTrafficPolicyBytes] bytes. The document
// itself is checked by the Service, which compiles it with its engine. It
// returns nil or an InvalidArgument [*apierr.Error].
func (p TrafficPolicyParams) Validate() error {
	var vs apierr.Violations
	switch {
	case p.Value == "":
		vs.Add("value", "is required: a traffic policy document as a JSON string")
	case len(p.Value) > MaxTrafficPolicyBytes:
		vs.Add("value", "must be at most %d bytes, got %d", MaxTrafficPolicyBytes, len(p.Value))
	}
	return vs.Err()
}
