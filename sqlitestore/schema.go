package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrNewerSchema reports that a database's schema version is newer than
// this code knows: it was written by a newer edgeplane, and opening it
// with this one could damage it. [Open] wraps it with both versions.
var ErrNewerSchema = errors.New("sqlitestore: the database schema is newer than this code knows")

// migrations returns the embedded migrations in order: the one at index i
// brings the schema to version i+1.
func migrations() ([]string, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, n := range names {
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out[i] = string(b)
	}
	return out, nil
}

// SchemaVersion is the schema version this code writes: the number of
// embedded migrations.
func SchemaVersion() int {
	m, _ := migrations()
	return len(m)
}

// migrate brings the database to the newest schema, each step in its own
// immediate transaction on the writer, or fails with [ErrNewerSchema].
func migrate(ctx context.Context, db *sql.DB) error {
	steps, err := migrations()
	if err != nil {
		return err
	}
	for {
		done, err := migrateStep(ctx, db, steps)
		if err != nil || done {
			return err
		}
	}
}

func migrateStep(ctx context.Context, db *sql.DB, steps []string) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil) // the writer's DSN makes it BEGIN IMMEDIATE
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var have int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&have); err != nil {
		return false, err
	}
	switch {
	case have > len(steps):
		return false, fmt.Errorf("%w: it is at version %d, this code knows up to %d", ErrNewerSchema, have, len(steps))
	case have == len(steps):
		return true, nil
	}
	if _, err := tx.ExecContext(ctx, steps[have]); err != nil {
		return false, fmt.Errorf("sqlitestore: migration %d: %w", have+1, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", have+1)); err != nil {
		return false, err
	}
	return false, tx.Commit()
}
