package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/pgstore"
	"github.com/edgeplane/edgeplane/sqlitestore"
	"github.com/edgeplane/edgeplane/store"
)

// defaultStore is the -store of a fresh install: a SQLite file in the
// working directory.
const defaultStore = "sqlite:edgeplane.db"

// storeHelp describes the -store values this build knows.
const storeHelp = "the store: sqlite:PATH (a SQLite file, created if missing), postgres://... (a PostgreSQL database, shareable by several servers) or memory: (this process only, gone when it stops)"

// openStore opens the store spec names and returns it with its closer.
func openStore(ctx context.Context, spec string) (store.Store, func() error, error) {
	return openStoreKeeping(ctx, spec, 0)
}

// openStoreKeeping is openStore whose SQLite or PostgreSQL change feed
// keeps the newest feedRetention changes (0: the store's default).
func openStoreKeeping(ctx context.Context, spec string, feedRetention int) (store.Store, func() error, error) {
	switch {
	case spec == "memory:":
		return memstore.New(), func() error { return nil }, nil
	case strings.HasPrefix(spec, "sqlite:"):
		st, err := sqlitestore.Open(ctx, strings.TrimPrefix(spec, "sqlite:"), sqlitestore.Options{FeedRetention: feedRetention})
		if err != nil {
			return nil, nil, fmt.Errorf("-store %s: %w", spec, err)
		}
		return st, st.Close, nil
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		st, err := pgstore.Open(ctx, spec, pgstore.Options{FeedRetention: feedRetention})
		if err != nil {
			// The URL may hold a password: it is not echoed. The driver's
			// cause (pgx's says which host, user and database it could not
			// reach, never the password) is: the operator needs it.
			var ae *apierr.Error
			if errors.As(err, &ae) && ae.Err != nil {
				return nil, nil, fmt.Errorf("-store postgres: %w: %v", err, ae.Err)
			}
			return nil, nil, fmt.Errorf("-store postgres: %w", err)
		}
		return st, func() error { st.Close(); return nil }, nil
	}
	return nil, nil, usageError{fmt.Sprintf("-store %q: want %s", redact(spec), strings.TrimPrefix(storeHelp, "the store: "))}
}

// sealingKey returns the key that seals secrets at rest:
// EDGEPLANE_SEAL_KEY (standard base64 of 32 bytes) when set; else, for a
// SQLite store, the key file PATH.sealkey beside the database, created
// (mode 0600) on first start; for memory:, a new key printed once.
func sealingKey(spec string, getenv func(string) string, stdout io.Writer) ([]byte, error) {
	return readSealingKey(spec, getenv, stdout, true)
}

// readSealingKey is sealingKey; without create, a missing key file is an
// error rather than made (edgeplane proxy reads the key serve made: a new
// one would only fail the sealing check).
func readSealingKey(spec string, getenv func(string) string, stdout io.Writer, create bool) ([]byte, error) {
	if env := getenv("EDGEPLANE_SEAL_KEY"); env != "" {
		key, err := decodeKey(env)
		if err != nil {
			return nil, fmt.Errorf("EDGEPLANE_SEAL_KEY: %w", err)
		}
		return key, nil
	}
	switch {
	case strings.HasPrefix(spec, "sqlite:"):
		path := strings.TrimPrefix(spec, "sqlite:") + ".sealkey"
		if !create {
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("no sealing key: set EDGEPLANE_SEAL_KEY to the key edgeplane serve uses, or keep its key file %s beside the database", path)
			}
		}
		return keyFile(path, stdout)
	case spec == "memory:":
		key := newKey()
		fmt.Fprintf(stdout, "sealing key (shown once; set EDGEPLANE_SEAL_KEY to it to keep sealed secrets readable): %s\n",
			base64.StdEncoding.EncodeToString(key))
		return key, nil
	}
	return nil, fmt.Errorf("EDGEPLANE_SEAL_KEY is required with -store %s: the key that seals certificate private keys at rest", redact(spec))
}

// keyFile reads the sealing key from path, or creates it there with mode
// 0600 when it does not exist.
func keyFile(path string, stdout io.Writer) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		key, err := decodeKey(strings.TrimSpace(string(data)))
		if err != nil {
			return nil, fmt.Errorf("sealing key file %s: %w", path, err)
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sealing key file: %w", err)
	}
	key := newKey()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sealing key file: %w", err)
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("sealing key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("sealing key file: %w", err)
	}
	fmt.Fprintf(stdout, "sealing key: created %s (mode 0600); keep it with the database\n", path)
	return key, nil
}

func decodeKey(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(key) != edgeplane.SealingKeySize {
		return nil, fmt.Errorf("want the standard base64 of %d bytes", edgeplane.SealingKeySize)
	}
	return key, nil
}

func newKey() []byte {
	key := make([]byte, edgeplane.SealingKeySize)
	rand.Read(key)
	return key
}

// redact cuts a store spec to its scheme when it may carry a password.
func redact(spec string) string {
	if i := strings.Index(spec, "://"); i >= 0 {
		return spec[:i+3] + "…"
	}
	return spec
}
