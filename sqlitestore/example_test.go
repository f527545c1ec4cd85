package sqlitestore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/edgeplane/edgeplane/sqlitestore"
	"github.com/edgeplane/edgeplane/store"
)

// A Store on a file: what one Store writes, another opened on the same
// file later reads, at the same revision.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "sqlitestore-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "edgeplane.db")
	ctx := context.Background()

	s, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		panic(err)
	}
	err = s.Create(ctx, store.Record{Kind: "credential", AccountID: "acct_1", ID: "cr_1", Data: []byte(`{"name":"ci"}`), Keys: []string{"token:abc"}})
	if err != nil {
		panic(err)
	}
	s.Close()

	s, err = sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	r, err := s.Lookup(ctx, "credential", "token:abc")
	if err != nil {
		panic(err)
	}
	fmt.Println(r.ID, string(r.Data), r.Version)
	// Output: cr_1 {"name":"ci"} 1
}
