package edgeplane

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/sqlitestore"
	"github.com/edgeplane/edgeplane/store"
)

// versionCounting is a store.VersionLister (a SQLite file's) that counts
// what lists read: whole pages (List), version pages (ListVersions) and
// the records GetMany read; afterVersions, when set, runs after each
// ListVersions.
type versionCounting struct {
	*sqlitestore.Store
	lists, versionLists, getMany atomic.Int64
	afterVersions                func()
}

func (c *versionCounting) List(ctx context.Context, q store.Query) ([]store.Record, error) {
	c.lists.Add(1)
	return c.Store.List(ctx, q)
}

func (c *versionCounting) ListVersions(ctx context.Context, q store.Query) ([]store.Version, error) {
	c.versionLists.Add(1)
	vs, err := c.Store.ListVersions(ctx, q)
	if c.afterVersions != nil {
		c.afterVersions()
	}
	return vs, err
}

func (c *versionCounting) GetMany(ctx context.Context, kind store.Kind, accountID string, ids []string) ([]store.Record, error) {
	recs, err := c.Store.GetMany(ctx, kind, accountID, ids)
	c.getMany.Add(int64(len(recs)))
	return recs, err
}

func (c *versionCounting) reset() {
	c.lists.Store(0)
	c.versionLists.Store(0)
	c.getMany.Store(0)
}

// plainStore hides a store's VersionLister: the Service lists with List.
type plainStore struct{ store.Store }

// listEnv is a Service on a SQLite file through a versionCounting, with
// an account, its admin and n credentials (descriptions "c0", "c1", ...),
// its cache follower current.
type listEnv struct {
	ctx   context.Context
	path  string
	st    *versionCounting
	svc   *Service
	p     Principal
	creds []string // IDs, oldest first
}

