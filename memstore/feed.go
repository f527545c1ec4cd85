package memstore

import (
	"context"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
)

// change is one committed change in the feed's log: the record as the
// write left it (a delete: as it was), in its stored form, which is
// immutable, so the log shares its blob with the record's slot (until
// the next update or the delete) instead of copying the document.
type change struct {
	op   store.Op
	note store.Note
	rec  packed
}

// feedLog is the tail of the change feed: a ring of at most keep changes,
// oldest first. The ring grows to keep and then wraps: a commit neither
// allocates nor copies the log.
type feedLog struct {
	ring  []change
	start int // the oldest change's place in ring
	n     int // how many changes ring holds
	keep  int
}

// at returns the i-th oldest change held.
func (l *feedLog) at(i int) *change { return &l.ring[(l.start+i)%len(l.ring)] }

// push appends c, dropping the oldest change when the log holds keep.
func (l *feedLog) push(c change) {
	if l.n == len(l.ring) {
		if len(l.ring) < l.keep {
			grown := make([]change, min(l.keep, max(16, 2*len(l.ring))))
			for i := range l.n {
				grown[i] = *l.at(i)
			}
			l.ring, l.start = grown, 0
		} else {
			l.drop(1)
		}
	}
	l.ring[(l.start+l.n)%len(l.ring)] = c
	l.n++
}

// drop discards the k oldest changes (k <= l.n), releasing what they hold.
func (l *feedLog) drop(k int) {
	for range k {
		l.ring[l.start] = change{}
		l.start = (l.start + 1) % len(l.ring)
		l.n--
	}
}

// commit appends the change op of r, labelled note, to the feed and
// wakes its waiters, under the write lock, and returns its revision. A
// create or update first sets r's version to it.
func (s *Store) commit(op store.Op, r *packed, note store.Note) int64 {
	s.rev++
	if op != store.OpDelete {
		r.version = s.rev
	}
	note.At = note.At.UTC() // and without its monotonic reading, as a database keeps it
	s.log.push(change{op: op, note: note, rec: *r})
	s.wake.Lock()
	s.published = s.rev
	if s.commits != nil { // someone waits: wake them; writes without waiters allocate nothing
		close(s.commits)
		s.commits = nil
	}
	s.wake.Unlock()
	return s.rev
}

// Revision implements [store.Feed].
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rev, nil
}

// Changes implements [store.Feed]. A revision above the store's is also
// a [store.CompactedError]: this store never held it. The changes' Data
// are copies, carved from one array for the whole answer; with
// [store.WithoutData] they are nil and nothing is copied.
func (s *Store) Changes(ctx context.Context, after int64, limit int, payload store.Payload) ([]store.Change, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, apierr.Invalidf("limit", "must be positive")
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	oldest := s.rev - int64(s.log.n) + 1 // revision of the oldest change held, or rev+1 when none
	kept := max(oldest, s.floor+1)
	if after+1 < kept || after > s.rev {
		return nil, &store.CompactedError{After: after, Oldest: kept}
	}
	i := int(after + 1 - oldest)
	n := min(limit, s.log.n-i)
	wanted := payload == store.WithData
	size := 0
	if wanted {
		for j := range n {
			o := s.log.at(i + j).rec.open()
			size += len(o.data)
		}
	}
	data := make([]byte, 0, size)
	out := make([]store.Change, n)
	for j := range n {
		c := s.log.at(i + j)
		o := c.rec.open()
		out[j] = store.Change{Revision: after + 1 + int64(j), Op: c.op, Kind: o.kind, AccountID: o.account,
			ID: o.id, ParentID: o.parent, Note: c.note}
		if wanted && o.data != "" {
			start := len(data)
			data = append(data, o.data...)
			out[j].Data = data[start:len(data):len(data)]
		}
	}
	return out, nil
}

// Compact implements [store.Feed].
func (s *Store) Compact(ctx context.Context, through int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	through = min(through, s.rev)
	if through <= s.floor {
		return nil
	}
	s.floor = through
	oldest := s.rev - int64(s.log.n) + 1
	if drop := int(through - oldest + 1); drop > 0 {
		s.log.drop(min(drop, s.log.n))
	}
	return nil
}

// Wait implements [store.Feed].
func (s *Store) Wait(ctx context.Context, after int64) error {
	for {
		s.wake.Lock()
		if s.published > after {
			s.wake.Unlock()
			return nil
		}
		if s.commits == nil {
			s.commits = make(chan struct{})
		}
		ch := s.commits
		s.wake.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
