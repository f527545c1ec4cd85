package edgeplane_test

import (
	"context"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/sqlitestore"
	"github.com/edgeplane/edgeplane/store"
	"github.com/google/go-cmp/cmp"
)

// recordCountingStore counts the records its List calls return.
type recordCountingStore struct {
	store.Store
	listed atomic.Int64
}

func (s *recordCountingStore) List(ctx context.Context, q store.Query) ([]store.Record, error) {
	recs, err := s.Store.List(ctx, q)
	s.listed.Add(int64(len(recs)))
	return recs, err
}

// policies creates n IP policies in e's account A, the i-th described by
// desc(i), and returns the IDs of those keep(i) selects, newest first.
func (e *env) policies(t testing.TB, n int, desc func(int) string, keep func(int) bool) []string {
	t.Helper()
	var ids []string
	for i := range n {
		p, err := e.svc.CreateIPPolicy(e.ctx, e.admin, ipaccess.CreatePolicyParams{Description: desc(i)})
		if err != nil {
			t.Fatal(err)
		}
		if keep(i) {
			ids = append(ids, p.ID)
		}
	}
	slices.Reverse(ids)
	return ids
}

// walkFiltered follows a filtered list page by page (by NextBeforeID) and
// returns the IDs seen, checking every page's bounds and next page URI.
func walkFiltered(t *testing.T, e *env, opts edgeplane.ListOptions) (ids []string, pages int) {
	t.Helper()
	for {
		page, err := e.svc.ListIPPolicies(e.ctx, e.admin, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if pages > 1000 {
			t.Fatal("the walk does not end")
		}
		if len(page.Items) > max(opts.Limit, 1) {
			t.Fatalf("%d items with limit %d", len(page.Items), opts.Limit)
		}
		for _, p := range page.Items {
			ids = append(ids, p.ID)
		}
		if page.NextPageURI == nil {
			if page.NextBeforeID != "" {
				t.Fatalf("NextBeforeID %q without a next page URI", page.NextBeforeID)
			}
			return ids, pages
		}
		u, err := url.Parse(*page.NextPageURI)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		limit := opts.Limit
		if limit == 0 {
			limit = edgeplane.MaxPageSize
		}
		if q.Get("filter") != opts.Filter || q.Get("before_id") != page.NextBeforeID || q.Get("limit") != strconv.Itoa(limit) {
			t.Fatalf("next_page_uri %q does not continue with the same filter and limit from %s", *page.NextPageURI, page.NextBeforeID)
		}
		opts.BeforeID = page.NextBeforeID
	}
}

// TestListFilterPaging, on memstore (lists read whole records) and on a
// SQLite file (lists read IDs and versions, and the documents the record
// cache does not hold).
func TestListFilterPaging(t *testing.T) {
	t.Run("memstore", func(t *testing.T) { testListFilterPaging(t, newEnv(t)) })
	t.Run("sqlitestore", func(t *testing.T) {
		st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "store.db"), sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		testListFilterPaging(t, newEnvWithStore(t, st))
	})
}

func testListFilterPaging(t *testing.T, e *env) {
	desc := func(i int) string {
		if i%4 == 0 {
			return "keep " + strconv.Itoa(i)
		}
		return "other"
	}
	want := e.policies(t, 41, desc, func(i int) bool { return i%4 == 0 })
	for _, limit := range []int{1, 2, 3, 10, 11, 12, 100} {
		t.Run("limit "+strconv.Itoa(limit), func(t *testing.T) {
			got, _ := walkFiltered(t, e, edgeplane.ListOptions{Limit: limit, Filter: `obj.description.startsWith("keep")`})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("walked IDs (-want +got):\n%s", diff)
			}
		})
	}
	// The iterator walks every page of a filtered list.
	var it []string
	for p, err := range edgeplane.AllWith(e.ctx, e.admin, e.svc.ListIPPolicies, edgeplane.ListOptions{Limit: 2, Filter: `obj.description != "other"`}) {
		if err != nil {
			t.Fatal(err)
		}
		it = append(it, p.ID)
	}
	if diff := cmp.Diff(want, it); diff != "" {
		t.Errorf("AllWith (-want +got):\n%s", diff)
	}
	// A page that ends exactly at the last record has no next page; one
	// whose last match is followed by records that do not match has one.
	page, err := e.svc.ListIPPolicies(e.ctx, e.admin, edgeplane.ListOptions{Limit: len(want), Filter: `obj.description.startsWith("keep")`})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != len(want) || page.NextPageURI != nil {
		t.Errorf("the oldest policy matches, so the page of every match is the last: %d items, next %v", len(page.Items), page.NextPageURI)
	}
}

