package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/edgeplane/edgeplane/apierr"
)

// decodeBody decodes a JSON request body into a T, strictly: the content
// type must be JSON, unknown fields, differently-cased and duplicate keys
// and trailing data are refused, and every failure names what was wrong.
// An empty body decodes as {}.
func decodeBody[T any](h *Handler, c *exchange, r *http.Request) (T, error) {
	var v T
	if r.ContentLength > h.opts.MaxBodyBytes {
		return v, tooLarge(h)
	}
	// The body is read into a pooled buffer: nothing decoded from it
	// keeps its memory (the decoders and checkKeys copy what they keep).
	buf := getJSONBuffer()
	defer putJSONBuffer(buf)
	switch ended, err := readBody(&buf.Buffer, r.Body, h.opts.MaxBodyBytes); {
	case err != nil:
		return v, apierr.New(apierr.InvalidArgument, "the request body could not be read")
	case !ended:
		return v, tooLarge(h)
	}
	c.unread = false
	data := buf.Bytes()
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return v, nil
	}
	if string(trimmed) == "null" {
		return v, apierr.New(apierr.InvalidArgument, "the request body must be a JSON object")
	}
	if ct := headerValue(r.Header, headerContentType); !isJSON(ct) {
		return v, apierr.New(apierr.UnsupportedMediaType, "the request body must be JSON with Content-Type: application/json; got %q", clip(ct, MaxEchoBytes))
	}
	// The strict decoder of github.com/go-json-experiment/json (the
	// mirror of encoding/json/v2) refuses unknown, differently-cased and
	// duplicate names, trailing data and invalid UTF-8 in one pass. What
	// it accepts, decodeChecked accepts too, with the same result
	// (FuzzStrictAgreesWithChecked); when it refuses, decodeChecked
	// decodes again, to say what was wrong in the API's words.
	if jsonv2.Unmarshal(data, &v, jsonv2.RejectUnknownMembers(true)) == nil {
		return v, nil
	}
	var checked T
	err := decodeChecked(data, &checked, reflect.TypeFor[T]())
	return checked, err
}

// decodeChecked decodes data, a JSON request body, into *ptr, of type
// typ, strictly, with encoding/json, and names what was wrong when it
// cannot. *ptr must be the zero value.
func decodeChecked(data []byte, ptr any, typ reflect.Type) error {
	// encoding/json matches keys to fields case-insensitively, even with
	// DisallowUnknownFields, and keeps the last of duplicate keys; the
	// API's field names are exact and each key may appear once. The keys
	// are checked first, so that every bad one is listed; malformed JSON
	// is left to Decode, which says where it is.
	end, err := checkKeys(data, typ)
	if err != nil && !errors.Is(err, errMalformed) {
		return err
	}
	if err == nil && len(bytes.TrimSpace(data[end:])) == 0 {
		// One valid JSON value whose every key names a field exactly
		// (checkKeys): Unmarshal decodes it as the strict decoder below
		// would, without the decoder's copy of the body. Should it fail
		// (a type mismatch), the decoder below says how, as always.
		if json.Unmarshal(data[:end], ptr) == nil {
			return nil
		}
		reflect.ValueOf(ptr).Elem().SetZero()
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(ptr); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return apierr.New(apierr.InvalidArgument, "the request body must hold one JSON value; found more data after it")
	}
	return nil
}

// readBody appends body to buf up to its end or past max bytes, and
// reports whether it ended within max bytes (a nil body is empty). It
// reads as buf.ReadFrom(http.MaxBytesReader(nil, body, max)) would,
// without the reader that allocates: one bound, checked here (net/http
// bounds a body by its Content-Length, which decodeBody compared with max
// before; a chunked one has no other bound).
func readBody(buf *bytes.Buffer, body io.Reader, max int64) (ended bool, err error) {
	if body == nil {
		return true, nil
	}
	for {
		buf.Grow(bytes.MinRead)
		b := buf.AvailableBuffer()
		b = b[:min(int64(cap(b)), max+1-int64(buf.Len()))]
		n, err := body.Read(b)
		buf.Write(b[:n])
		switch {
		case int64(buf.Len()) > max:
			return false, nil
		case err == io.EOF:
			return true, nil
		case err != nil:
			return false, err
		}
	}
}

func tooLarge(h *Handler) error {
	return apierr.New(apierr.PayloadTooLarge, "the request body exceeds %d bytes", h.opts.MaxBodyBytes)
}

func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// jsonError describes a decoding failure without internal detail.
func jsonError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		return apierr.New(apierr.InvalidArgument, "the request body is not valid JSON (at byte %d)", syn.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return apierr.New(apierr.InvalidArgument, "the request body must be a JSON object")
		}
		return apierr.Invalidf(field, "must be a JSON %s, got %s", jsonType(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return apierr.New(apierr.InvalidArgument, "the request body is truncated JSON")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return apierr.Invalidf(name, "is not a field of this request")
	}
	return apierr.New(apierr.InvalidArgument, "the request body is not valid JSON")
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	}
	return "number"
}
