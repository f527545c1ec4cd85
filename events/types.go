package events

import (
	"slices"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
)

// Limits on event types.
const (
	// MaxTypeBytes is the longest an event type may be, in bytes.
	MaxTypeBytes = 128
	// MaxTypes is the most event types a [Registry] may hold.
	MaxTypes = 1024
)

// Verbs of the events the Service emits for a resource change.
const (
	Created = "created"
	Updated = "updated"
	Deleted = "deleted"
)

// Verbs lists [Created], [Updated] and [Deleted].
func Verbs() []string { return []string{Created, Updated, Deleted} }

// TypeOf returns the version-0 event type of a change: TypeOf("ip_policy",
// Created) is "ip_policy_created.v0".
func TypeOf(name, verb string) string {
	var buf [64]byte // room for every registered type: the string is the one allocation
	return string(AppendType(buf[:0], name, verb))
}

// AppendType appends TypeOf(name, verb) to dst.
func AppendType(dst []byte, name, verb string) []byte {
	dst = append(dst, name...)
	dst = append(dst, '_')
	dst = append(dst, verb...)
	return append(dst, ".v0"...)
}

// ParseType splits an event type of the shape <event_name>.v<N> into its
// name and version. The name is 1 or more lowercase ASCII letters, digits
// and underscores that starts with a letter and neither ends with an
// underscore nor holds two in a row; N is a decimal number from 0 to
// 999999999 without leading zeros; the whole type is at most [MaxTypeBytes]
// bytes. On failure the error says what is wrong and what is allowed.
func ParseType(t string) (name string, version int, err error) {
	if reason := typeProblem(t); reason != "" {
		return "", 0, apierr.Invalidf("type", "%s", reason)
	}
	i := strings.LastIndex(t, ".v")
	v, _ := strconv.Atoi(t[i+2:])
	return t[:i], v, nil
}

const typeShape = "must have the shape <event_name>.v<N>, such as ip_policy_created.v0"

// typeProblem returns why t is not a well-formed event type, or "".
func typeProblem(t string) string {
	if t == "" {
		return "is required; " + typeShape
	}
	if len(t) > MaxTypeBytes {
		return "must be at most " + strconv.Itoa(MaxTypeBytes) + " bytes, got " + strconv.Itoa(len(t))
	}
	i := strings.LastIndex(t, ".v")
	if i < 0 {
		return typeShape + " (the version suffix .v<N> is missing)"
	}
	name, ver := t[:i], t[i+2:]
	if name == "" {
		return typeShape + " (the event name is empty)"
	}
	if ver == "" || len(ver) > 9 || (ver[0] == '0' && len(ver) > 1) {
		return typeShape + " (the version must be a number without leading zeros)"
	}
	for j := 0; j < len(ver); j++ {
		if ver[j] < '0' || ver[j] > '9' {
			return typeShape + " (the version must be a number without leading zeros)"
		}
	}
	if c := name[0]; c < 'a' || c > 'z' {
		return typeShape + " (the event name must start with a lowercase letter)"
	}
	for j := 0; j < len(name); j++ {
		c := name[j]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return typeShape + " (the event name may contain only lowercase letters, digits and underscores)"
		}
		if c == '_' && (j == len(name)-1 || name[j+1] == '_') {
			return typeShape + " (the event name must not end with an underscore or hold two in a row)"
		}
	}
	return ""
}

// Registry is the set of known event types: the types a subscription may
// have a source for. Build one with [NewRegistry]. A Registry is immutable
// and safe for concurrent use; a host extends the Service's default by
// building a new one from edgeplane.DefaultEventTypes plus its own types.
type Registry struct {
	known  map[string]struct{}
	sorted []string
}

// NewRegistry returns a registry of types. Every type must be well formed
// ([ParseType]); duplicates are ignored; at most [MaxTypes] distinct types.
// Errors name the offending entry as types[i].
func NewRegistry(types ...string) (*Registry, error) {
	var vs apierr.Violations
	r := &Registry{known: make(map[string]struct{}, len(types))}
	for i, t := range types {
		if reason := typeProblem(t); reason != "" {
			vs.Add("types["+strconv.Itoa(i)+"]", "%s", reason)
			continue
		}
		r.known[t] = struct{}{}
	}
	if len(r.known) > MaxTypes {
		vs.Add("types", "must hold at most %d distinct types, got %d", MaxTypes, len(r.known))
	}
	if err := vs.Err(); err != nil {
		return nil, err
	}
	for t := range r.known {
		r.sorted = append(r.sorted, t)
	}
	slices.Sort(r.sorted)
	return r, nil
}

// Known reports whether t is in the registry. A nil registry knows nothing.
func (r *Registry) Known(t string) bool {
	if r == nil {
		return false
	}
	_, ok := r.known[t]
	return ok
}

// Types returns the registry's types, sorted; a new slice on each call.
func (r *Registry) Types() []string {
	if r == nil {
		return []string{}
	}
	return slices.Clone(r.sorted)
}

// Len returns the number of types in the registry.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	return len(r.sorted)
}

// Closest returns the known type nearest to t by edit distance (ties go to
// the type that sorts first), or "" for an empty registry. The cost is
// bounded: t is cut to [MaxTypeBytes] bytes first.
func (r *Registry) Closest(t string) string {
	if r.Len() == 0 {
		return ""
	}
	if len(t) > MaxTypeBytes {
		t = t[:MaxTypeBytes]
	}
	best, bestD := "", -1
	row := make([]int, MaxTypeBytes+1)
	for _, k := range r.sorted {
		if d := editDistance(t, k, row); bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// Check returns nil when t is a well-formed known type, else an
// InvalidArgument error with a violation of field "type": for a malformed
// type, what shape is allowed; for an unknown one, the type and the
// closest known type.
func (r *Registry) Check(t string) error {
	if reason := typeProblem(t); reason != "" {
		return apierr.Invalidf("type", "%s", reason)
	}
	if r.Known(t) {
		return nil
	}
	if c := r.Closest(t); c != "" {
		return apierr.Invalidf("type", "unknown event type %q; did you mean %q?", t, c)
	}
	return apierr.Invalidf("type", "unknown event type %q; no event types are known", t)
}

// editDistance returns the Levenshtein distance of a and b (bytes), using
// row (at least len(b)+1 long) as scratch space.
func editDistance(a, b string, row []int) int {
	row = row[:len(b)+1]
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		prev := row[0] // d[i-1][j-1]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cur := row[j] // d[i-1][j]
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			row[j] = min(row[j]+1, row[j-1]+1, prev+cost)
			prev = cur
		}
	}
	return row[len(b)]
}
