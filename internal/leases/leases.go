package leases

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/store"
)

const (
	// account is the account ID every lease is stored under.
	account = "lease"
	// prefix starts the record ID of a lease; its name follows.
	prefix = "lease_"
	// MaxName is the longest lease name, in bytes.
	MaxName = 64
	// MaxHolder is the longest holder name, in bytes.
	MaxHolder = 128
	// MaxTerm is the longest term of a lease.
	MaxTerm = 24 * time.Hour
)

// Lease is the state of a named lease.
type Lease struct {
	// Name is the lease's name.
	Name string
	// Holder is the replica that holds it (the caller's holder when Held).
	Holder string
	// Held reports whether the caller holds it now.
	Held bool
	// ExpiresAt is when the holder's term ends unless it renews.
	ExpiresAt time.Time
	// Since is when Holder took it (renewals keep it).
	Since time.Time
}

// doc is the stored form of a lease.
type doc struct {
	Holder    string    `json:"holder"`
	Since     time.Time `json:"since"`
	ExpiresAt time.Time `json:"expires_at"`
}

// kind is the identity of leases for the store's errors; leases are not
// an API kind.
var kind = &records.Kind{StoreKind: kinds.Lease, Prefix: prefix, Noun: "lease"}

// Registry takes and releases the leases of one store. It holds no state
// of its own (every lease is a record of the store), so it is safe for
// concurrent use, and every replica's Registry sees the same leases.
type Registry struct {
	store store.Store
	db    *records.DB
	now   func() time.Time
}

// New returns the Registry of the leases in st, whose store errors db
// maps to the API's ([records.DB.StoreErr]), on the clock now.
func New(st store.Store, db *records.DB, now func() time.Time) *Registry {
	return &Registry{store: st, db: db, now: now}
}

// check validates the arguments of the lease operations.
func check(name, holder string, term time.Duration, withTerm bool) error {
	var vs apierr.Violations
	switch {
	case name == "":
		vs.Add("name", "is required")
	default:
		vs.CheckText("name", name, MaxName)
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
				vs.Add("name", "may hold only a-z, 0-9, '_', '-' and '.'")
				break
			}
		}
	}
	if holder == "" {
		vs.Add("holder", "is required")
	} else {
		vs.CheckText("holder", holder, MaxHolder)
	}
	if withTerm && (term < time.Second || term > MaxTerm) {
		vs.Add("term", "must be between 1s and %s, got %s", MaxTerm, term)
	}
	return vs.Err()
}

func decode(rec store.Record) (doc, error) {
	var d doc
	if err := json.Unmarshal(rec.Data, &d); err != nil {
		return d, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	return d, nil
}

func encode(d doc, rec *store.Record) error {
	b, err := json.Marshal(d)
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "internal error")
	}
	rec.Data = b
	return nil
}

// errHeld is what the update of Acquire returns when another holder's
// term has not ended: nothing is written.
var errHeld = errors.New("lease held")

// Acquire takes or renews the lease name for holder, for term from now
// (between 1s and [MaxTerm]), unless another holder's term has not
// ended: then it returns the lease as it stands, Held false. A holder
// renews by calling it again before its term ends; the lease keeps its
// Since. name is at most [MaxName] bytes of a-z, 0-9, '_', '-' and '.';
// holder at most [MaxHolder] bytes of UTF-8.
func (r *Registry) Acquire(ctx context.Context, name, holder string, term time.Duration) (*Lease, error) {
	if err := check(name, holder, term, true); err != nil {
		return nil, err
	}
	id := prefix + name
	for range 3 {
		now := r.now()
		took := doc{Holder: holder, Since: now.UTC(), ExpiresAt: now.UTC().Add(term)}
		rec := store.Record{Kind: kind.StoreKind, AccountID: account, ID: id}
		if err := encode(took, &rec); err != nil {
			return nil, err
		}
		err := r.store.Create(ctx, rec)
		if err == nil {
			return &Lease{Name: name, Holder: holder, Held: true, ExpiresAt: took.ExpiresAt, Since: took.Since}, nil
		}
		var dup *store.DuplicateError
		if !errors.As(err, &dup) {
			return nil, r.db.StoreErr(err, kind, id)
		}
		var seen doc
		_, err = r.store.Update(ctx, kind.StoreKind, account, id, func(rec *store.Record) error {
			d, err := decode(*rec)
			if err != nil {
				return err
			}
			seen = d
			if d.Holder != holder && now.Before(d.ExpiresAt) {
				return errHeld
			}
			if d.Holder == holder && now.Before(d.ExpiresAt) {
				took.Since = d.Since // a renewal
			}
			seen = took
			return encode(took, rec)
		})
		switch {
		case err == nil:
			return &Lease{Name: name, Holder: holder, Held: true, ExpiresAt: seen.ExpiresAt, Since: seen.Since}, nil
		case errors.Is(err, errHeld):
			return &Lease{Name: name, Holder: seen.Holder, ExpiresAt: seen.ExpiresAt, Since: seen.Since}, nil
		case errors.Is(err, apierr.ErrNotFound):
			continue // released between the create and the update: try again
		default:
			return nil, r.db.StoreErr(err, kind, id)
		}
	}
	return nil, apierr.New(apierr.Conflict, "lease %s changes too fast to take; try again", name)
}

// Release lets lease name go if holder holds it, so that the next
// [Registry.Acquire] of another holder takes it at once; otherwise it
// does nothing.
func (r *Registry) Release(ctx context.Context, name, holder string) error {
	if err := check(name, holder, 0, false); err != nil {
		return err
	}
	id := prefix + name
	rec, err := r.store.Get(ctx, kind.StoreKind, account, id)
	if errors.Is(err, apierr.ErrNotFound) {
		return nil
	}
	if err != nil {
		return r.db.StoreErr(err, kind, id)
	}
	d, err := decode(rec)
	if err != nil {
		return err
	}
	if d.Holder != holder {
		return nil // not ours (any more): nothing to let go
	}
	err = r.store.DeleteIf(ctx, kind.StoreKind, account, id, rec.Version, store.Note{})
	var ve *store.VersionError
	if err == nil || errors.Is(err, apierr.ErrNotFound) || errors.As(err, &ve) {
		return nil // gone, or renewed or taken meanwhile: no longer ours to release
	}
	return r.db.StoreErr(err, kind, id)
}
