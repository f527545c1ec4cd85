// Package resource holds the small pieces every edgeplane resource shares:
// the [Ref] that one resource uses to point at another, and the rules for
// timestamps.
package resource

import "time"

// Ref points at another resource: its identifier and the URI that locates
// it, {base_url}/<collection>/<id>.
type Ref struct {
	// ID is the referenced resource's identifier.
	ID string `json:"id"`
	// URI locates the referenced resource.
	URI string `json:"uri"`
}

// Timestamp returns t as stored and shown by edgeplane: in UTC, truncated
// to whole seconds, so that it marshals as RFC 3339 with a Z suffix
// ("2026-11-21T23:17:00Z").
func Timestamp(t time.Time) time.Time {
	return t.UTC().Truncate(time.Second)
}
