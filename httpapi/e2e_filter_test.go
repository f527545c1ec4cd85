package httpapi_test

// Issue 15: the filter query parameter of every list, as raw HTTP.

import (
	"context"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/google/go-cmp/cmp"
)

// filterPath returns path with the filter query parameter set to expr
// and the other parameters kv (name, value, ...).
func filterPath(path, expr string, kv ...string) string {
	q := url.Values{}
	if expr != "" {
		q.Set("filter", expr)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Add(kv[i], kv[i+1])
	}
	return path + "?" + q.Encode()
}

// items returns the items of a list answer, requiring 200.
func items(t *testing.T, r response, path, field string) []map[string]any {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	list, ok := r.json[field].([]any)
	if !ok {
		t.Fatalf("GET %s: no list %q: %s", path, field, r.body)
	}
	out := make([]map[string]any, len(list))
	for i, it := range list {
		out[i] = it.(map[string]any)
	}
	return out
}

// filteredLists returns the concrete paths of every route that takes
// filter (read from the route table), with their list fields, for the
// fixture f.
func filteredLists(t *testing.T, s *server, f fixture) map[string]string {
	t.Helper()
	h, err := httpapi.New(s.svc, httpapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	r := strings.NewReplacer("{edge_id}", f.https, "{subscription_id}", f.sub)
	for pattern, field := range httpapi.FilteredLists(h) {
		if field == "" {
			t.Fatalf("route %s takes filter but has no list field", pattern)
		}
		path := r.Replace(pattern)
		if strings.Contains(path, "{") {
			t.Fatalf("route %s has a path value the test does not fill", pattern)
		}
		out[path] = field
	}
	// Every collection of the API and the child lists must be there.
	for _, c := range collections {
		if out[c.path] != c.field {
			t.Errorf("list %s does not take filter (route table: %q)", c.path, out[c.path])
		}
	}
	for _, p := range []string{"/tunnels", "/edges/https/" + f.https + "/routes", "/event_subscriptions/" + f.sub + "/sources"} {
		if out[p] == "" {
			t.Errorf("list %s does not take filter", p)
		}
	}
	return out
}

// Every list answers a filter that matches everything with the unfiltered
// list and one that matches nothing with an empty list; its fields are
// the JSON fields of what it lists.
func TestE2EFilterEveryList(t *testing.T) {
	s := newE2E(t)
	f := newFixture(t, s, s.keyA, "filter")
	cred, err := s.svc.ListCredentials(context.Background(), principalOf(t, s, f), edgeplane.ListOptions{})
	if err != nil || len(cred.Items) == 0 {
		t.Fatalf("credentials: %v", err)
	}
	if _, err := s.svc.Host().RegisterTunnel(context.Background(), registerToken(t, s), backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}}); err != nil {
		t.Fatal(err)
	}
	lists := filteredLists(t, s, f)
	filled := 0
	for path, field := range lists {
		t.Run(path, func(t *testing.T) {
			all := items(t, call(t, s, "GET", path, s.keyA, ""), path, field)
			if len(all) == 0 {
				// A list the fixture leaves empty still takes a filter.
				r := call(t, s, "GET", filterPath(path, `obj.uri != ""`), s.keyA, "")
				if got := items(t, r, path, field); len(got) != 0 {
					t.Errorf("filter on an empty list listed %d items", len(got))
				}
				return
			}
			filled++
			everything := filterPath(path, `obj.uri.startsWith("`+base+`/")`)
			if got := items(t, call(t, s, "GET", everything, s.keyA, ""), everything, field); !cmp.Equal(got, all) {
				t.Errorf("a filter matching everything changed the list:\n%s", cmp.Diff(all, got))
			}
			nothing := filterPath(path, `obj.uri == "`+base+`/none"`)
			if got := items(t, call(t, s, "GET", nothing, s.keyA, ""), nothing, field); len(got) != 0 {
				t.Errorf("a filter matching nothing listed %d items", len(got))
			}
			// Every JSON field of the first item can be filtered on.
			for name := range all[0] {
				expr := `obj.` + name + ` == obj.` + name
				got := call(t, s, "GET", filterPath(path, expr), s.keyA, "")
				if got.status != 200 {
					t.Errorf("filter %s: %d %s", expr, got.status, got.body)
				}
			}
		})
	}
	// The fixture creates something in 15 lists (every list but those of
	// kinds it does not create).
	if filled < 15 {
		t.Errorf("only %d of %d lists had items to filter", filled, len(lists))
	}
}

// registerToken returns the token of a new credential of account A.
func registerToken(t *testing.T, s *server) string {
	t.Helper()
	r := call(t, s, "POST", "/credentials", s.keyA, `{"description":"tunnel"}`)
	if r.status != 201 {
		t.Fatalf("create credential: %d %s", r.status, r.body)
	}
	return r.json["token"].(string)
}

