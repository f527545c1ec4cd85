package storedforms

import (
	"slices"

	"github.com/edgeplane/edgeplane/internal/records"

	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/internal/jsonenc"
	"github.com/edgeplane/edgeplane/store"
)

// Credential returns the stored form of credentials, of kind k.
func Credential(k *records.Kind) records.Form[credentials.Credential] {
	return records.WithOwn(records.PlainForm(k,
		func(c *credentials.Credential) *CredentialDoc {
			return &CredentialDoc{Common: records.Common{CreatedAt: c.CreatedAt, Description: c.Description, Metadata: c.Metadata}, ACL: c.ACL, OwnerID: c.OwnerID}
		},
		func(d *CredentialDoc, rec store.Record) *credentials.Credential {
			return &credentials.Credential{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata, ACL: slices.Clone(d.ACL), OwnerID: d.OwnerID}
		}), ownCredentialDoc)
}

// CredentialDoc is the stored form of a credential (see package internal/records). The
// token is not part of it: only its hash is stored, as the record's lookup
// key.
type CredentialDoc struct {
	records.Common
	ACL     []string `json:"acl,omitempty"`
	OwnerID string   `json:"owner_id"`
}

// The stored document encodes itself (records.MarshalDoc falls back to
// reflection silently, so the build checks that it still does).
var _ records.DocAppender = (*CredentialDoc)(nil)

// AppendDocJSON appends to dst the JSON encoding/json makes of d (see
// [records.DocAppender]), growing dst once by its length when no string needs
// escaping.
func (d *CredentialDoc) AppendDocJSON(dst []byte) ([]byte, bool) {
	n := len(`{"created_at":"2006-01-02T15:04:05.999999999-07:00","description":"","metadata":"","acl":[],"owner_id":""}`) +
		len(d.Description) + len(d.Metadata) + len(d.OwnerID)
	for _, r := range d.ACL {
		n += len(r) + len(`"",`)
	}
	dst, ok := d.Common.AppendOpening(slices.Grow(dst, n))
	if !ok {
		return dst, false
	}
	if len(d.ACL) > 0 {
		dst = append(dst, `,"acl":`...)
		dst = jsonenc.AppendStrings(dst, d.ACL)
	}
	dst = append(dst, `,"owner_id":`...)
	dst = jsonenc.AppendString(dst, d.OwnerID)
	return append(dst, '}'), true
}

// ownCredentialDoc is the form's own: a copy of d as decoding its JSON
// makes it (an empty ACL is left out of the JSON and decodes as nil; the
// time is UTC without a monotonic reading, see [resource.Timestamp], and
// decodes as it was).
func ownCredentialDoc(d *CredentialDoc) *CredentialDoc {
	c := *d
	c.ACL = nil
	if len(d.ACL) > 0 {
		c.ACL = slices.Clone(d.ACL)
	}
	return &c
}
