package edgeplane

import (
	"context"
	"encoding/json"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/records"
)

// Transport is the side of a Service for a transport that writes the
// API's JSON itself (package httpapi): reads and lists answered as the
// JSON the API shows, copied from encodings cached with the records (see
// [Options.CacheBytes]) instead of decoded, modelled and encoded for each
// request. A Go program reads values through the Service's methods and
// has no use for it. A host obtains it with [Service.Transport], as it
// obtains [Host] for privileged operations.
type Transport struct{ s *Service }

// Transport returns the Service's side for transports.
func (s *Service) Transport() *Transport { return &Transport{s: s} }

// EncodedPage is one page of a list, newest first, whose items are the
// JSON the API answers for them.
type EncodedPage struct {
	// URI is the URI of the list resource.
	URI string
	// NextPageURI is the absolute URI of the next page, or nil on the last
	// page.
	NextPageURI *string

	items [][]byte // each item's JSON; shared with the record cache: never changed
}

// AppendItemsJSON appends the page's items to dst as a JSON array, each
// item as the API answers it (as encoding/json marshals the Items of the
// [Page] the Service's list method returns), and returns the extended
// buffer.
func (pg *EncodedPage) AppendItemsJSON(dst []byte) []byte {
	dst = append(dst, '[')
	for i, b := range pg.items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, b...)
	}
	return append(dst, ']')
}

// encodedPageOf returns the EncodedPage of a listing of the collection at
// path: the listing's encodings, or, for a listing of values (a filtered
// list), what encoding/json makes of each.
func encodedPageOf[T any](s *Service, path string, opts ListOptions, l *records.Listing[T], err error) (*EncodedPage, error) {
	pg, err := pageOf(s, path, opts, l, err)
	if err != nil {
		return nil, err
	}
	out := &EncodedPage{URI: pg.URI, NextPageURI: pg.NextPageURI, items: l.JSON}
	if !l.Encoded {
		out.items = make([][]byte, len(l.Items))
		for i := range l.Items {
			b, err := json.Marshal(&l.Items[i])
			if err != nil {
				s.log.Error("cannot encode a listed resource", "path", path, "err", err)
				return nil, apierr.Wrap(apierr.Internal, err, "internal error")
			}
			out.items[i] = b
		}
	}
	return out, nil
}

// ListCredentials answers [Service.ListCredentials] as JSON (GET
// /credentials): without a filter, each item is the encoding cached with
// its record's version, made and cached when the cache has none.
func (t *Transport) ListCredentials(ctx context.Context, p Principal, opts ListOptions) (*EncodedPage, error) {
	s := t.s
	l, err := records.ListEncoded(ctx, s.db, p, credentialForm.Form, "", listQuery(opts), s.presentCredential)
	return encodedPageOf(s, credentialKind.Collection, opts, l, err)
}

// AppendCredentialJSON appends to dst the credential id as GET
// /credentials/{id} answers it: the JSON encoding/json makes of what
// [Service.GetCredential] returns, with its errors. It is copied from the
// encoding cached with the record when the record cache holds one, so
// that a transport's read costs no decode and no encode.
func (t *Transport) AppendCredentialJSON(ctx context.Context, p Principal, id string, dst []byte) ([]byte, error) {
	return records.AppendJSON(ctx, t.s.db, p, credentialForm.Form, id, t.s.presentCredential, dst)
}
