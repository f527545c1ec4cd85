package backends

import (
	"slices"
	"strconv"

	"github.com/edgeplane/edgeplane/apierr"
)

// Limits on a label set, shared by backends and tunnels.
const (
	// MaxLabels is the most labels a backend or a tunnel may carry.
	MaxLabels = 32
	// MaxLabelKeyBytes is the longest a label key may be, in bytes.
	MaxLabelKeyBytes = 63
	// MaxLabelValueBytes is the longest a label value may be, in bytes.
	MaxLabelValueBytes = 255
)

// maxFieldKeyBytes bounds how much of an offending key a violation's field
// path quotes, so that a huge key cannot make a huge error.
const maxFieldKeyBytes = 80

const labelChars = `letters, digits and . _ - / :`

// ValidateLabels reports every broken label rule of labels at once (see the
// package documentation): at most [MaxLabels] labels; keys of 1 to
// [MaxLabelKeyBytes] bytes and values of 1 to [MaxLabelValueBytes] bytes,
// both made of ASCII letters, digits and the characters "." "_" "-" "/"
// ":". Violations name the field labels["key"] (labels for a set that is
// too large, whose labels are then not examined), sorted by key. It returns
// nil or an InvalidArgument [*apierr.Error].
func ValidateLabels(labels map[string]string) error {
	var vs apierr.Violations
	checkLabels(&vs, "labels", labels)
	return vs.Err()
}

// checkLabels appends the violations of labels to vs, naming fields below
// field.
func checkLabels(vs *apierr.Violations, field string, labels map[string]string) {
	if len(labels) > MaxLabels {
		vs.Add(field, "must have at most %d labels, got %d", MaxLabels, len(labels))
		return
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		path := field + "[" + quoteKey(k) + "]"
		if reason := labelPartProblem("key", k, MaxLabelKeyBytes); reason != "" {
			vs.Add(path, "%s", reason)
		}
		if reason := labelPartProblem("value", labels[k], MaxLabelValueBytes); reason != "" {
			vs.Add(path, "%s", reason)
		}
	}
}

// quoteKey quotes k as a Go string literal for a field path, shortened to
// maxFieldKeyBytes bytes of k.
func quoteKey(k string) string {
	if len(k) <= maxFieldKeyBytes {
		return strconv.Quote(k)
	}
	return strconv.Quote(k[:maxFieldKeyBytes]) + "..."
}

// labelPartProblem returns why s is not a valid label key or value, or "".
func labelPartProblem(what, s string, max int) string {
	switch {
	case s == "":
		return "label " + what + " must not be empty"
	case len(s) > max:
		return "label " + what + " must be at most " + strconv.Itoa(max) + " bytes, got " + strconv.Itoa(len(s))
	}
	for i := 0; i < len(s); i++ {
		if !isLabelByte(s[i]) {
			return "label " + what + " may contain only " + labelChars
		}
	}
	return ""
}

func isLabelByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '/' || c == ':'
}

// Selects reports whether a backend with the label set want selects a
// tunnel with the label set have: every label of want is in have with the
// same value (keys and values compare case-sensitively). An empty want
// selects nothing: a backend always has at least one label, and a backend
// without labels must not route to every tunnel of the account.
func Selects(want, have map[string]string) bool {
	if len(want) == 0 || len(want) > len(have) {
		return false
	}
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// cloneLabels copies labels into a new non-nil map.
func cloneLabels(labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[k] = v
	}
	return out
}
