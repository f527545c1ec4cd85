// Package resource holds the small pieces every edgeplane resource shares:
// the [Ref] that one resource uses to point at another, the rules for
// timestamps, and the options that select a page of a list.
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

// ListOptions selects a page of a list.
type ListOptions struct {
	// Limit is the page size, 1..100. Zero means 100.
	Limit int
	// BeforeID is the cursor: the page starts after (older than) this ID.
	// Empty starts at the newest.
	BeforeID string
	// Filter, when not empty, is a CEL expression over obj, the resource
	// as the API shows it (see package filter): the page holds only the
	// resources it matches. A page then scans at most the Service's
	// MaxFilterScan resources and spends at most about its
	// MaxFilterPageCost evaluating the filter: when it reaches either
	// bound before it has Limit matches, it returns the matches so far
	// (possibly none) and a next page that continues after the last
	// resource scanned. NextPageURI keeps the filter. A filter that reads
	// a field computed by a store read per resource (a backend's
	// obj.tunnels) scans at most MaxPageSize resources per page.
	Filter string
}
