package console_test

import (
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/console"
)

// TestEndpoints: the endpoints page lists each endpoint with its agent's
// session; its filter box passes the API's filter, and a bad filter
// shows the API's message next to the box; an endpoint has a page.
func TestEndpoints(t *testing.T) {
	s := newServer(t, console.Options{})
	ts, ep := s.openSession(s.a, "app.example.com")
	b := s.browser(t)
	b.signIn(s.a.key)

	got := b.get("/console/endpoints")
	if got.status != http.StatusOK {
		t.Fatalf("%d %s", got.status, got.body)
	}
	for _, want := range []string{ep.URL, ts.ID, "3.18.4 linux/amd64 from 203.0.113.7", `href="/console/endpoints/` + ep.ID + `"`} {
		if !strings.Contains(got.body, want) {
			t.Errorf("the list lacks %q", want)
		}
	}

	cases := []struct {
		name, filter string
		status       int
		want         []string
		wantNot      []string
	}{
		{"matching", `obj.proto == "https"`, 200, []string{ep.URL}, nil},
		{"matching none", `obj.proto == "tcp"`, 200, []string{"No endpoint on this page matches the filter."}, []string{ep.URL}},
		{"malformed", `obj.proto ==`, 400, []string{`id="filter-error"`, "filter: 1:", `aria-invalid="true"`}, []string{ep.URL}},
		{"unknown field", `obj.nope == 1`, 400, []string{`id="filter-error"`, "filter: "}, []string{ep.URL}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := b.get("/console/endpoints?" + url.Values{"filter": {tc.filter}}.Encode())
			if got.status != tc.status {
				t.Errorf("%d, want %d", got.status, tc.status)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.body, w) {
					t.Errorf("the page lacks %q:\n%s", w, got.body)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(got.body, w) {
					t.Errorf("the page shows %q", w)
				}
			}
			if !strings.Contains(got.body, `value="`+htmlEscape(tc.filter)+`"`) {
				t.Errorf("the box does not keep the filter typed")
			}
		})
	}

	page := b.get("/console/endpoints/" + ep.ID)
	if page.status != http.StatusOK || !strings.Contains(page.body, ep.URL) || !strings.Contains(page.body, ts.ID) {
		t.Errorf("the endpoint's page: %d %s", page.status, page.body)
	}
}

// TestListQuery: every list page reads the API's limit and before_id,
// and shows the API's message for a bad one next to the filter box.
func TestListQuery(t *testing.T) {
	s := newServer(t, console.Options{})
	b := s.browser(t)
	b.signIn(s.a.key)
	for _, path := range s.listPaths() {
		for _, q := range []struct{ query, want string }{
			{"limit=x", "limit: must be a whole number between 1 and 100"},
			{"limit=0", "limit: must be between 1 and 100, got 0"},
			{"limit=101", "limit: must be between 1 and 100, got 101"},
			{"before_id=nope", "before_id: must be"},
			{"filter=a&filter=b", "filter: must be given at most once, got 2"},
		} {
			got := b.get(path + "?" + q.query)
			if got.status != http.StatusBadRequest || !strings.Contains(got.body, `id="filter-error"`) || !strings.Contains(got.body, q.want) {
				t.Errorf("%s?%s: %d, want 400 with %q next to the filter box:\n%s", path, q.query, got.status, q.want, got.body)
			}
		}
	}
}

// notLists are the console's GET routes without a path value that are
// not list pages: the overview's live stream, the static files, and the
// edges' redirect to the HTTPS edges.
var notLists = []string{"/console/live", "/console/static/", "/console/edges"}

// listPaths returns the console's list pages: every GET route it
// registered without a path value but notLists, so that a new list page
// is in every test that ranges over them without being named here.
func (s *server) listPaths() []string {
	var out []string
	for _, p := range console.Patterns(s.h) {
		path, ok := strings.CutPrefix(p, "GET ")
		if ok && !strings.Contains(path, "{") && !slices.Contains(notLists, path) {
			out = append(out, path)
		}
	}
	return out
}

// htmlEscape escapes s as html/template does in an attribute.
func htmlEscape(s string) string {
	return strings.NewReplacer(`&`, "&amp;", `"`, "&#34;", `'`, "&#39;", `<`, "&lt;", `>`, "&gt;", `+`, "&#43;").Replace(s)
}

// TestPaging: a list page of limit items links to the next, which keeps
// the limit and the filter and holds the rest.
func TestPaging(t *testing.T) {
	s := newServer(t, console.Options{})
	for _, d := range []string{"one", "two", "three", "other"} {
		s.createCredential(s.a, d)
	}
	b := s.browser(t)
	b.signIn(s.a.key)
	first := b.get("/console/credentials?" + url.Values{"limit": {"2"}, "filter": {`obj.description != "other"`}}.Encode())
	if !strings.Contains(first.body, ">three<") || !strings.Contains(first.body, ">two<") || strings.Contains(first.body, ">one<") {
		t.Fatalf("the first page: %s", first.body)
	}
	m := olderLink.FindStringSubmatch(first.body)
	if m == nil {
		t.Fatal("no link to the next page")
	}
	next := html.UnescapeString(m[1])
	u, _ := url.Parse(next)
	if q := u.Query(); q.Get("limit") != "2" || q.Get("filter") != `obj.description != "other"` || q.Get("before_id") == "" {
		t.Errorf("the next page's link %s", next)
	}
	second := b.get(next)
	if !strings.Contains(second.body, ">one<") || strings.Contains(second.body, ">two<") || strings.Contains(second.body, ">other<") {
		t.Errorf("the second page: %s", second.body)
	}
}
