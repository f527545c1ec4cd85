package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
)

// Revision implements [store.Feed].
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.revMu.Lock()
	defer s.revMu.Unlock()
	select {
	case <-s.closed:
		return 0, ErrClosed
	default:
	}
	rev, err := s.readRevision(ctx)
	if err != nil && ctx.Err() == nil {
		// Start afresh on the next read: a connection that failed once
		// may stay broken.
		s.closeRevisionConn() //nolint:errcheck // err is the one to report
	}
	return rev, dbError(ctx, err)
}

// readRevision reads the revision on the Store's revision connection
// (opened on first use), through the driver's statement. Under revMu.
func (s *Store) readRevision(ctx context.Context) (int64, error) {
	if s.rev == nil {
		c, err := s.r.Conn(ctx)
		if err != nil {
			return 0, err
		}
		s.rev = c
	}
	var rev int64
	err := s.rev.Raw(func(dc any) error {
		if s.revStmt == nil {
			p, ok := dc.(driver.ConnPrepareContext)
			if !ok {
				return errors.New("sqlitestore: the driver cannot prepare with a context")
			}
			st, err := p.PrepareContext(ctx, "SELECT revision FROM meta")
			if err != nil {
				return err
			}
			s.revStmt = st
		}
		q, ok := s.revStmt.(driver.StmtQueryContext)
		if !ok {
			return errors.New("sqlitestore: the driver cannot query with a context")
		}
		rows, err := q.QueryContext(ctx, nil)
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, 1)
		if err := rows.Next(dest); err != nil {
			return err
		}
		v, ok := dest[0].(int64)
		if !ok {
			return fmt.Errorf("sqlitestore: the revision is a %T", dest[0])
		}
		rev = v
		return nil
	})
	return rev, err
}

// closeRevisionConn closes the revision connection and its statement.
// Under revMu.
func (s *Store) closeRevisionConn() error {
	var errs []error
	if s.revStmt != nil {
		errs = append(errs, s.revStmt.Close())
		s.revStmt = nil
	}
	if s.rev != nil {
		errs = append(errs, s.rev.Close())
		s.rev = nil
	}
	return errors.Join(errs...)
}

// The feed's queries.
const (
	qFeedMeta           = "SELECT revision, floor FROM meta"
	qChanges            = "SELECT revision, op, kind, account_id, id, parent_id, data, note_event, note_at FROM feed WHERE revision > ? ORDER BY revision LIMIT ?"
	qChangesWithoutData = "SELECT revision, op, kind, account_id, id, parent_id, NULL, note_event, note_at FROM feed WHERE revision > ? ORDER BY revision LIMIT ?"
)

// Changes implements [store.Feed]. A revision above the store's is also
// a [store.CompactedError]: this store never held it.
func (s *Store) Changes(ctx context.Context, after int64, limit int, payload store.Payload) ([]store.Change, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, apierr.Invalidf("limit", "must be positive")
	}
	// One read transaction: the revision, the floor and the rows are of
	// one snapshot.
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, dbError(ctx, err)
	}
	defer tx.Rollback()
	// The statements are the readers' prepared ones (prepared once per
	// connection), bound to the transaction: the follower reads the
	// feed after every commit.
	stmt := func(q string) (*sql.Stmt, error) {
		st, err := s.rs.prepare(ctx, q)
		if err != nil {
			return nil, err
		}
		return tx.StmtContext(ctx, st), nil
	}
	meta, err := stmt(qFeedMeta)
	if err != nil {
		return nil, dbError(ctx, err)
	}
	var rev, floor int64
	if err := meta.QueryRowContext(ctx).Scan(&rev, &floor); err != nil {
		return nil, dbError(ctx, err)
	}
	kept := max(floor+1, rev-s.keep+1)
	if after+1 < kept || after > rev {
		return nil, &store.CompactedError{After: after, Oldest: kept}
	}
	q := qChanges
	if payload == store.WithoutData {
		q = qChangesWithoutData
	}
	changes, err := stmt(q)
	if err != nil {
		return nil, dbError(ctx, err)
	}
	rows, err := changes.QueryContext(ctx, after, limit)
	if err != nil {
		return nil, dbError(ctx, err)
	}
	defer rows.Close()
	var out []store.Change
	for rows.Next() {
		var c store.Change
		var kind string
		var at sql.NullInt64
		if err := rows.Scan(&c.Revision, &c.Op, &kind, &c.AccountID, &c.ID, &c.ParentID, &c.Data, &c.Note.Event, &at); err != nil {
			return nil, dbError(ctx, err)
		}
		c.Kind = store.Kind(kind)
		if at.Valid {
			c.Note.At = time.Unix(0, at.Int64).UTC()
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(ctx, err)
	}
	return out, nil
}

// Compact implements [store.Feed]. It is a write, but not a change: the
// revision stays.
func (s *Store) Compact(ctx context.Context, through int64) error {
	return s.write(ctx, func(tx wtx) error {
		if _, err := tx.ExecContext(ctx, "UPDATE meta SET floor = max(floor, min(?, revision))", through); err != nil {
			return dbError(ctx, err)
		}
		_, err := tx.ExecContext(ctx, "DELETE FROM feed WHERE revision <= (SELECT floor FROM meta)")
		return dbError(ctx, err)
	})
}

// notify wakes the waiters after a commit (by this Store, or seen by the
// poller).
func (s *Store) notify() {
	s.mu.Lock()
	close(s.commits)
	s.commits = make(chan struct{})
	s.mu.Unlock()
}

// Wait implements [store.Feed]. A commit through this Store wakes it at
// once; one by another Store on the file (in this process or another) is
// seen by a poller that reads the revision every PollInterval while
// anyone waits. On a closed Store it fails with [ErrClosed].
func (s *Store) Wait(ctx context.Context, after int64) error {
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		return ErrClosed
	default:
	}
	s.waiters++
	if !s.polling {
		s.polling = true
		s.pollers.Add(1)
		go s.pollRevision()
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.waiters--
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		ch := s.commits // taken before the read, so no commit after it is missed
		s.mu.Unlock()
		rev, err := s.Revision(ctx)
		if err != nil {
			return err
		}
		if rev > after {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closed:
			return ErrClosed
		}
	}
}

// pollRevision reads the revision every s.poll and wakes the waiters when
// it moved, until no one waits or the Store closes.
func (s *Store) pollRevision() {
	defer s.pollers.Done()
	t := time.NewTicker(s.poll)
	defer t.Stop()
	var seen int64 = -1
	for {
		select {
		case <-s.closed:
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.waiters == 0 {
			s.polling = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), s.poll)
		rev, err := s.Revision(ctx)
		cancel()
		if err == nil && rev != seen { // the first read wakes too: a waiter may have read before it
			seen = rev
			s.notify()
		}
	}
}
