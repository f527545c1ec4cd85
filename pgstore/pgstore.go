package pgstore

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

var _ store.Store = (*Store)(nil)

// DefaultFeedRetention is the default of Options.FeedRetention.
const DefaultFeedRetention = 10_000

// maxAttempts bounds the tries of a write that hits a serialization
// failure or a deadlock.
const maxAttempts = 8

// pruneEvery is how many writes of a handle pass between deletions of
// changes older than the retention.
const pruneEvery = 32

// Options configures a Store. The zero value gives the defaults.
type Options struct {
	// FeedRetention is how many of the newest changes the change feed
	// keeps (default DefaultFeedRetention).
	FeedRetention int
}

// Store is a [store.Store] on PostgreSQL. Open one with [Open]; it is
// safe for concurrent use, and several Stores (in one process or many)
// may share one database schema. Close it when done.
type Store struct {
	pool    *pgxpool.Pool
	keep    int64
	channel string       // the NOTIFY channel of the schema
	writes  atomic.Int64 // writes committed through this handle, for pruning
	batches *store.GroupCommit[work]
	// reads sends concurrent list reads (ListVersions, GetMany) in
	// batches, one round trip each (see runReads).
	reads *store.GroupCommit[read]
	// readBatches counts the read batches sent of more than one read.
	readBatches atomic.Int64
	// fast and careful count the batches committed on each path.
	fast, careful atomic.Int64

	listener  *listener
	closeOnce sync.Once
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	sql     string
}

// migrations returns the embedded migrations in version order; a file
// is named NNN_what.sql.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return nil, errors.New("pgstore: migration " + base + " has no version prefix")
		}
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{v, string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	return out, nil
}

