package memstore

import (
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/store"
)

// BenchmarkPack packs a credential-like record (a document of about 300
// bytes, one key, one reference) per op.
func BenchmarkPack(b *testing.B) {
	rec := store.Record{Kind: "credential", AccountID: "acct_1", ID: "cr_0000000000000001",
		Data: []byte(`{"id":"cr_0000000000000001","description":"the credential of a load test","owner_id":"own_0000000000000001",` +
			`"metadata":"` + strings.Repeat("m", 200) + `"}`),
		Keys: []string{"tok:cr_0000000000000001"}, Refs: []string{"own_0000000000000001"}}
	b.ReportAllocs()
	for b.Loop() {
		r := pack(rec.ID, &rec)
		if len(r.blob) == 0 {
			b.Fatal("an empty blob")
		}
	}
}