func TestListFilterScanBound(t *testing.T) {
	cs := &recordCountingStore{Store: memstore.New()}
	e := newEnvWithStore(t, cs)
	n := edgeplane.MaxFilterScan + 150
	want := e.policies(t, n, func(i int) string {
		if i == 0 || i == n-1 {
			return "needle"
		}
		return "hay"
	}, func(i int) bool { return i == 0 || i == n-1 })
	opts := edgeplane.ListOptions{Limit: 5, Filter: `obj.description == "needle"`}

	cs.listed.Store(0)
	first, err := e.svc.ListIPPolicies(e.ctx, e.admin, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The newest matches; then the scan stops after MaxFilterScan records
	// with a next page that continues after the last one scanned.
	if len(first.Items) != 1 || first.Items[0].ID != want[0] || first.NextPageURI == nil {
		t.Fatalf("first page: %d items, next %v", len(first.Items), first.NextPageURI)
	}
	if read := cs.listed.Load(); read > edgeplane.MaxFilterScan+20 {
		t.Errorf("one page read %d records, want about MaxFilterScan (%d)", read, edgeplane.MaxFilterScan)
	}
	var scanned []string
	for p, err := range edgeplane.All(e.ctx, e.admin, e.svc.ListIPPolicies) {
		if err != nil {
			t.Fatal(err)
		}
		scanned = append(scanned, p.ID)
	}
	if first.NextBeforeID != scanned[edgeplane.MaxFilterScan-1] {
		t.Errorf("NextBeforeID is the %dth record, want the %dth", slices.Index(scanned, first.NextBeforeID)+1, edgeplane.MaxFilterScan)
	}
	// The walk finds both needles and ends.
	got, pages := walkFiltered(t, e, opts)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("walked IDs (-want +got):\n%s", diff)
	}
	if pages != 2 {
		t.Errorf("walked %d pages, want 2", pages)
	}
}

func TestListFilterErrors(t *testing.T) {
	e := newEnv(t)
	e.policies(t, 1, func(int) string { return "x" }, func(int) bool { return true })
	_, err := e.svc.ListIPPolicies(e.ctx, e.admin, edgeplane.ListOptions{Limit: 101, BeforeID: "bad", Filter: `obj.descripton == "x"`})
	wantCode(t, err, apierr.InvalidArgument)
	var fields []string
	for _, v := range apierr.ViolationsOf(err) {
		fields = append(fields, v.Field)
	}
	if want := []string{"limit", "before_id", "filter"}; !slices.Equal(fields, want) {
		t.Errorf("violations %v, want fields %v", apierr.ViolationsOf(err), want)
	}
	wantViolation(t, err, "filter", "1:4: undefined field 'descripton'")
}

func TestListFilterCertificatesAndSources(t *testing.T) {
	e := newEnv(t)
	a := e.tlsCert(t, e.admin, "a.example.com")
	e.tlsCert(t, e.admin, "b.example.com")
	page, err := e.svc.ListTLSCertificates(e.ctx, e.admin, edgeplane.ListOptions{Filter: `"a.example.com" in obj.subject_alternative_names.dns_names && obj.not_after > obj.created_at`})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].ID != a.ID {
		t.Errorf("certificates %v, want only %s", page.Items, a.ID)
	}

	sub := e.subscribe(t, e.admin, "ip_policy_created.v0", "ip_policy_deleted.v0", "credential_created.v0")
	list, err := e.svc.ListEventSourcesMatching(e.ctx, e.admin, sub.ID, `obj.type.startsWith("ip_policy_")`)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, s := range list.Sources {
		types = append(types, s.Type)
	}
	slices.Sort(types)
	if want := []string{"ip_policy_created.v0", "ip_policy_deleted.v0"}; !slices.Equal(types, want) {
		t.Errorf("sources %v, want %v", types, want)
	}
	if all, err := e.svc.ListEventSourcesMatching(e.ctx, e.admin, sub.ID, ""); err != nil || len(all.Sources) != 3 {
		t.Errorf("no filter: %v, %v", all, err)
	}
	_, err = e.svc.ListEventSourcesMatching(e.ctx, e.admin, sub.ID, `obj.id == "x"`)
	wantViolation(t, err, "filter", "undefined field 'id'")
}

// TestListFilterSubscriptionSources: a filter over a subscription's
// sources sees them (they are read from their own records, before the
// filter when it reads them), and the listed subscriptions show them.
func TestListFilterSubscriptionSources(t *testing.T) {
	e := newEnv(t)
	with := e.subscribe(t, e.admin, "credential_created.v0", "ip_policy_created.v0")
	e.subscribe(t, e.admin, "ip_policy_deleted.v0")
	page, err := e.svc.ListEventSubscriptions(e.ctx, e.admin, edgeplane.ListOptions{Filter: `obj.sources.exists(s, s.type == "credential_created.v0")`})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].ID != with.ID || len(page.Items[0].Sources) != 2 {
		t.Fatalf("subscriptions %+v, want only %s with its 2 sources", page.Items, with.ID)
	}
	all, err := e.svc.ListEventSubscriptions(e.ctx, e.admin, edgeplane.ListOptions{Filter: `obj.id != ""`})
	if err != nil || len(all.Items) != 2 {
		t.Fatalf("%v, %v", all, err)
	}
	for _, sub := range all.Items {
		if len(sub.Sources) == 0 {
			t.Errorf("subscription %s listed without its sources", sub.ID)
		}
	}
}

