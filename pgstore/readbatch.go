package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/edgeplane/edgeplane/store"
)

// read is one read of a read batch: a statement, its arguments, and the
// function that consumes its rows.
type read struct {
	sql  string
	args []any
	scan func(pgx.Rows) error
}

// maxReadBatch bounds the reads one round trip sends.
const maxReadBatch = 64

// readLanes is how many read batches run at once for a pool of
// maxConns connections: half of them, so that writes and the reads that
// are not batched find a connection.
func readLanes(maxConns int32) int {
	return max(1, int(maxConns)/2)
}

// runReads runs a batch of reads: one alone as a query of its own, more
// in one pipelined round trip (pgx's Batch: every statement and one Sync,
// so they share one implicit transaction and one snapshot, taken after
// each read was queued). A read whose statement fails there aborts those
// after it, so from the failed read on each runs again alone, and gets
// its own result. The batch's context ends when every reader's has.
func (s *Store) runReads(batch []*store.Pending[read]) {
	live := make([]*store.Pending[read], 0, len(batch))
	for _, p := range batch {
		if err := p.Ctx.Err(); err != nil {
			p.Err = err
			continue
		}
		live = append(live, p)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		live[0].Err = s.readOne(live[0].Ctx, live[0].Work)
		return
	}
	ctx, cancel := batchContext(live)
	defer cancel()
	s.readBatches.Add(1)
	b := &pgx.Batch{}
	for _, p := range live {
		b.Queue(p.Work.sql, p.Work.args...)
	}
	br := s.pool.SendBatch(ctx, b)
	failed := len(live)
	for i, p := range live {
		rows, err := br.Query()
		if err == nil {
			err = consume(rows, p.Work.scan)
		}
		if err != nil {
			failed = i
			break
		}
	}
	br.Close() //nolint:errcheck // a failure is the failed read's, run again below
	for _, p := range live[failed:] {
		p.Err = s.readOne(p.Ctx, p.Work)
	}
}

// readOne runs r as a query of its own.
func (s *Store) readOne(ctx context.Context, r read) error {
	rows, err := s.pool.Query(ctx, r.sql, r.args...)
	if err != nil {
		return err
	}
	return consume(rows, r.scan)
}

// consume hands rows to scan and closes them, returning scan's error or
// the rows'.
func consume(rows pgx.Rows, scan func(pgx.Rows) error) error {
	err := scan(rows)
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	return err
}
