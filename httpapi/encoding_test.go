package httpapi_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/credentials"
)

// TestResponsesEncodeAsEncodingJSON: responses are encoded with
// github.com/go-json-experiment/json/v1 (or by the model itself); their
// bytes are what encoding/json makes of the same values (field order,
// escaping, timestamps, null and empty lists), and they carry their
// Content-Length.
func TestResponsesEncodeAsEncodingJSON(t *testing.T) {
	s := newE2E(t)
	ctx := context.Background()
	id := create(t, s, s.keyA, "/credentials", `{"description":"<ci> & \"quotes\" é \u2028","metadata":"{\"a\":1}","acl":["bind:*.example.com"]}`, "cr_")
	r := call(t, s, "GET", "/credentials/"+id, s.keyA, "")
	p, err := s.svc.Authenticate(ctx, s.keyA)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.svc.GetCredential(ctx, p, id)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(c)
	if string(r.body) != string(want)+"\n" {
		t.Errorf("GET body\n%s\nencoding/json\n%s", r.body, want)
	}
	if r.header.Get("Content-Length") != strconv.Itoa(len(r.body)) {
		t.Errorf("Content-Length %q for %d bytes", r.header.Get("Content-Length"), len(r.body))
	}
	page, err := s.svc.ListCredentials(ctx, p, edgeplane.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ = json.Marshal(map[string]any{"credentials": page.Items, "uri": page.URI, "next_page_uri": page.NextPageURI})
	if r := call(t, s, "GET", "/credentials", s.keyA, ""); string(r.body) != string(want)+"\n" {
		t.Errorf("list body\n%s\nencoding/json\n%s", r.body, want)
	}
}

// TestReflectedResponsesEncodeAsEncodingJSON: a response of a kind that
// does not encode itself (an IP policy, and a page of them) is written by
// the response encoder by reflection; its bytes are what encoding/json
// makes of the same value, with strings that encoders escape differently
// (HTML, U+2028, control characters).
func TestReflectedResponsesEncodeAsEncodingJSON(t *testing.T) {
	s := newE2E(t)
	ctx := context.Background()
	id := create(t, s, s.keyA, "/ip_policies", `{"description":"<ip> & \"quotes\" é \u2028 \b\f\u0001","metadata":"{\"a\":1}"}`, "ipp_")
	create(t, s, s.keyA, "/ip_policies", `{}`, "ipp_")
	p, err := s.svc.Authenticate(ctx, s.keyA)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := s.svc.GetIPPolicy(ctx, p, id)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(pol)
	if r := call(t, s, "GET", "/ip_policies/"+id, s.keyA, ""); string(r.body) != string(want)+"\n" {
		t.Errorf("GET body\n%s\nencoding/json\n%s", r.body, want)
	}
	page, err := s.svc.ListIPPolicies(ctx, p, edgeplane.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ = json.Marshal(map[string]any{"ip_policies": page.Items, "uri": page.URI, "next_page_uri": page.NextPageURI})
	if r := call(t, s, "GET", "/ip_policies", s.keyA, ""); string(r.body) != string(want)+"\n" {
		t.Errorf("list body\n%s\nencoding/json\n%s", r.body, want)
	} else if r.header.Get("Content-Length") != strconv.Itoa(len(r.body)) {
		t.Errorf("Content-Length %q for %d bytes", r.header.Get("Content-Length"), len(r.body))
	}
}

// TestWritesEncodeAsEncodingJSON: the answers to POST and PATCH
// /credentials (written by Credential.AppendJSON) are what encoding/json
// makes of the credential they carry, followed by a newline as Encode
// writes it, with their Content-Length.
func TestWritesEncodeAsEncodingJSON(t *testing.T) {
	s := newE2E(t)
	check := func(what string, r response) {
		t.Helper()
		var c credentials.Credential
		if err := json.Unmarshal(r.body, &c); err != nil {
			t.Fatalf("%s: %v: %s", what, err, r.body)
		}
		want, _ := json.Marshal(&c)
		if string(r.body) != string(want)+"\n" {
			t.Errorf("%s body\n%q\nencoding/json\n%q", what, r.body, want)
		}
		if r.header.Get("Content-Length") != strconv.Itoa(len(r.body)) {
			t.Errorf("%s: Content-Length %q for %d bytes", what, r.header.Get("Content-Length"), len(r.body))
		}
	}
	r := call(t, s, "POST", "/credentials", s.keyA, `{"description":"<ci> & \"quotes\" é \u2028","metadata":"{\"a\":1}","acl":["bind:*.example.com"]}`)
	if r.status != 201 {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	check("POST", r)
	id := wantID(t, r.json["id"], "cr_")
	r = call(t, s, "PATCH", "/credentials/"+id, s.keyA, `{"metadata":"\u2029<>","acl":[]}`)
	if r.status != 200 {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	check("PATCH", r)
}

// TestEncodedPagesAsEncodingJSON: a list page answered from the items'
// cached encodings (edgeplane.Transport.ListCredentials) has the bytes
// encoding/json makes of the page's values: on a first page with a next
// page, on the page after it, and after a PATCH and a DELETE changed what
// the cached encodings showed (the page then shows the new values).
func TestEncodedPagesAsEncodingJSON(t *testing.T) {
	s := newE2E(t)
	ctx := context.Background()
	p, err := s.svc.Authenticate(ctx, s.keyA)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, body := range []string{`{}`, `{"description":"<b> & é \u2028"}`, `{"acl":["bind:*.example.com","bind:env=prod"]}`, `{"metadata":"{\"a\":1}"}`} {
		ids = append(ids, create(t, s, s.keyA, "/credentials", body, "cr_"))
	}
	check := func(name, path string, opts edgeplane.ListOptions) {
		t.Helper()
		page, err := s.svc.ListCredentials(ctx, p, opts)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(map[string]any{"credentials": page.Items, "uri": page.URI, "next_page_uri": page.NextPageURI})
		for i := range 2 { // a miss that caches the encodings, then a hit
			if r := call(t, s, "GET", path, s.keyA, ""); string(r.body) != string(want)+"\n" {
				t.Errorf("%s (read %d): body\n%s\nencoding/json\n%s", name, i, r.body, want)
			}
		}
		enc, err := s.svc.Transport().ListCredentials(ctx, p, opts)
		if err != nil {
			t.Fatal(err)
		}
		if enc.URI != page.URI || !reflect.DeepEqual(enc.NextPageURI, page.NextPageURI) {
			t.Errorf("%s: the encoded page's URIs %s, %v; the values' %s, %v", name, enc.URI, enc.NextPageURI, page.URI, page.NextPageURI)
		}
		items, _ := json.Marshal(page.Items)
		if got := enc.AppendItemsJSON(nil); string(got) != string(items) {
			t.Errorf("%s: AppendItemsJSON %s; want %s", name, got, items)
		}
	}
	check("first page", "/credentials?limit=3", edgeplane.ListOptions{Limit: 3})
	check("second page", "/credentials?limit=3&before_id="+ids[1], edgeplane.ListOptions{Limit: 3, BeforeID: ids[1]})
	if r := call(t, s, "PATCH", "/credentials/"+ids[2], s.keyA, `{"description":"renamed","acl":[]}`); r.status != 200 {
		t.Fatal(r.status, string(r.body))
	}
	if r := call(t, s, "DELETE", "/credentials/"+ids[3], s.keyA, ""); r.status != 204 {
		t.Fatal(r.status, string(r.body))
	}
	check("after a patch and a delete", "/credentials", edgeplane.ListOptions{})
	r := call(t, s, "GET", "/credentials", s.keyA, "")
	if !strings.Contains(string(r.body), `"description":"renamed"`) || strings.Contains(string(r.body), ids[3]) {
		t.Errorf("the page shows what was cached before the writes: %s", r.body)
	}
}
