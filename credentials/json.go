package credentials

import "github.com/edgeplane/edgeplane/internal/jsonenc"

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
	dst = appendStrings(dst, c.ACL)
	dst = append(dst, `,"owner_id":`...)
	dst = jsonenc.AppendString(dst, c.OwnerID)
	return append(dst, '}'), true
}

// appendStrings appends ss as encoding/json encodes a []string: null when
// nil, else an array.
func appendStrings(dst []byte, ss []string) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonenc.AppendString(dst, s)
	}
	return append(dst, ']')
}
