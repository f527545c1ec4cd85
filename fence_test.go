package edgeplane_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/sqlitestore"
)

// TestReadsSeeOtherReplicasWrites: two Services (two replicas) on one
// SQLite file, whose change feed the other process polls every 100 ms.
// Each answers reads from its record and authentication caches; a read
// right after another replica's acknowledged write sees it, with no wait
// of the test's: a delete, concurrent updates of two fields, a revoked
// API key.
func TestReadsSeeOtherReplicasWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	a, b := replicaOf(t, path), replicaOf(t, path)
	p := newAdmin(t, a)

	for round := range 5 {
		c, err := a.CreateCredential(ctx, p, credentials.CreateParams{Description: "from a"})
		if err != nil {
			t.Fatal(err)
		}
		// Both replicas cache it.
		for _, svc := range []*edgeplane.Service{a, b} {
			if _, err := svc.GetCredential(ctx, p, c.ID); err != nil {
				t.Fatal(err)
			}
		}
		// Concurrent updates of two fields, one replica each; then both
		// read both.
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := a.UpdateCredential(ctx, p, c.ID, credentials.UpdateParams{Description: ptr("by a")}); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if _, err := b.UpdateCredential(ctx, p, c.ID, credentials.UpdateParams{Metadata: ptr("by b")}); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		for name, svc := range map[string]*edgeplane.Service{"a": a, "b": b} {
			got, err := svc.GetCredential(ctx, p, c.ID)
			if err != nil || got.Description != "by a" || got.Metadata != "by b" {
				t.Fatalf("round %d: %s reads %+v, %v; want both updates", round, name, got, err)
			}
		}
		// A delete through b: a read through a is not found.
		if err := b.DeleteCredential(ctx, p, c.ID); err != nil {
			t.Fatal(err)
		}
		_, err = a.GetCredential(ctx, p, c.ID)
		wantCode(t, err, apierr.NotFound)
	}

	// An API key revoked through a stops authenticating on b at once.
	key, err := a.Host().CreateAPIKey(ctx, p.AccountID, identity.CreateAPIKeyParams{OwnerID: p.SubjectID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(ctx, *key.Token); err != nil {
		t.Fatal(err)
	}
	if err := a.Host().DeleteAPIKey(ctx, p.AccountID, key.ID); err != nil {
		t.Fatal(err)
	}
	_, err = b.Authenticate(ctx, *key.Token)
	wantCode(t, err, apierr.Unauthenticated)
}

// newAdmin creates an account with an admin through svc and returns the
// admin's principal.
func newAdmin(t *testing.T, svc *edgeplane.Service) edgeplane.Principal {
	t.Helper()
	ctx := context.Background()
	acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "admin", Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	return edgeplane.Principal{AccountID: acct.ID, SubjectID: sub.ID, Admin: true}
}

// replicaOf returns a Service on its own Store of the SQLite file at
// path, as a replica of a server on that file would be, closed when the
// test ends; each of with changes its options first.
func replicaOf(t *testing.T, path string, with ...func(*edgeplane.Options)) *edgeplane.Service {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	opts := edgeplane.Options{SealingKey: make([]byte, edgeplane.SealingKeySize)}
	for _, f := range with {
		f(&opts)
	}
	svc, err := edgeplane.New(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	return svc
}
