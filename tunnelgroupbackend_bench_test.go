package edgeplane_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/pgstore"
	"github.com/edgeplane/edgeplane/sqlitestore"
	"github.com/edgeplane/edgeplane/store"
)

// backends returns the stores the per-backend benchmarks run on:
// memstore, sqlitestore on a temporary file and, when
// EDGEPLANE_TEST_POSTGRES_URL is set, pgstore (on that database's
// search_path; give it an empty schema).
func benchBackends(b *testing.B) map[string]func(b *testing.B) store.Store {
	out := map[string]func(b *testing.B) store.Store{
		"memstore": func(*testing.B) store.Store { return memstore.New() },
		"sqlitestore": func(b *testing.B) store.Store {
			st, err := sqlitestore.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlitestore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		},
	}
	if u := os.Getenv("EDGEPLANE_TEST_POSTGRES_URL"); u != "" {
		out["pgstore"] = func(b *testing.B) store.Store {
			st, err := pgstore.Open(context.Background(), u, pgstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(st.Close)
			return st
		}
	}
	return out
}

// BenchmarkBackends: the Service's hot paths on each backend, in one run:
// API-key authentication (cached, as a server sees a repeated key), and
// get, a 100-item list page, create and update of credentials.
func BenchmarkBackends(b *testing.B) {
	for name, open := range benchBackends(b) {
		b.Run(name, func(b *testing.B) {
			e := newEnvWithStore(b, open(b))
			key, err := e.svc.Host().CreateAPIKey(e.ctx, e.admin.AccountID, identity.CreateAPIKeyParams{OwnerID: e.admin.SubjectID})
			if err != nil {
				b.Fatal(err)
			}
			c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{Description: "d"})
			if err != nil {
				b.Fatal(err)
			}
			b.Run("Authenticate", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.svc.Authenticate(e.ctx, *key.Token); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("AuthenticateUncached", func(b *testing.B) {
				uncached, err := edgeplane.New(e.store, edgeplane.Options{AuthCacheTTL: -1})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := uncached.Authenticate(e.ctx, *key.Token); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("GetCredential", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.svc.GetCredential(e.ctx, e.admin, c.ID); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("CreateCredential", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{Description: "d"}); err != nil {
						b.Fatal(err)
					}
				}
			})
			// 100 more credentials, whichever of the list benchmarks runs.
			for range 100 {
				if _, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{Description: "d"}); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("ListCredentials100", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					page, err := e.svc.ListCredentials(e.ctx, e.admin, edgeplane.ListOptions{Limit: 100})
					if err != nil || len(page.Items) != 100 {
						b.Fatal(err)
					}
				}
			})
			// The same page as the HTTP API answers it: its items' JSON
			// (records.ListEncoded), the encodings cached with the records.
			b.Run("ListCredentials100JSON", func(b *testing.B) {
				tr := e.svc.Transport()
				var buf []byte
				b.ReportAllocs()
				for b.Loop() {
					page, err := tr.ListCredentials(e.ctx, e.admin, edgeplane.ListOptions{Limit: 100})
					if err != nil || page.NextPageURI == nil {
						b.Fatal(err, "or no next page: fewer than 100 credentials")
					}
					buf = page.AppendItemsJSON(buf[:0])
				}
			})
			desc := "renamed"
			b.Run("UpdateCredential", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.svc.UpdateCredential(e.ctx, e.admin, c.ID, credentials.UpdateParams{Description: &desc}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
