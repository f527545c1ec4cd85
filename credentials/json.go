package credentials

import (
	"slices"

	"github.com/edgeplane/edgeplane/internal/jsonenc"
)

// A credential encodes itself where the Service and httpapi look for a
// [jsonenc.Appender]; were the method renamed, they would fall back to
// reflection without a word, so the build checks it.
var _ jsonenc.Appender = (*Credential)(nil)

// AppendJSON appends to dst the JSON encoding/json.Marshal makes of c (a
// nil c is null) and returns the extended buffer and true: the API's
// encoding of a credential, made without reflection, for the paths that
// answer one on every create, update and read. When encoding/json would
// fail (a CreatedAt outside RFC 3339's years 0 to 9999, or with a zone
// offset of 24 hours or more) it returns dst unchanged and false, and the
// caller falls back to encoding/json, which reports the error.
func (c *Credential) AppendJSON(dst []byte) ([]byte, bool) {
	if c == nil {
		return append(dst, "null"...), true
	}
	n := len(dst)
	dst = slices.Grow(dst, c.jsonLen())
	dst = append(dst, `{"id":`...)
	dst = jsonenc.AppendString(dst, c.ID)
	dst = append(dst, `,"uri":`...)
	dst = jsonenc.AppendString(dst, c.URI)
	dst = append(dst, `,"created_at":`...)
	dst, ok := jsonenc.AppendTime(dst, c.CreatedAt)
	if !ok {
		return dst[:n], false
	}
	dst = append(dst, `,"description":`...)
	dst = jsonenc.AppendString(dst, c.Description)
	dst = append(dst, `,"metadata":`...)
	dst = jsonenc.AppendString(dst, c.Metadata)
	dst = append(dst, `,"token":`...)
	if c.Token == nil {
		dst = append(dst, "null"...)
	} else {
		dst = jsonenc.AppendString(dst, *c.Token)
	}
	dst = append(dst, `,"acl":`...)
	dst = jsonenc.AppendStrings(dst, c.ACL)
	dst = append(dst, `,"owner_id":`...)
	dst = jsonenc.AppendString(dst, c.OwnerID)
	return append(dst, '}'), true
}

// jsonLen is the length of c's JSON when no string needs escaping and the
// time is at its longest: AppendJSON grows dst by it once, so that
// appending to nil allocates once.
func (c *Credential) jsonLen() int {
	n := len(`{"id":"","uri":"","created_at":"2006-01-02T15:04:05.999999999-07:00","description":"","metadata":"","token":"","acl":[],"owner_id":""}`) +
		len(c.ID) + len(c.URI) + len(c.Description) + len(c.Metadata) + len(c.OwnerID)
	if c.Token != nil {
		n += len(*c.Token)
	}
	for _, r := range c.ACL {
		n += len(r) + len(`"",`)
	}
	return n
}