func newListEnv(t *testing.T, n int) *listEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	e := &listEnv{ctx: ctx, path: filepath.Join(t.TempDir(), "store.db")}
	e.st, e.svc = e.open(t)
	acct, err := e.svc.createAccount(ctx, identity.AccountParams{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := e.svc.createUser(ctx, acct.ID, identity.SubjectParams{Name: "admin", Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	e.p = Principal{AccountID: acct.ID, SubjectID: admin.ID, Admin: true}
	for i := range n {
		c, err := e.svc.CreateCredential(ctx, e.p, credentials.CreateParams{Description: fmt.Sprint("c", i)})
		if err != nil {
			t.Fatal(err)
		}
		e.creds = append(e.creds, c.ID)
	}
	synced(t, ctx, e.svc)
	return e
}

// open opens another store and Service on e's file, the store counted.
func (e *listEnv) open(t *testing.T) (*versionCounting, *Service) {
	t.Helper()
	sq, err := sqlitestore.Open(e.ctx, e.path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	st := &versionCounting{Store: sq}
	svc, err := New(st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	if svc.db.Versions == nil {
		t.Fatal("the Service does not list through the store's VersionLister")
	}
	return st, svc
}

// setDescription writes a credential's description into the store
// directly, behind the Service's back: its record cache keeps the
// version it holds until its follower sees the change.
func (e *listEnv) setDescription(t *testing.T, id, d string) {
	t.Helper()
	_, err := e.st.Store.Update(e.ctx, KindCredential, e.p.AccountID, id, func(r *store.Record) error {
		var doc map[string]any
		if err := json.Unmarshal(r.Data, &doc); err != nil {
			return err
		}
		doc["description"] = d
		b, err := json.Marshal(doc)
		r.Data = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestListReadsCachedDocuments: a page whose records the record cache
// holds at the versions the store lists reads their IDs and versions
// alone from the store (no List, no GetMany), as JSON and as values; a
// record written behind the cache's back (a new version) is read fresh,
// alone; one deleted between the version list and the read of the
// misses is left out.
func TestListReadsCachedDocuments(t *testing.T) {
	e := newListEnv(t, 30)
	first := encodedPage(t, e.ctx, e.svc, e.p)
	firstValues := valuesPage(t, e.ctx, e.svc, e.p)
	for name, list := range map[string]func() string{
		"json":   func() string { return encodedPage(t, e.ctx, e.svc, e.p) },
		"values": func() string { return valuesPage(t, e.ctx, e.svc, e.p) },
	} {
		e.st.reset()
		got := list()
		if want := map[string]string{"json": first, "values": firstValues}[name]; got != want {
			t.Errorf("%s: a cached page differs from the first:\n%s\nwant\n%s", name, got, want)
		}
		if l, v, g := e.st.lists.Load(), e.st.versionLists.Load(), e.st.getMany.Load(); l != 0 || v != 1 || g != 0 {
			t.Errorf("%s: a page of cached records made %d List, %d ListVersions and read %d records with GetMany; want 0, 1, 0", name, l, v, g)
		}
	}
	if first != firstValues {
		t.Errorf("the page as JSON\n%s\nand as values\n%s\ndiffer", first, firstValues)
	}

	// A new version written behind the Service's back: read fresh, alone.
	e.setDescription(t, e.creds[20], "changed")
	e.st.reset()
	got := encodedPage(t, e.ctx, e.svc, e.p)
	if !strings.Contains(got, `"changed"`) || strings.Contains(got, `"c20"`) {
		t.Errorf("after a write behind the cache: %s", got)
	}
	if g := e.st.getMany.Load(); g != 1 {
		t.Errorf("after one record changed, the list read %d with GetMany, want 1", g)
	}
	if v := valuesPage(t, e.ctx, e.svc, e.p); v != got {
		t.Errorf("values after the change\n%s\nJSON\n%s", v, got)
	}

	// Deleted after the versions were listed, and not cached at the listed
	// version (written behind the cache first): left out of the page. A
	// page of values goes on to fill itself; one of JSON (a single store
	// read) is one short, its cursor where the store's list ended.
	deleteDuring := func(id string) {
		e.setDescription(t, id, "doomed")
		e.st.afterVersions = func() {
			e.st.afterVersions = nil
			if err := e.st.Store.Delete(e.ctx, KindCredential, e.p.AccountID, id, store.Note{}); err != nil {
				t.Error(err)
			}
		}
	}
	newestFirst := func(from int, without ...string) []string {
		out := slices.Clone(e.creds[from:])
		slices.Reverse(out)
		return slices.DeleteFunc(out, func(id string) bool { return slices.Contains(without, id) })
	}
	deleteDuring(e.creds[10])
	page, err := e.svc.ListCredentials(e.ctx, e.p, ListOptions{Limit: 25})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range page.Items {
		ids = append(ids, c.ID)
	}
	if want := newestFirst(4, e.creds[10]); !slices.Equal(ids, want) {
		t.Errorf("page of values with a record deleted during the list:\n%v\nwant\n%v", ids, want)
	}
	if page.NextPageURI == nil || !strings.Contains(*page.NextPageURI, "before_id="+e.creds[4]) {
		t.Errorf("next page of values after a deleted record: %v, want before_id=%s", page.NextPageURI, e.creds[4])
	}
	deleteDuring(e.creds[12])
	enc, err := e.svc.Transport().ListCredentials(e.ctx, e.p, ListOptions{Limit: 25})
	if err != nil {
		t.Fatal(err)
	}
	var items []credentials.Credential
	if err := json.Unmarshal(enc.AppendItemsJSON(nil), &items); err != nil {
		t.Fatal(err)
	}
	ids = ids[:0]
	for _, c := range items {
		ids = append(ids, c.ID)
	}
	if want := newestFirst(4, e.creds[10], e.creds[12]); len(want) != 24 || !slices.Equal(ids, want) {
		t.Errorf("page of JSON with a record deleted during the list:\n%v\nwant\n%v", ids, want)
	}
	if enc.NextPageURI == nil || !strings.Contains(*enc.NextPageURI, "before_id="+e.creds[4]) {
		t.Errorf("next page of JSON after a deleted record: %v, want before_id=%s", enc.NextPageURI, e.creds[4])
	}
}

// TestListVersionsPaging: paging with and without filters through the
// store's VersionLister, with a cold cache and a warm one, gives the
// pages (items and cursors) that List's paging gives; a filtered page
// reads from the store only the records it scans.
func TestListVersionsPaging(t *testing.T) {
	e := newListEnv(t, 30)
	// Another Service on the file, cold (nothing cached), and a third
	// that lists with List.
	cold, coldSvc := e.open(t)
	plain, err := New(plainStore{e.st.Store}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plain.Close(context.Background()) })
	synced(t, e.ctx, coldSvc)
	synced(t, e.ctx, plain)

	// Filtered, limit 1, cold: the newest record matches, and it is the
	// only one read.
	page, err := coldSvc.ListCredentials(e.ctx, e.p, ListOptions{Limit: 1, Filter: `obj.description == "c29"`})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != e.creds[29] {
		t.Fatalf("filtered page: %+v, %v", page, err)
	}
	if g := cold.getMany.Load(); g != 1 {
		t.Errorf("a filtered page of 1 whose first record matches read %d records, want 1", g)
	}
	// A filter that matches nothing reads each record once, cold; none
	// once they are cached.
	for round, want := range []int64{29, 0} {
		cold.reset()
		page, err := coldSvc.ListCredentials(e.ctx, e.p, ListOptions{Filter: `obj.description == "none"`})
		if err != nil || len(page.Items) != 0 {
			t.Fatalf("filter of nothing: %+v, %v", page, err)
		}
		if g := cold.getMany.Load(); g != want {
			t.Errorf("round %d: a filter of nothing read %d records, want %d", round, g, want)
		}
	}

	walk := func(svc *Service, opts ListOptions) []string {
		t.Helper()
		var out []string
		for pages := 0; ; pages++ {
			page, err := svc.ListCredentials(e.ctx, e.p, opts)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, c := range page.Items {
				ids = append(ids, c.ID)
			}
			next := ""
			if page.NextPageURI != nil {
				next = *page.NextPageURI
			}
			out = append(out, fmt.Sprint(ids, " next ", next))
			if page.NextPageURI == nil || pages > 40 {
				return out
			}
			_, opts.BeforeID, _ = strings.Cut(next, "before_id=")
			opts.BeforeID, _, _ = strings.Cut(opts.BeforeID, "&")
		}
	}
	for _, opts := range []ListOptions{
		{Limit: 7},
		{Limit: 100},
		{Limit: 4, Filter: `obj.description.endsWith("1") || obj.description.endsWith("7")`},
		{Limit: 2, Filter: `obj.description == "c3"`},
	} {
		want := walk(plain, opts)
		_, fresh := e.open(t)
		synced(t, e.ctx, fresh)
		for i, svc := range []*Service{fresh, fresh, e.svc} {
			name := []string{"cold", "warm", "writer's"}[i]
			if got := walk(svc, opts); !slices.Equal(got, want) {
				t.Errorf("%+v, %s cache: pages\n%v\nwant (List's)\n%v", opts, name, got, want)
			}
		}
	}
}
