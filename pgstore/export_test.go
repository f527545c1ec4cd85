package pgstore

import "github.com/edgeplane/edgeplane/store"

// Statements for the plan tests.
var (
	GetManySQL      = func() string { return qGetMany }
	ListVersionsSQL = func(q store.Query) (string, []any) { return listSQL(q, "r.id, r.version") }
)
