package httpapi

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane/apierr"
)

// Reasons of the violations checkKeys records.
const (
	reasonDuplicateKey = "appears more than once in its object; each key may appear only once"
	reasonInexactKey   = "is not a field of this request (field names are case-sensitive)"
)

// errMalformed is checkKeys' error for data that is not JSON.
var errMalformed = errors.New("malformed JSON")

// checkKeys walks the first JSON value of data once, byte by byte, and
// returns an InvalidArgument error listing every object key that appears
// twice in its object (at every nesting level, whatever the Go type) and
// every key of an object decoded into a struct of t that names no field
// of it exactly (unknown, or matched only case-insensitively). It returns
// errMalformed when data is not JSON (by the grammar encoding/json
// enforces, nesting deeper than it allows included), and ignores what
// follows the first value, whose end (an offset in data) it returns.
//
// It keeps the first [MaxViolations] violations and counts the rest (a
// body of nothing but duplicate keys would otherwise make a violation of
// every six bytes): past the cap the error is a *cappedError.
func checkKeys(data []byte, t reflect.Type) (end int, err error) {
	k := keyChecker{data: data}
	if err := k.value(t, location{root: true, index: -1}, 0); err != nil {
		return 0, errMalformed
	}
	if k.omitted == 0 {
		return k.pos, k.vs.Err()
	}
	ae := &apierr.Error{Code: apierr.InvalidArgument, Violations: k.vs}
	ae.Msg, _, _ = bounded(ae, k.omitted)
	return k.pos, &cappedError{err: ae, omitted: k.omitted}
}

// cappedError is a validation error that lists the first [MaxViolations]
// violations and counts the others.
type cappedError struct {
	err     *apierr.Error
	omitted int // violations found beyond err.Violations
}

func (e *cappedError) Error() string { return e.err.Msg }
func (e *cappedError) Unwrap() error { return e.err }

// keyChecker is the state of one checkKeys walk: a scanner over data
// that reads it once, allocating only for violations, keys that need
// unescaping and the key sets of large objects.
type keyChecker struct {
	data    []byte
	pos     int
	vs      apierr.Violations
	omitted int
}

// maxKeyDepth is the deepest nesting checkKeys walks: encoding/json's
// decoder refuses deeper values (its maxNestingDepth).
const maxKeyDepth = 10000

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// shape returns the type whose fields, elements or values the JSON value
// of t fills, or nil when t says nothing about them (no type, an
// interface, []byte or json.RawMessage, or a type that decodes itself).
func shape(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return t
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() != reflect.Uint8 {
			return t
		}
	}
	return nil
}

// location is where a JSON value is: the path of its container and its
// key or index there. Its path is built only when needed (a violation, or
// a container to walk into), not for every scalar.
type location struct {
	parent string
	// key is an object's key (nil for an array element or the root): the
	// bytes checkKeys read, made a string only for a path, so that a key
	// of a scalar value costs no allocation.
	key   []byte
	index int  // an array element's index, else -1
	inMap bool // the key is a Go map's: written ["key"]
	root  bool
}

func (l location) path() string {
	switch {
	case l.root:
		return ""
	case l.index >= 0:
		return l.parent + "[" + strconv.Itoa(l.index) + "]"
	case l.inMap:
		return l.parent + "[" + strconv.Quote(string(l.key)) + "]"
	}
	return apierr.JoinPath(l.parent, string(l.key))
}

// add records a violation of the value at l, or counts it past the cap.
func (k *keyChecker) add(l location, reason string) {
	if len(k.vs) == MaxViolations {
		k.omitted++
		return
	}
	k.vs = append(k.vs, apierr.Violation{Field: l.path(), Reason: reason})
}

// skipSpace moves past JSON whitespace and returns the next byte, 0 at
// the end.
func (k *keyChecker) skipSpace() byte {
	for k.pos < len(k.data) {
		switch c := k.data[k.pos]; c {
		case ' ', '\t', '\n', '\r':
			k.pos++
		default:
			return c
		}
	}
	return 0
}

// value walks one JSON value decoded into t (nil: unknown) at l, depth
// containers deep.
func (k *keyChecker) value(t reflect.Type, l location, depth int) error {
	switch c := k.skipSpace(); {
	case c == '{' || c == '[':
		if depth >= maxKeyDepth {
			return errMalformed
		}
		k.pos++
		if c == '[' {
			return k.array(t, l, depth+1)
		}
		return k.object(t, l, depth+1)
	case c == '"':
		_, _, err := k.str()
		return err
	case c == '-' || c >= '0' && c <= '9':
		return k.number()
	case c == 't':
		return k.literal("true")
	case c == 'f':
		return k.literal("false")
	case c == 'n':
		return k.literal("null")
	}
	return errMalformed
}

// array walks the elements of an array whose [ was read.
func (k *keyChecker) array(t reflect.Type, l location, depth int) error {
	path := l.path()
	var elem reflect.Type
	if t = shape(t); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	if k.skipSpace() == ']' {
		k.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := k.value(elem, location{parent: path, index: i}, depth); err != nil {
			return err
		}
		switch k.skipSpace() {
		case ',':
			k.pos++
		case ']':
			k.pos++
			return nil
		default:
			return errMalformed
		}
	}
}

// smallObject is how many keys an object may have before its keys are
// remembered in a map rather than a slice searched linearly.
const smallObject = 16

