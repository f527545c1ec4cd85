package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// statements caches the prepared statements of one *sql.DB by their SQL:
// SQLite compiles a statement once per connection instead of once per
// call.
type statements struct {
	db *sql.DB
	m  sync.Map // SQL -> *sql.Stmt
	mu sync.Mutex
}

// prepare returns the prepared statement of q, preparing it on first use.
func (c *statements) prepare(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := c.m.Load(q); ok {
		return st.(*sql.Stmt), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m.Load(q); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	c.m.Store(q, st)
	return st, nil
}

// lookup returns the statement of q if it was prepared.
func (c *statements) lookup(q string) *sql.Stmt {
	if st, ok := c.m.Load(q); ok {
		return st.(*sql.Stmt)
	}
	return nil
}

func (c *statements) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := c.prepare(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (c *statements) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := c.prepare(ctx, q)
	if err != nil {
		return c.db.QueryRowContext(ctx, q, args...) // reports the error through Scan
	}
	return st.QueryRowContext(ctx, args...)
}

func (c *statements) close() error {
	var errs []error
	c.m.Range(func(_, st any) bool {
		errs = append(errs, st.(*sql.Stmt).Close())
		return true
	})
	return errors.Join(errs...)
}

// wtx is a write transaction that runs the writer's prepared statements
// (those of writeStatements, prepared at Open) on its connection, and any
// other SQL as it is.
type wtx struct {
	tx *sql.Tx
	ws *statements
	b  *batchState
}

// batchState is what a batch's writes share beyond the transaction.
type batchState struct {
	// rev is the revision of the batch's last write so far (see bump).
	rev int64
	// took counts the statements run through ExecContext that took
	// effect (a failed statement takes none: SQLite undoes it).
	took int
	// stmts are the writer's statements bound to the transaction, each
	// bound once per batch rather than once per call.
	stmts map[*sql.Stmt]*sql.Stmt
}

// stmt returns the statement of q bound to the transaction, nil when q
// is not one of the writer's prepared statements.
func (t wtx) stmt(ctx context.Context, q string) *sql.Stmt {
	st := t.ws.lookup(q)
	if st == nil {
		return nil
	}
	if t.b.stmts == nil {
		t.b.stmts = make(map[*sql.Stmt]*sql.Stmt, len(writeStatements))
	}
	bound := t.b.stmts[st]
	if bound == nil {
		bound = t.tx.StmtContext(ctx, st)
		t.b.stmts[st] = bound
	}
	return bound
}

func (t wtx) ExecContext(ctx context.Context, q string, args ...any) (res sql.Result, err error) {
	if st := t.stmt(ctx, q); st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = t.tx.ExecContext(ctx, q, args...)
	}
	if err == nil {
		t.b.took++
	}
	return res, err
}

func (t wtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, q, args...)
}

func (t wtx) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	if st := t.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, q, args...)
}
