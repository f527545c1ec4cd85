package httpapi_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/edgeplane/edgeplane"
)

// TestResponsesEncodeAsEncodingJSON: responses are encoded with
// github.com/goccy/go-json; their bytes are what encoding/json makes of
// the same values (field order, escaping, timestamps, null and empty
// lists), and they carry their Content-Length.
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
