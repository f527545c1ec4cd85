package httpapi

import (
	"context"
	"reflect"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/go-cmp/cmp"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/memstore"
)

// requestTypes returns the request body type of every route of the API,
// and keyTestBody, which has every shape checkKeys walks.
func requestTypes(t testing.TB) []reflect.Type {
	t.Helper()
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	h, err := New(svc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[reflect.Type]bool{}
	out := []reflect.Type{reflect.TypeFor[keyTestBody]()}
	for _, rt := range h.table() {
		if rt.req != nil && !seen[rt.req] {
			seen[rt.req] = true
			out = append(out, rt.req)
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d request types: the route table has changed shape", len(out))
	}
	return out
}

// strictAgreement checks decodeBody's fast path against data for typ:
// when the strict decoder accepts data, decodeChecked must accept it too
// and decode the same value.
func strictAgreement(t *testing.T, typ reflect.Type, data []byte) {
	t.Helper()
	fast := reflect.New(typ)
	if jsonv2.Unmarshal(data, fast.Interface(), jsonv2.RejectUnknownMembers(true)) != nil {
		return
	}
	checked := reflect.New(typ)
	if err := decodeChecked(data, checked.Interface(), typ); err != nil {
		t.Fatalf("%v: the strict decoder accepts %q, decodeChecked refuses it: %v", typ, data, err)
	}
	all := cmp.Exporter(func(reflect.Type) bool { return true }) // unexported fields too
	if diff := cmp.Diff(checked.Elem().Interface(), fast.Elem().Interface(), all); diff != "" {
		t.Fatalf("%v: %q decodes differently (-decodeChecked +strict):\n%s", typ, data, diff)
	}
}

// FuzzStrictAgreesWithChecked holds decodeBody's fast path to what its
// comment says: whatever github.com/go-json-experiment/json's strict
// Unmarshal accepts, for any request type of the API, decodeChecked (the
// encoding/json path that names what is wrong) accepts with an equal
// value, so that taking the fast path changes no answer.
func FuzzStrictAgreesWithChecked(f *testing.F) {
	for _, seed := range []string{
		`{}`, ` {} `, `null`, `[]`, `"x"`, `{"description":"d","acl":["bind:*.example.com"]}`,
		`{"metadata":"patched"}`, `{"metadata":null}`, `{"acl":[]}`, `{"acl":null}`,
		`{"Description":"d"}`, `{"description":"a","description":"b"}`, `{"description":"\ud800"}`,
		"{\"description\":\"\xff\"}", `{"description":"d"} {}`, `{"description":"d"}x`,
		`{"enabled":true,"add":{"x-a":"1","X-A":"2"},"remove":["x-b"]}`,
		`{"add":{"k":"1","k":"2"}}`, `{"raw":{"a":[1,2,{"b":null}]},"any":[1,"x",true]}`,
		`{"raw":{"a":1,"a":2}}`, `{"any":{"a":1,"a":2}}`, `{"extra":"e","keyTestEmbedded":{}}`,
		`{"ByName":{"k":{"authority":"a"}}}`, `{"byname":{}}`, `{"Skip":"s"}`, `{"-":"s"}`,
		`{"grid":[[{"authority":"a"}],[]]}`, `{"policy":{"authority":"a","Authority":"b"}}`,
		`{"port":443,"enabled":false}`, `{"port":1e2}`, `{"port":-0}`, `{"port":70000}`,
		`{"match_type":"path_prefix","match":"/","backend":{"enabled":true,"backend_id":""}}`,
		`{"expires_at":"2026-01-01T00:00:00Z"}`, `{"ip_policy_ids":["ipp_1"],"description":""}`,
	} {
		f.Add([]byte(seed))
	}
	types := requestTypes(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, typ := range types {
			strictAgreement(t, typ, data)
		}
	})
}

// TestStrictPathTaken checks that the fast path is the one a plain body
// takes, and that a body it refuses still gets decodeChecked's answer:
// the fuzz test above cannot fail if the strict decoder accepts nothing.
func TestStrictPathTaken(t *testing.T) {
	type body = struct {
		Description string `json:"description"`
	}
	var v body
	if err := jsonv2.Unmarshal([]byte(`{"description":"d"}`), &v, jsonv2.RejectUnknownMembers(true)); err != nil || v.Description != "d" {
		t.Fatalf("strict decode = %+v, %v", v, err)
	}
	for _, refused := range []string{`{"Description":"d"}`, `{"description":"a","description":"b"}`, `{"other":1}`, `{"description":"d"} {}`} {
		if err := jsonv2.Unmarshal([]byte(refused), new(body), jsonv2.RejectUnknownMembers(true)); err == nil {
			t.Errorf("the strict decoder accepts %s", refused)
		}
		if err := decodeChecked([]byte(refused), new(body), reflect.TypeFor[body]()); err == nil {
			t.Errorf("decodeChecked accepts %s", refused)
		}
	}
}

// BenchmarkDecode compares decodeBody's two paths on the bodies the load
// harness sends: strict is the fast path a good body takes, checked what
// every body took before it (and a refused one still takes).
func BenchmarkDecode(b *testing.B) {
	bodies := []struct {
		name string
		typ  reflect.Type
		data []byte
	}{
		{"create", reflect.TypeFor[credentials.CreateParams](), []byte(`{"description":"load","acl":["bind:*.example.com"]}`)},
		{"update", reflect.TypeFor[credentials.UpdateParams](), []byte(`{"metadata":"patched"}`)},
	}
	for _, body := range bodies {
		b.Run(body.name+"/strict", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := jsonv2.Unmarshal(body.data, reflect.New(body.typ).Interface(), jsonv2.RejectUnknownMembers(true)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(body.name+"/checked", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := decodeChecked(body.data, reflect.New(body.typ).Interface(), body.typ); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
