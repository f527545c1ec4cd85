package edgeplane_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
	"github.com/google/go-cmp/cmp"
)

func TestCreateCredential(t *testing.T) {
	e := newEnv(t)
	c, err := e.svc.CreateCredential(e.ctx, e.user, credentials.CreateParams{
		Description: "laptop",
		Metadata:    `{"team":"edge"}`,
		ACL:         []string{"bind:*.example.com", "bind:env=prod"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Token == nil || !credentials.WellFormedToken(*c.Token) {
		t.Fatalf("create returned token %v", c.Token)
	}
	want := &credentials.Credential{
		ID:          c.ID,
		URI:         "https://api.example.test/credentials/" + c.ID,
		CreatedAt:   time.Date(2026, 11, 21, 9, 30, 15, 0, time.UTC),
		Description: "laptop",
		Metadata:    `{"team":"edge"}`,
		Token:       c.Token,
		ACL:         []string{"bind:*.example.com", "bind:env=prod"},
		OwnerID:     e.user.SubjectID,
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("create result (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(c.ID, "cr_") || len(c.ID) != 3+27 {
		t.Errorf("ID %q is not cr_ + 27 characters", c.ID)
	}
	b, _ := json.Marshal(c)
	if !strings.Contains(string(b), `"created_at":"2026-11-21T09:30:15Z"`) {
		t.Errorf("created_at is not RFC 3339 UTC seconds: %s", b)
	}

	// Every other response has a null token.
	got, err := e.svc.GetCredential(e.ctx, e.user, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	want.Token = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("get result (-want +got):\n%s", diff)
	}
	b, _ = json.Marshal(got)
	if !strings.Contains(string(b), `"token":null`) {
		t.Errorf("get JSON has no null token: %s", b)
	}
	page, err := e.svc.ListCredentials(e.ctx, e.user, edgeplane.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].Token != nil {
		t.Errorf("list = %+v, want one credential with nil token", page.Items)
	}
	upd, err := e.svc.UpdateCredential(e.ctx, e.user, c.ID, credentials.UpdateParams{Description: ptr("x")})
	if err != nil || upd.Token != nil {
		t.Errorf("update = %+v, %v; want nil token", upd, err)
	}

	// The stored record holds no token, only its hash as a lookup key.
	recs, err := e.store.List(e.ctx, store.Query{Kind: edgeplane.KindCredential, AccountID: e.user.AccountID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(recs[0].Data), *c.Token) || strings.Contains(strings.Join(recs[0].Keys, " "), *c.Token) {
		t.Error("the store holds the plain token")
	}
}

func TestCreateCredentialDefaults(t *testing.T) {
	e := newEnv(t)
	c, err := e.svc.CreateCredential(e.ctx, e.bot, credentials.CreateParams{})
	if err != nil {
		t.Fatal(err)
	}
	if c.OwnerID != e.bot.SubjectID {
		t.Errorf("owner_id = %q, want the caller %q", c.OwnerID, e.bot.SubjectID)
	}
	if c.ACL == nil || len(c.ACL) != 0 {
		t.Errorf("acl = %#v, want an empty non-nil list", c.ACL)
	}
	got, _ := e.svc.GetCredential(e.ctx, e.bot, c.ID)
	b, _ := json.Marshal(got)
	if !strings.Contains(string(b), `"acl":[]`) {
		t.Errorf("JSON %s has no empty acl list", b)
	}
}

func TestCredentialOwner(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name    string
		caller  edgeplane.Principal
		owner   string
		code    apierr.Code
		field   string
		wantOwn string
	}{
		{name: "admin names a user of the account", caller: e.admin, owner: e.user.SubjectID, wantOwn: e.user.SubjectID},
		{name: "admin names a bot of the account", caller: e.admin, owner: e.bot.SubjectID, wantOwn: e.bot.SubjectID},
		{name: "non-admin names itself", caller: e.user, owner: e.user.SubjectID, wantOwn: e.user.SubjectID},
		{name: "non-admin names another", caller: e.user, owner: e.bot.SubjectID, code: apierr.PermissionDenied},
		{name: "admin names another account's user", caller: e.admin, owner: e.other.SubjectID, code: apierr.InvalidArgument, field: "owner_id"},
		{name: "malformed owner", caller: e.admin, owner: "alice", code: apierr.InvalidArgument, field: "owner_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := e.svc.CreateCredential(e.ctx, tc.caller, credentials.CreateParams{OwnerID: tc.owner})
			if tc.code != 0 {
				wantCode(t, err, tc.code)
				if tc.field != "" {
					wantViolation(t, err, tc.field, "")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.OwnerID != tc.wantOwn {
				t.Errorf("owner_id = %q, want %q", c.OwnerID, tc.wantOwn)
			}
		})
	}
	// Only the successful creates were stored.
	page, _ := e.svc.ListCredentials(e.ctx, e.admin, edgeplane.ListOptions{})
	if len(page.Items) != 3 {
		t.Errorf("%d credentials stored, want 3", len(page.Items))
	}
}

func TestCredentialValidation(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name   string
		params credentials.CreateParams
		field  string
		reason string
	}{
		{"description 256 bytes", credentials.CreateParams{Description: strings.Repeat("a", 256)}, "description", "255 bytes"},
		{"description 128 two-byte runes", credentials.CreateParams{Description: strings.Repeat("é", 128)}, "description", "255 bytes"},
		{"metadata 4097 bytes", credentials.CreateParams{Metadata: strings.Repeat("m", 4097)}, "metadata", "4096 bytes"},
		{"metadata 2049 two-byte runes", credentials.CreateParams{Metadata: strings.Repeat("ü", 2049)}, "metadata", "4096 bytes"},
		{"acl not bind", credentials.CreateParams{ACL: []string{"bind:a.com", "listen:b.com"}}, "acl[1]", ""},
		{"acl empty target", credentials.CreateParams{ACL: []string{"bind:"}}, "acl[0]", ""},
		{"acl wildcard in the middle", credentials.CreateParams{ACL: []string{"bind:a.*.com"}}, "acl[0]", ""},
		{"acl bad port", credentials.CreateParams{ACL: []string{"bind:1.tcp.example.com:99999"}}, "acl[0]", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.CreateCredential(e.ctx, e.admin, tc.params)
			wantViolation(t, err, tc.field, tc.reason)
		})
	}
	// The limits themselves are accepted.
	ok := credentials.CreateParams{Description: strings.Repeat("é", 127) + "a", Metadata: strings.Repeat("m", 4096)}
	if _, err := e.svc.CreateCredential(e.ctx, e.admin, ok); err != nil {
		t.Errorf("255-byte description and 4096-byte metadata refused: %v", err)
	}
	// Several violations are reported at once.
	_, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{
		Description: strings.Repeat("a", 300), Metadata: strings.Repeat("a", 5000), ACL: []string{"nope"},
	})
	if n := len(apierr.ViolationsOf(err)); n != 3 {
		t.Errorf("got %d violations (%v), want 3", n, err)
	}
	page, _ := e.svc.ListCredentials(e.ctx, e.admin, edgeplane.ListOptions{})
	if len(page.Items) != 1 {
		t.Errorf("%d credentials stored, want only the valid one", len(page.Items))
	}
}

func TestUpdateCredential(t *testing.T) {
	e := newEnv(t)
	c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{
		Description: "d", Metadata: "m", ACL: []string{"bind:a.example.com"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		params credentials.UpdateParams
		want   func(c *credentials.Credential)
	}{
		{"absent fields keep their values", credentials.UpdateParams{}, func(*credentials.Credential) {}},
		{"description changes alone", credentials.UpdateParams{Description: ptr("new")}, func(c *credentials.Credential) { c.Description = "new" }},
		{"empty string clears", credentials.UpdateParams{Metadata: ptr("")}, func(c *credentials.Credential) { c.Metadata = "" }},
		{"acl replaced", credentials.UpdateParams{ACL: &[]string{"bind:x=y"}}, func(c *credentials.Credential) { c.ACL = []string{"bind:x=y"} }},
		{"acl emptied", credentials.UpdateParams{ACL: &[]string{}}, func(c *credentials.Credential) { c.ACL = []string{} }},
	}
	want := *c
	want.Token = nil
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.want(&want)
			got, err := e.svc.UpdateCredential(e.ctx, e.admin, c.ID, tc.params)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("update result (-want +got):\n%s", diff)
			}
			stored, _ := e.svc.GetCredential(e.ctx, e.admin, c.ID)
			if diff := cmp.Diff(&want, stored); diff != "" {
				t.Errorf("stored after update (-want +got):\n%s", diff)
			}
		})
	}

	// owner_id cannot be changed; an invalid update changes nothing.
	_, err = e.svc.UpdateCredential(e.ctx, e.admin, c.ID, credentials.UpdateParams{OwnerID: ptr(e.user.SubjectID), Description: ptr("zzz")})
	wantViolation(t, err, "owner_id", "cannot be changed")
	_, err = e.svc.UpdateCredential(e.ctx, e.admin, c.ID, credentials.UpdateParams{Description: ptr(strings.Repeat("é", 128))})
	wantViolation(t, err, "description", "255 bytes")
	_, err = e.svc.UpdateCredential(e.ctx, e.admin, c.ID, credentials.UpdateParams{ACL: &[]string{"bind:ok.com", "bad"}})
	wantViolation(t, err, "acl[1]", "")
	stored, _ := e.svc.GetCredential(e.ctx, e.admin, c.ID)
	if diff := cmp.Diff(&want, stored); diff != "" {
		t.Errorf("rejected updates changed the credential (-want +got):\n%s", diff)
	}
}