// Open connects to the PostgreSQL database at url (a postgres:// URL or
// key=value connection string, as pgx accepts, including pgxpool's
// pool_* settings), applies the schema migrations and starts the
// listener of [Store.Wait].
//
// It fails with an [apierr.ErrFailedPrecondition] error when the schema
// is newer than this build of the package.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, apierr.Wrap(apierr.InvalidArgument, err, "pgstore: the database URL is not valid")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, dbErr(ctx, err)
	}
	s := &Store{pool: pool, keep: int64(opts.FeedRetention)}
	s.batches = store.NewGroupCommit(maxBatch, s.commitBatch)
	s.reads = store.NewGroupRead(maxReadBatch, readLanes(cfg.MaxConns), s.runReads)
	if s.keep <= 0 {
		s.keep = DefaultFeedRetention
	}
	schema, err := migrate(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	sum := sha256.Sum256([]byte(schema))
	s.channel = "edgeplane_feed_" + hex.EncodeToString(sum[:12])
	s.listener, err = listen(ctx, cfg.ConnConfig.Copy(), s.channel)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// migrate applies the migrations the schema lacks, under an advisory
// lock, and returns the schema's name.
func migrate(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	ms, err := migrations()
	if err != nil {
		return "", apierr.Wrap(apierr.Internal, err, "pgstore: bad embedded migrations")
	}
	latest := ms[len(ms)-1].version
	var schema string
	err = pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		var name *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&name); err != nil {
			return dbErr(ctx, err)
		}
		if name == nil {
			return apierr.New(apierr.FailedPrecondition, "pgstore: no schema of the search_path exists")
		}
		schema = *name
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('edgeplane.pgstore.migrate'), hashtext(current_schema()))`); err != nil {
			return dbErr(ctx, err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS edgeplane_schema_migrations (
			version    integer     PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return dbErr(ctx, err)
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM edgeplane_schema_migrations`).Scan(&have); err != nil {
			return dbErr(ctx, err)
		}
		if have > latest {
			return apierr.New(apierr.FailedPrecondition,
				"pgstore: the database schema is at version %d, newer than this build's %d: upgrade edgeplane", have, latest)
		}
		for _, m := range ms {
			if m.version <= have {
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return dbErr(ctx, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO edgeplane_schema_migrations (version) VALUES ($1)`, m.version); err != nil {
				return dbErr(ctx, err)
			}
		}
		return nil
	})
	if err != nil {
		return "", dbErr(ctx, err)
	}
	return schema, nil
}

// Close stops the listener and closes the pool's connections, waiting for
// connections in use to be released. A [Store.Wait] in progress returns
// an error. The Store must not be used after.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
		s.listener.close()
		s.pool.Close()
		s.listener.notify(0) // waiters re-read the revision, and fail on the closed pool
	})
}

// dbErr turns an error of the database into one for callers: the
// context's error when ctx has ended, an error already of ours as is, and
// anything else an internal error whose message names no SQL.
func dbErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return err
	}
	for _, target := range []any{new(*store.DuplicateError), new(*store.MissingRefError), new(*store.InUseError), new(*store.VersionError), new(*store.CompactedError)} {
		if errors.As(err, target) {
			return err
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return apierr.Wrap(apierr.Internal, err, "pgstore: storage failure")
}

// sqlState returns the SQLSTATE of a PostgreSQL error in err's chain, or "".
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// The SQLSTATEs the store maps.
const (
	uniqueViolation      = "23505"
	foreignKeyViolation  = "23503"
	serializationFailure = "40001"
	deadlockDetected     = "40P01"
)

// errRetry marks an attempt that met a state its own checks did not
// predict; it is retried like a serialization failure.
var errRetry = errors.New("pgstore: retry")

func retryable(err error) bool {
	switch sqlState(err) {
	case serializationFailure, deadlockDetected:
		return true
	}
	return errors.Is(err, errRetry)
}

// retry runs attempt until it succeeds, fails for good, or has run
// maxAttempts times.
func retry(ctx context.Context, attempt func() error) error {
	var err error
	for range maxAttempts {
		if err = ctx.Err(); err != nil {
			return err
		}
		if err = attempt(); !retryable(err) {
			return err
		}
	}
	return apierr.Wrap(apierr.Internal, err, "pgstore: the write kept conflicting with others; try again")
}

// listener is the dedicated connection that LISTENs on the store's
// channel and wakes waiters.
type listener struct {
	cfg     *pgx.ConnConfig
	channel string
	stop    context.CancelFunc
	done    chan struct{}

	mu     sync.Mutex
	wake   chan struct{} // closed and replaced at each notification
	latest int64         // the greatest revision notified
}

// listen opens the listening connection, so that no commit after Open
// returns goes unnoticed, and starts its loop.
func listen(ctx context.Context, cfg *pgx.ConnConfig, channel string) (*listener, error) {
	l := &listener{cfg: cfg, channel: channel, done: make(chan struct{}), wake: make(chan struct{})}
	conn, err := l.connect(ctx)
	if err != nil {
		return nil, dbErr(ctx, err)
	}
	lctx, stop := context.WithCancel(context.Background())
	l.stop = stop
	go l.run(lctx, conn)
	return l, nil
}

func (l *listener) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// run receives notifications until ctx ends, reconnecting with a backoff
// when the connection breaks; after a reconnection it wakes every waiter,
// since commits may have gone unnoticed meanwhile.
func (l *listener) run(ctx context.Context, conn *pgx.Conn) {
	defer close(l.done)
	backoff := 50 * time.Millisecond
	for {
		if conn != nil {
			for {
				n, err := conn.WaitForNotification(ctx)
				if err != nil {
					break
				}
				rev, _ := strconv.ParseInt(n.Payload, 10, 64)
				l.notify(rev)
				backoff = 50 * time.Millisecond
			}
			conn.Close(context.Background())
			conn = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
		c, err := l.connect(ctx)
		if err == nil {
			conn = c
			l.notify(0)
		}
	}
}

// notify records a committed revision and wakes the waiters.
func (l *listener) notify(rev int64) {
	l.mu.Lock()
	l.latest = max(l.latest, rev)
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
}

// subscribe returns the channel the next notification closes and the
// greatest revision notified so far.
func (l *listener) subscribe() (<-chan struct{}, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.wake, l.latest
}

func (l *listener) close() {
	l.stop()
	<-l.done
}
