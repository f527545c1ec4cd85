package pgstore

import "github.com/edgeplane/edgeplane/store"

// Statements for the plan tests.
var (
	GetManySQL      = func() string { return qGetMany }
	ListVersionsSQL = func(q store.Query) (string, []any) { return listSQL(q, "r.id, r.version") }
)

// Batches returns how many batches s committed on the fast path and on
// the careful one.
func (s *Store) Batches() (fast, careful int64) { return s.fast.Load(), s.careful.Load() }