func TestConcurrentCredentialUpdatesLoseNothing(t *testing.T) {
	e := newEnv(t)
	c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := e.svc.UpdateCredential(e.ctx, e.admin, c.ID, credentials.UpdateParams{Description: ptr(fmt.Sprint("d", i))}); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := e.svc.UpdateCredential(e.ctx, e.admin, c.ID, credentials.UpdateParams{Metadata: ptr(fmt.Sprint("m", i))}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, _ := e.svc.GetCredential(e.ctx, e.admin, c.ID)
	if got.Description == "" || got.Metadata == "" {
		t.Errorf("an update was lost: description %q metadata %q", got.Description, got.Metadata)
	}
}

func TestCredentialIsolation(t *testing.T) {
	e := newEnv(t)
	c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{Description: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	missing := c.ID[:len(c.ID)-4] + "zzzz"
	// Another account gets exactly what a missing ID gets.
	for _, id := range []string{c.ID, missing} {
		_, errGet := e.svc.GetCredential(e.ctx, e.other, id)
		wantCode(t, errGet, apierr.NotFound)
		_, errUpd := e.svc.UpdateCredential(e.ctx, e.other, id, credentials.UpdateParams{Description: ptr("stolen")})
		wantCode(t, errUpd, apierr.NotFound)
		errDel := e.svc.DeleteCredential(e.ctx, e.other, id)
		wantCode(t, errDel, apierr.NotFound)
		if want := "credential " + id + " not found"; errGet.Error() != want || errUpd.Error() != want || errDel.Error() != want {
			t.Errorf("messages %q / %q / %q, want %q", errGet, errUpd, errDel, want)
		}
	}
	page, err := e.svc.ListCredentials(e.ctx, e.other, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 0 {
		t.Errorf("other account lists %v, %v", page.Items, err)
	}
	got, err := e.svc.GetCredential(e.ctx, e.user, c.ID) // same account, other subject
	if err != nil || got.Description != "mine" {
		t.Errorf("owner account lost the credential: %v %v", got, err)
	}
	// Malformed IDs are simply not found.
	for _, id := range []string{"", "cr_", "cr_short", "ipp_" + c.ID[3:], c.ID + "x", "../" + c.ID} {
		_, err := e.svc.GetCredential(e.ctx, e.admin, id)
		wantCode(t, err, apierr.NotFound)
	}
}

func TestDeleteCredentialAndTunnelAuth(t *testing.T) {
	e := newEnv(t)
	c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{ACL: []string{"bind:*.example.com", "bind:1.tcp.example.com:20002"}})
	if err != nil {
		t.Fatal(err)
	}
	auth, err := e.svc.Host().AuthenticateTunnelToken(e.ctx, *c.Token)
	if err != nil {
		t.Fatal(err)
	}
	if auth.AccountID != e.admin.AccountID || auth.Credential.ID != c.ID || auth.Credential.Token != nil {
		t.Errorf("tunnel auth = %+v", auth)
	}
	if !auth.ACL.AllowsDomain("api.example.com") || auth.ACL.AllowsDomain("example.com") || !auth.ACL.AllowsAddr("1.tcp.example.com:20002") {
		t.Error("tunnel auth ACL does not match the credential's rules")
	}
	for name, tok := range map[string]string{
		"empty": "", "truncated": (*c.Token)[:20], "changed": flipLast(*c.Token), "huge": strings.Repeat("x", 1000),
	} {
		_, err := e.svc.Host().AuthenticateTunnelToken(e.ctx, tok)
		if apierr.CodeOf(err) != apierr.Unauthenticated {
			t.Errorf("%s token: %v", name, err)
		}
	}
	if err := e.svc.DeleteCredential(e.ctx, e.admin, c.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Host().AuthenticateTunnelToken(e.ctx, *c.Token)
	wantCode(t, err, apierr.Unauthenticated)
	_, err = e.svc.GetCredential(e.ctx, e.admin, c.ID)
	wantCode(t, err, apierr.NotFound)
	wantCode(t, e.svc.DeleteCredential(e.ctx, e.admin, c.ID), apierr.NotFound)
}

func TestListCredentialsPaging(t *testing.T) {
	e := newEnv(t)
	var want []string
	for range 23 {
		c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, c.ID)
	}
	slices.Reverse(want)

	page, err := e.svc.ListCredentials(e.ctx, e.admin, edgeplane.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if page.URI != "https://api.example.test/credentials" {
		t.Errorf("uri = %q", page.URI)
	}
	wantNext := "https://api.example.test/credentials?before_id=" + want[9] + "&limit=10"
	if page.NextPageURI == nil || *page.NextPageURI != wantNext {
		t.Errorf("next_page_uri = %v, want %q", page.NextPageURI, wantNext)
	}

	var got []string
	opts := edgeplane.ListOptions{Limit: 10}
	pages := 0
	for {
		page, err := e.svc.ListCredentials(e.ctx, e.admin, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, c := range page.Items {
			got = append(got, c.ID)
		}
		if page.NextPageURI == nil {
			break
		}
		opts.BeforeID = page.NextBeforeID
	}
	if pages != 3 {
		t.Errorf("walked %d pages, want 3", pages)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paged IDs (-want +got):\n%s", diff)
	}

	// A page that ends exactly at the last item has no next page.
	exact, _ := e.svc.ListCredentials(e.ctx, e.admin, edgeplane.ListOptions{Limit: 3, BeforeID: want[19]})
	if len(exact.Items) != 3 || exact.NextPageURI != nil {
		t.Errorf("last full page: %d items, next %v", len(exact.Items), exact.NextPageURI)
	}

	// The iterator walks every page.
	var all []string
	for c, err := range edgeplane.All(e.ctx, e.admin, e.svc.ListCredentials) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, c.ID)
	}
	if diff := cmp.Diff(want, all); diff != "" {
		t.Errorf("All (-want +got):\n%s", diff)
	}
	// Breaking out of the loop stops the walk.
	n := 0
	for range edgeplane.All(e.ctx, e.admin, e.svc.ListCredentials) {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("loop ran %d times after break", n)
	}

	for _, tc := range []struct {
		name  string
		opts  edgeplane.ListOptions
		field string
	}{
		{"limit too large", edgeplane.ListOptions{Limit: 101}, "limit"},
		{"negative limit", edgeplane.ListOptions{Limit: -1}, "limit"},
		{"cursor of another kind", edgeplane.ListOptions{BeforeID: "ipp_" + want[0][3:]}, "before_id"},
		{"garbage cursor", edgeplane.ListOptions{BeforeID: "zzz"}, "before_id"},
	} {
		_, err := e.svc.ListCredentials(e.ctx, e.admin, tc.opts)
		wantViolation(t, err, tc.field, "")
	}
	// The iterator reports an error once and stops.
	errs := 0
	for _, err := range edgeplane.All(e.ctx, edgeplane.Principal{}, e.svc.ListCredentials) {
		if err != nil {
			errs++
		}
	}
	if errs != 1 {
		t.Errorf("iterator yielded %d errors, want 1", errs)
	}
}

func TestIDsAreTimeOrdered(t *testing.T) {
	e := newEnv(t)
	var prev string
	for i := range 50 {
		if i%10 == 0 {
			e.clock.Advance(-time.Second) // a clock going backwards must not break order
		}
		c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{})
		if err != nil {
			t.Fatal(err)
		}
		if c.ID <= prev {
			t.Fatalf("ID %s does not sort after %s", c.ID, prev)
		}
		prev = c.ID
	}
}

// flipLast returns s with its last character replaced by a different one.
func flipLast(s string) string {
	last := "A"
	if strings.HasSuffix(s, "A") {
		last = "B"
	}
	return s[:len(s)-1] + last
}

// interleavingStore runs an interloper write just before the first Update
// reaches the store: a Service that decided its new record from an earlier
// read (instead of inside the store's atomic update) would lose that write.
type interleavingStore struct {
	store.Store
	done      atomic.Bool
	interlope func()
}

func (s *interleavingStore) Update(ctx context.Context, kind store.Kind, account, id string, fn func(*store.Record) error) (store.Record, error) {
	if s.interlope != nil && !s.done.Swap(true) {
		s.interlope() // its own Update passes straight through
	}
	return s.Store.Update(ctx, kind, account, id, fn)
}

func TestUpdateIsReadModifyWriteInsideTheStore(t *testing.T) {
	st := &interleavingStore{Store: memstore.New()}
	e := newEnvWithStore(t, st)
	c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{Description: "d0", Metadata: "m0"})
	if err != nil {
		t.Fatal(err)
	}
	st.interlope = func() {
		if _, err := e.svc.UpdateCredential(e.ctx, e.admin, c.ID, credentials.UpdateParams{Metadata: ptr("from the interloper")}); err != nil {
			t.Errorf("interloper: %v", err)
		}
	}
	got, err := e.svc.UpdateCredential(e.ctx, e.admin, c.ID, credentials.UpdateParams{Description: ptr("d1")})
	if err != nil {
		t.Fatal(err)
	}
	if got.Description != "d1" || got.Metadata != "from the interloper" {
		t.Errorf("after interleaved updates: description %q metadata %q; the interloper's write was lost", got.Description, got.Metadata)
	}
}
