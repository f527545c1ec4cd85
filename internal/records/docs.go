package records

import (
	"time"

	"github.com/edgeplane/edgeplane/internal/jsonenc"
	"github.com/edgeplane/edgeplane/resource"
)

// ClonePtr returns a pointer to a copy of *p, nil when p is.
func ClonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// RefIDs returns the IDs of refs; nil for none.
func RefIDs(refs []resource.Ref) []string {
	if len(refs) == 0 {
		return nil
	}
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

// IDRefs returns Refs with the IDs ids and no URI (present fills it);
// never nil.
func IDRefs(ids []string) []resource.Ref {
	out := make([]resource.Ref, len(ids))
	for i, id := range ids {
		out[i] = resource.Ref{ID: id}
	}
	return out
}

// IDRef returns a Ref to id, nil when id is "".
func IDRef(id string) *resource.Ref {
	if id == "" {
		return nil
	}
	return &resource.Ref{ID: id}
}

// RefID returns the ID of r, "" when r is nil.
func RefID(r *resource.Ref) string {
	if r == nil {
		return ""
	}
	return r.ID
}

// Common is the part of most documents every resource with a description
// has: when it was created, and the user's description and metadata.
type Common struct {
	CreatedAt   time.Time `json:"created_at"`
	Description string    `json:"description,omitempty"`
	Metadata    string    `json:"metadata,omitempty"`
}

// AppendOpening appends to dst the opening of the object encoding/json
// makes of a document that embeds c first: '{' and c's fields. It returns
// dst unchanged and false where encoding/json fails (see
// [jsonenc.AppendTime]). (It is not named AppendDocJSON: every document that
// embeds Common would then be a DocAppender.)
func (c *Common) AppendOpening(dst []byte) ([]byte, bool) {
	n := len(dst)
	dst, ok := jsonenc.AppendTime(append(dst, `{"created_at":`...), c.CreatedAt)
	if !ok {
		return dst[:n], false
	}
	if c.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonenc.AppendString(dst, c.Description)
	}
	if c.Metadata != "" {
		dst = append(dst, `,"metadata":`...)
		dst = jsonenc.AppendString(dst, c.Metadata)
	}
	return dst, true
}