// principalOf is the principal of account A's admin key.
func principalOf(t *testing.T, s *server, _ fixture) edgeplane.Principal {
	t.Helper()
	p, err := s.svc.Authenticate(context.Background(), s.keyA)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var filterLoc = regexp.MustCompile(`^\d+:\d+: `)

// Every kind of bad filter is 400 with one violation naming filter (each
// reason of a problem in the expression starting with line:column), on
// every list.
func TestE2EBadFilterEveryList(t *testing.T) {
	s := newE2E(t)
	f := newFixture(t, s, s.keyA, "badfilter")
	tests := []struct {
		name   string
		query  url.Values
		loc    string // the reason's line:column, "" when it has none
		reason string // a substring of the reason
	}{
		{"syntax error", url.Values{"filter": {`obj.uri ==`}}, "1:11", "Syntax error"},
		{"syntax error on line 2", url.Values{"filter": {"obj.uri == \"x\" ||\n obj.uri.("}}, "2:10", "Syntax error"},
		{"unknown field", url.Values{"filter": {`obj.descripton == "x"`}}, "1:4", "undefined field 'descripton'"},
		{"wrong type", url.Values{"filter": {`obj.uri > 5`}}, "1:9", "no matching overload"},
		{"not a bool", url.Values{"filter": {`obj.uri`}}, "1:1", "must be a boolean expression"},
		{"unknown variable", url.Values{"filter": {`credential.uri == "x"`}}, "1:1", "undeclared reference"},
		{"too costly", url.Values{"filter": {`obj.uri.contains(obj.uri)`}}, "1:1", "exceeds the limit of 1000000"},
		{"too long", url.Values{"filter": {`obj.uri == "` + strings.Repeat("x", 4096) + `"`}}, "", "must be at most 4096 bytes"},
		{"given twice", url.Values{"filter": {`obj.uri == "a"`, `obj.uri == "b"`}}, "", "at most once"},
		{"blank", url.Values{"filter": {" "}}, "", "empty"},
	}
	for path := range filteredLists(t, s, f) {
		for _, tc := range tests {
			t.Run(path+"/"+tc.name, func(t *testing.T) {
				r := call(t, s, "GET", path+"?"+tc.query.Encode(), s.keyA, "")
				checkError(t, r, apiError{status: 400, code: errInvalid, fields: []string{"filter"}})
				vs, _ := r.json["violations"].([]any)
				if len(vs) != 1 {
					t.Fatalf("violations %v, want one", r.json["violations"])
				}
				reason := vs[0].(map[string]any)["reason"].(string)
				if !strings.Contains(reason, tc.reason) {
					t.Errorf("reason %q does not contain %q", reason, tc.reason)
				}
				if tc.loc != "" && !strings.HasPrefix(reason, tc.loc+": ") {
					t.Errorf("reason %q does not start with %s", reason, tc.loc)
				}
				if tc.loc == "" && filterLoc.MatchString(reason) {
					t.Errorf("reason %q has a location", reason)
				}
			})
		}
	}
}

// Paging with a filter over HTTP: each page holds up to limit matches,
// next_page_uri keeps the filter, and the walk neither skips nor repeats.
func TestE2EFilterPaging(t *testing.T) {
	s := newE2E(t)
	var want []string
	for i := range 23 {
		desc := "skip"
		if i%3 != 1 {
			desc = "keep " + strconv.Itoa(i)
		}
		id := create(t, s, s.keyA, "/ip_policies", `{"description":"`+desc+`"}`, "ipp_")
		if desc != "skip" {
			want = append(want, id)
		}
	}
	slices.Reverse(want)
	const expr = `obj.description.startsWith("keep") && obj.created_at > timestamp("2020-01-01T00:00:00Z")`
	for _, limit := range []int{1, 2, 5, 15, 16, 100} {
		t.Run("limit "+strconv.Itoa(limit), func(t *testing.T) {
			var got []string
			next := filterPath("/ip_policies", expr, "limit", strconv.Itoa(limit))
			for pages := 0; next != ""; pages++ {
				if pages > 100 {
					t.Fatal("the walk does not end")
				}
				r := call(t, s, "GET", next, s.keyA, "")
				page := items(t, r, next, "ip_policies")
				if len(page) > limit {
					t.Fatalf("%d items with limit %d", len(page), limit)
				}
				for _, it := range page {
					if !strings.HasPrefix(it["description"].(string), "keep") {
						t.Errorf("listed %v, which the filter does not match", it)
					}
					got = append(got, it["id"].(string))
				}
				switch n := r.json["next_page_uri"].(type) {
				case nil:
					next = ""
				case string:
					u, err := url.Parse(n)
					if err != nil || !strings.HasPrefix(n, base+"/ip_policies?") {
						t.Fatalf("next_page_uri %q", n)
					}
					if q := u.Query(); q.Get("filter") != expr || q.Get("limit") != strconv.Itoa(limit) || q.Get("before_id") == "" {
						t.Fatalf("next_page_uri %q does not keep filter and limit", n)
					}
					if len(page) < limit {
						t.Errorf("a page of %d items with limit %d has a next page", len(page), limit)
					}
					next = strings.TrimPrefix(n, base)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("walked IDs (-want +got):\n%s", diff)
			}
		})
	}
}

// A filter on what is only computed for the answer: a backend's tunnels.
func TestE2EFilterBackendTunnels(t *testing.T) {
	s := newE2E(t)
	web := create(t, s, s.keyA, "/backends/tunnel_group", `{"labels":{"app":"web"}}`, "bkdtg_")
	api := create(t, s, s.keyA, "/backends/tunnel_group", `{"labels":{"app":"api"}}`, "bkdtg_")
	tn, err := s.svc.Host().RegisterTunnel(context.Background(), registerToken(t, s), backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		expr string
		want []string
	}{
		{`size(obj.tunnels) > 0`, []string{web}},
		{`obj.tunnels.exists(t, t.id == "` + tn.ID + `")`, []string{web}},
		{`obj.tunnels == []`, []string{api}},
		{`obj.labels["app"] == "web"`, []string{web}},
		{`"app" in obj.labels && obj.labels.app == "api"`, []string{api}},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			path := filterPath("/backends/tunnel_group", tc.expr)
			page := items(t, call(t, s, "GET", path, s.keyA, ""), path, "backends")
			var got []string
			for _, it := range page {
				got = append(got, it["id"].(string))
				// Tunnels are shown whether the filter read them or not.
				if n := len(it["tunnels"].([]any)); (it["id"] == web) != (n == 1) {
					t.Errorf("backend %v has %d tunnels", it["id"], n)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
