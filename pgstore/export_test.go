package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/edgeplane/edgeplane/store"
)

// Statements for the plan tests.
var (
	GetManySQL      = func() string { return qGetMany }
	ListVersionsSQL = func(q store.Query) (string, []any) { return listSQL(q, "r.id, r.version") }
)

// Batches returns how many batches s committed on the fast path and on
// the careful one.
func (s *Store) Batches() (fast, careful int64) { return s.fast.Load(), s.careful.Load() }

// ReadBatches returns how many read batches of more than one read s
// sent.
func (s *Store) ReadBatches() int64 { return s.readBatches.Load() }

// RunReads runs the statements as one read batch and returns, for each,
// its first row's first column as text and its error.
func (s *Store) RunReads(ctx context.Context, sqls []string) ([]string, []error) {
	out := make([]string, len(sqls))
	batch := make([]*store.Pending[read], len(sqls))
	for i, q := range sqls {
		batch[i] = &store.Pending[read]{Ctx: ctx, Work: read{sql: q, scan: func(rows pgx.Rows) error {
			if rows.Next() {
				return rows.Scan(&out[i])
			}
			return rows.Err()
		}}}
	}
	s.runReads(batch)
	errs := make([]error, len(sqls))
	for i, p := range batch {
		errs[i] = p.Err
	}
	return out, errs
}
