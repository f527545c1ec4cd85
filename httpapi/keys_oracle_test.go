package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/google/go-cmp/cmp"
)

// tokenChecker is the key check as it was before the byte scanner: a
// walk of json.Decoder tokens. FuzzCheckKeysMatchesTokenWalk holds the
// scanner to its results.
type tokenChecker struct {
	dec     *json.Decoder
	vs      apierr.Violations
	omitted int
}

// checkKeysTokens is checkKeys by tokenChecker.
// The int is the offset of the first value's end.
func checkKeysTokens(data []byte, t reflect.Type) (apierr.Violations, int, int, error) {
	k := tokenChecker{dec: json.NewDecoder(bytes.NewReader(data))}
	k.dec.UseNumber()
	if err := k.value(t, location{root: true, index: -1}); err != nil {
		return nil, 0, 0, errMalformed
	}
	return k.vs, k.omitted, int(k.dec.InputOffset()), nil
}

func (k *tokenChecker) add(l location, reason string) {
	if len(k.vs) == MaxViolations {
		k.omitted++
		return
	}
	k.vs = append(k.vs, apierr.Violation{Field: l.path(), Reason: reason})
}

// value walks one JSON value decoded into t (nil: unknown) at l.
func (k *tokenChecker) value(t reflect.Type, l location) error {
	tok, err := k.dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	path := l.path()
	t = shape(t)
	if d == '[' {
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; k.dec.More(); i++ {
			if err := k.value(elem, location{parent: path, index: i}); err != nil {
				return err
			}
		}
		_, err := k.dec.Token() // ]
		return err
	}
	var (
		fields map[string]reflect.Type // a struct's
		elem   reflect.Type            // a map's
		inMap  = t != nil && t.Kind() == reflect.Map
	)
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = fieldsOf(t)
	case inMap:
		elem = t.Elem()
	}
	seen := make(map[string]struct{})
	for k.dec.More() {
		tok, err := k.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		at := location{parent: path, key: []byte(key), index: -1, inMap: inMap}
		vt := elem
		switch _, dup := seen[key]; {
		case dup:
			k.add(at, reasonDuplicateKey)
			vt = nil // its keys were checked against the type at the first
		case fields != nil:
			ft, ok := fields[key]
			if !ok {
				k.add(at, reasonInexactKey)
			}
			vt = ft
		}
		seen[key] = struct{}{}
		if err := k.value(vt, at); err != nil {
			return err
		}
	}
	_, err = k.dec.Token() // }
	return err
}

// FuzzCheckKeysMatchesTokenWalk: the byte scanner of checkKeys finds
// exactly the violations (and counts exactly the omitted ones) the walk of
// json.Decoder tokens found, in the same order, on valid JSON, typed and
// untyped; on anything else it either calls it malformed or agrees with
// the token walk. Both end the first value at the same offset.
func FuzzCheckKeysMatchesTokenWalk(f *testing.F) {
	for _, seed := range []string{
		`{}`, `[]`, `1`, `-0.5e+7`, `{"acl":["a"],"acl":["*"]}`, `{"policy":{"authority":"a","authority":"b"}}`,
		`{"rules":[{"authority":"a"},{"authority":"a","authority":"b"}]}`, `{"labels":{"a":"1","a":"2"}}`,
		`{"raw":{"x":{"y":1,"y":2}}}`, `{"a":{"b":[{"c":{}},{"c":{},"c":[]}]}}`, `{"\u0061":1,"a":2}`,
		`{"ACL":[],"Policy":{"AUTHORITY":"x"}}`, `{"a":"\ud800","a":"x"}`, "{\"\xff\":1,\"\xfe\":2}",
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"a":18}`,
		`{"a":tru}`, `{"a":01}`, `{"a":1.}`, `{"a" : [ true , false , null ] }`, "{\"a\":\"\x01\"}", `{"a\q":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, typ := range []reflect.Type{nil, reflect.TypeFor[keyTestBody]()} {
			end, err := checkKeys(data, typ)
			vs, omitted, tokEnd, tokErr := checkKeysTokens(data, typ)
			if errors.Is(err, errMalformed) {
				if json.Valid(data) {
					t.Fatalf("checkKeys(%q) calls valid JSON malformed", data)
				}
				continue
			}
			if tokErr != nil {
				if json.Valid(data) {
					t.Fatalf("the token walk calls valid JSON %q malformed", data)
				}
				t.Fatalf("checkKeys(%q) = %v; the token walk calls it malformed", data, err)
			}
			if end != tokEnd {
				t.Errorf("checkKeys(%q) ends the first value at %d, the token walk at %d", data, end, tokEnd)
			}
			var capped *cappedError
			gotOmitted := 0
			if errors.As(err, &capped) {
				gotOmitted = capped.omitted
			}
			if diff := cmp.Diff(vs, apierr.Violations(apierr.ViolationsOf(err)), cmp.Comparer(func(a, b apierr.Violations) bool { return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b) })); diff != "" || gotOmitted != omitted {
				t.Errorf("checkKeys(%q) (type %v): violations differ from the token walk (-walk +scanner):\n%s\nomitted %d, walk %d", data, typ, diff, gotOmitted, omitted)
			}
		}
	})
}