// A filtered page of 100 IP policies out of 1,000 (one in ten matches):
// the page scans all 1,000. Compare BenchmarkListIPPoliciesPage, the
// same page unfiltered.
func BenchmarkListIPPoliciesFiltered(b *testing.B) {
	e := newEnv(b)
	e.policies(b, 1000, func(i int) string {
		if i%10 == 0 {
			return "team-a " + strconv.Itoa(i)
		}
		return "team-b " + strconv.Itoa(i)
	}, func(int) bool { return false })
	opts := edgeplane.ListOptions{Filter: `obj.description.startsWith("team-a") && obj.created_at > timestamp("2020-01-01T00:00:00Z")`}
	b.ReportAllocs()
	for b.Loop() {
		page, err := e.svc.ListIPPolicies(e.ctx, e.admin, opts)
		if err != nil || len(page.Items) != 100 {
			b.Fatalf("%v items, %v", len(page.Items), err)
		}
	}
}

func BenchmarkListIPPoliciesPage(b *testing.B) {
	e := newEnv(b)
	e.policies(b, 1000, func(i int) string { return "team-a " + strconv.Itoa(i) }, func(int) bool { return false })
	b.ReportAllocs()
	for b.Loop() {
		page, err := e.svc.ListIPPolicies(e.ctx, e.admin, edgeplane.ListOptions{})
		if err != nil || len(page.Items) != 100 {
			b.Fatalf("%v items, %v", len(page.Items), err)
		}
	}
}

// A filter that is cheap to estimate but costly on every resource: the
// page ends when its evaluations have cost MaxFilterPageCost, well before
// MaxFilterScan, and the walk goes on from there.
func TestListFilterPageCostBound(t *testing.T) {
	cs := &recordCountingStore{Store: memstore.New()}
	e := newEnvWithStore(t, cs)
	meta := strings.Repeat("m", 4096)
	n := 400
	var ids []string
	for range n {
		p, err := e.svc.CreateIPPolicy(e.ctx, e.admin, ipaccess.CreatePolicyParams{Metadata: meta})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	slices.Reverse(ids)
	// contains() costs ceil(4096 * 1000 / 100) = 40,960 per policy: the
	// budget of 10,000,000 is spent after 245 policies.
	opts := edgeplane.ListOptions{Filter: `obj.metadata.contains("` + strings.Repeat("x", 1000) + `")`}
	cs.listed.Store(0)
	page, err := e.svc.ListIPPolicies(e.ctx, e.admin, opts)
	if err != nil {
		t.Fatal(err)
	}
	at := slices.Index(ids, page.NextBeforeID)
	if len(page.Items) != 0 || page.NextPageURI == nil || at < 200 || at > 260 {
		t.Fatalf("first page: %d items, next after policy %d of %d (%v)", len(page.Items), at+1, n, page.NextPageURI)
	}
	if read := cs.listed.Load(); read > int64(at)+110 {
		t.Errorf("read %d records to scan %d", read, at+1)
	}
	got, pages := walkFiltered(t, e, opts)
	if len(got) != 0 || pages != 2 {
		t.Errorf("walk: %d items in %d pages, want none in 2", len(got), pages)
	}
}

// listCallCountingStore counts its List calls.
type listCallCountingStore struct {
	store.Store
	calls atomic.Int64
}

func (s *listCallCountingStore) List(ctx context.Context, q store.Query) ([]store.Record, error) {
	s.calls.Add(1)
	return s.Store.List(ctx, q)
}

// A filter on a backend's tunnels reads the tunnels of every backend it
// scans: the page scans at most MaxPageSize of them. One that does not
// read the tunnels reads them only for the backends that match.
func TestListFilterBackendTunnelsBound(t *testing.T) {
	cs := &listCallCountingStore{Store: memstore.New()}
	e := newEnvWithStore(t, cs)
	for i := range edgeplane.MaxPageSize + 50 {
		app := "web"
		if i%2 == 0 {
			app = "api"
		}
		e.backend(t, e.admin, map[string]string{"app": app})
	}
	cs.calls.Store(0)
	page, err := e.svc.ListTunnelGroupBackends(e.ctx, e.admin, edgeplane.ListOptions{Filter: `size(obj.tunnels) > 0`})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 0 || page.NextPageURI == nil {
		t.Fatalf("%d items, next %v", len(page.Items), page.NextPageURI)
	}
	if calls := cs.calls.Load(); calls > edgeplane.MaxPageSize+10 {
		t.Errorf("one page made %d store reads", calls)
	}
	cs.calls.Store(0)
	// Half the backends match: the page scans 6, reads the tunnels of 3.
	page, err = e.svc.ListTunnelGroupBackends(e.ctx, e.admin, edgeplane.ListOptions{Limit: 3, Filter: `obj.labels["app"] == "web"`})
	if err != nil || len(page.Items) != 3 {
		t.Fatalf("%v, %v", page, err)
	}
	if calls := cs.calls.Load(); calls > 3+2 {
		t.Errorf("a page of 3 made %d store reads, want 3 for tunnels and 2 for backends", calls)
	}
}
