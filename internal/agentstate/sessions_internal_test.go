package agentstate

import (
	"testing"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
)

// FuzzValidateLabeledTunnel: what validateLabeledTunnel accepts of an
// agent is within every bound (at least one valid label, forwards_to and
// metadata valid UTF-8 within their bytes), and what it refuses is an
// invalid argument with violations.
func FuzzValidateLabeledTunnel(f *testing.F) {
	f.Add("app", "web", "app://laptop/server?pid=1234", "")
	f.Add("", "", "", "")
	f.Add("k", "a b", "\xff", "m")
	f.Fuzz(func(t *testing.T, key, value, forwardsTo, metadata string) {
		p := agents.LabeledTunnelParams{Labels: map[string]string{key: value}, ForwardsTo: forwardsTo, Metadata: metadata}
		if key == "" && value == "" {
			p.Labels = nil
		}
		err := validateLabeledTunnel(p)
		if err != nil {
			if apierr.CodeOf(err) != apierr.InvalidArgument || len(apierr.ViolationsOf(err)) == 0 {
				t.Fatalf("refusal %v is not an invalid argument with violations", err)
			}
			return
		}
		if len(p.Labels) == 0 || backends.ValidateLabels(p.Labels) != nil {
			t.Errorf("accepted labels %q", p.Labels)
		}
		if len(forwardsTo) > agents.MaxForwardsToBytes || !utf8.ValidString(forwardsTo) {
			t.Errorf("accepted forwards_to %q", forwardsTo)
		}
		if len(metadata) > agents.MaxMetadataBytes || !utf8.ValidString(metadata) {
			t.Errorf("accepted metadata %q", metadata)
		}
	})
}