// object walks the members of an object whose { was read.
func (k *keyChecker) object(t reflect.Type, l location, depth int) error {
	path := l.path()
	var (
		fields map[string]reflect.Type // a struct's
		elem   reflect.Type            // a map's
	)
	t = shape(t)
	inMap := t != nil && t.Kind() == reflect.Map
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = fieldsOf(t)
	case inMap:
		elem = t.Elem()
	}
	if k.skipSpace() == '}' {
		k.pos++
		return nil
	}
	var (
		few  [8][]byte
		seen = few[:0]
		many map[string]struct{}
	)
	for {
		if k.skipSpace() != '"' {
			return errMalformed
		}
		raw, err := k.key()
		if err != nil {
			return err
		}
		if k.skipSpace() != ':' {
			return errMalformed
		}
		k.pos++
		// The key is compared as bytes and made a string only when kept
		// in a large object's set or named in a path: a body of scalar
		// values, or of repeated keys past the cap of violations, costs no
		// allocation per key.
		dup := false
		if many != nil {
			_, dup = many[string(raw)]
		} else {
			for _, s := range seen {
				if string(s) == string(raw) {
					dup = true
					break
				}
			}
		}
		var key []byte
		if !dup || len(k.vs) < MaxViolations {
			key = raw
		}
		switch {
		case dup:
		case many != nil:
			many[string(raw)] = struct{}{}
		case len(seen) < smallObject:
			seen = append(seen, raw)
		default:
			many = make(map[string]struct{}, 2*smallObject)
			for _, s := range seen {
				many[string(s)] = struct{}{}
			}
			many[string(raw)] = struct{}{}
		}
		// Past the cap, a duplicate's key is left out of its location:
		// nothing below it is named in a violation any more.
		at := location{parent: path, key: key, index: -1, inMap: inMap}
		vt := elem
		switch {
		case dup:
			k.add(at, reasonDuplicateKey)
			vt = nil // its keys were checked against the type at the first
		case fields != nil:
			ft, ok := fields[string(raw)]
			if !ok {
				k.add(at, reasonInexactKey)
			}
			vt = ft
		}
		if err := k.value(vt, at, depth); err != nil {
			return err
		}
		switch k.skipSpace() {
		case ',':
			k.pos++
		case '}':
			k.pos++
			return nil
		default:
			return errMalformed
		}
	}
}

// key reads a string at the opening quote and returns it as
// encoding/json decodes it (escapes resolved, invalid UTF-8 replaced): a
// slice of data when it has no escape and is valid UTF-8.
func (k *keyChecker) key() ([]byte, error) {
	start := k.pos
	raw, plain, err := k.str()
	if err != nil || plain && utf8.Valid(raw) {
		return raw, err
	}
	var s string
	if err := json.Unmarshal(k.data[start:k.pos], &s); err != nil {
		return nil, errMalformed
	}
	return []byte(s), nil
}

// str reads a string at the opening quote and returns the bytes between
// the quotes, and whether they hold no escape.
func (k *keyChecker) str() (raw []byte, plain bool, err error) {
	start := k.pos
	k.pos++
	plain = true
	for k.pos < len(k.data) {
		c := k.data[k.pos]
		switch {
		case c == '"':
			k.pos++
			return k.data[start+1 : k.pos-1], plain, nil
		case c < 0x20:
			return nil, false, errMalformed
		case c == '\\':
			plain = false
			if k.pos+1 >= len(k.data) {
				return nil, false, errMalformed
			}
			switch k.data[k.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				k.pos += 2
			case 'u':
				if k.pos+6 > len(k.data) {
					return nil, false, errMalformed
				}
				for _, h := range k.data[k.pos+2 : k.pos+6] {
					if !isHex(h) {
						return nil, false, errMalformed
					}
				}
				k.pos += 6
			default:
				return nil, false, errMalformed
			}
		default:
			k.pos++
		}
	}
	return nil, false, errMalformed
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number reads a number by JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (k *keyChecker) number() error {
	d := k.data
	if k.pos < len(d) && d[k.pos] == '-' {
		k.pos++
	}
	switch {
	case k.pos < len(d) && d[k.pos] == '0':
		k.pos++
	case k.pos < len(d) && d[k.pos] >= '1' && d[k.pos] <= '9':
		k.digits()
	default:
		return errMalformed
	}
	if k.pos < len(d) && d[k.pos] == '.' {
		k.pos++
		if k.digits() == 0 {
			return errMalformed
		}
	}
	if k.pos < len(d) && (d[k.pos] == 'e' || d[k.pos] == 'E') {
		k.pos++
		if k.pos < len(d) && (d[k.pos] == '+' || d[k.pos] == '-') {
			k.pos++
		}
		if k.digits() == 0 {
			return errMalformed
		}
	}
	return nil
}

// digits moves past decimal digits and returns how many.
func (k *keyChecker) digits() int {
	n := 0
	for k.pos < len(k.data) && k.data[k.pos] >= '0' && k.data[k.pos] <= '9' {
		k.pos++
		n++
	}
	return n
}

// literal reads the literal word.
func (k *keyChecker) literal(word string) error {
	if !bytes.HasPrefix(k.data[k.pos:], []byte(word)) {
		return errMalformed
	}
	k.pos += len(word)
	return nil
}

// jsonFields maps the JSON names of t's fields (including those of
// embedded structs without a name of their own) to their types.
// knownFields caches jsonFields by type: request types are a fixed set
// (the route table's), so it is bounded by them.
var knownFields sync.Map // reflect.Type -> map[string]reflect.Type

// fieldsOf returns jsonFields(t), computed once per type.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := knownFields.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	f, _ := knownFields.LoadOrStore(t, jsonFields(t))
	return f.(map[string]reflect.Type)
}

func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type)
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
