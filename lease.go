package edgeplane

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

// Leases elect one replica of a store for work that must run once
// (ordering certificates, delivering events): every replica that can do
// the work asks for the lease of its name ([Host.AcquireLease]) every so
// often; one holds it until it lets it go ([Host.ReleaseLease]) or stops
// renewing it, and then the next to ask takes it. A holder must stop the
// work once it has not renewed its lease for the lease's term: the term
// is the longest two replicas may both believe they hold it, measured on
// their own clocks, so it should exceed the renewal interval by more
// than the clocks may drift.
//
// Leases are the Service's own records (an internal kind, stored under
// the pseudo-account leaseAccount, one record per name): the API does
// not show them and they report no events.

const (
	// kindLease is the store kind of leases.
	kindLease = kinds.Lease
	// leaseAccount is the account ID every lease is stored under.
	leaseAccount = "lease"
	// leasePrefix starts the record ID of a lease; its name follows.
	leasePrefix = "lease_"
	// MaxLeaseName is the longest lease name, in bytes.
	MaxLeaseName = 64
	// MaxLeaseHolder is the longest holder name, in bytes.
	MaxLeaseHolder = 128
	// MaxLeaseTerm is the longest term of a lease.
	MaxLeaseTerm = 24 * time.Hour
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

// leaseDoc is the stored form of a lease.
type leaseDoc struct {
	Holder    string    `json:"holder"`
	Since     time.Time `json:"since"`
	ExpiresAt time.Time `json:"expires_at"`
}

// leaseKind is the identity of leases for the store's errors; leases are
// not an API kind.
var leaseKind = &records.Kind{StoreKind: kindLease, Prefix: leasePrefix, Noun: "lease"}

// checkLease validates the arguments of the lease operations.
func checkLease(name, holder string, term time.Duration, withTerm bool) error {
	var vs apierr.Violations
	switch {
	case name == "":
		vs.Add("name", "is required")
	default:
		vs.CheckText("name", name, MaxLeaseName)
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
		vs.CheckText("holder", holder, MaxLeaseHolder)
	}
	if withTerm && (term < time.Second || term > MaxLeaseTerm) {
		vs.Add("term", "must be between 1s and %s, got %s", MaxLeaseTerm, term)
	}
	return vs.Err()
}

func decodeLease(rec store.Record) (leaseDoc, error) {
	var d leaseDoc
	if err := json.Unmarshal(rec.Data, &d); err != nil {
		return d, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	return d, nil
}

func encodeLease(d leaseDoc, rec *store.Record) error {
	b, err := json.Marshal(d)
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "internal error")
	}
	rec.Data = b
	return nil
}

// errLeaseHeld is what the update of acquireLease returns when another
// holder's term has not ended: nothing is written.
var errLeaseHeld = errors.New("lease held")

// acquireLease is [Host.AcquireLease].
func (s *Service) acquireLease(ctx context.Context, name, holder string, term time.Duration) (*Lease, error) {
	if err := checkLease(name, holder, term, true); err != nil {
		return nil, err
	}
	id := leasePrefix + name
	for range 3 {
		now := s.now()
		took := leaseDoc{Holder: holder, Since: now.UTC(), ExpiresAt: now.UTC().Add(term)}
		rec := store.Record{Kind: kindLease, AccountID: leaseAccount, ID: id}
		if err := encodeLease(took, &rec); err != nil {
			return nil, err
		}
		err := s.store.Create(ctx, rec)
		if err == nil {
			return &Lease{Name: name, Holder: holder, Held: true, ExpiresAt: took.ExpiresAt, Since: took.Since}, nil
		}
		var dup *store.DuplicateError
		if !errors.As(err, &dup) {
			return nil, s.db.StoreErr(err, leaseKind, id)
		}
		var seen leaseDoc
		_, err = s.store.Update(ctx, kindLease, leaseAccount, id, func(rec *store.Record) error {
			d, err := decodeLease(*rec)
			if err != nil {
				return err
			}
			seen = d
			if d.Holder != holder && now.Before(d.ExpiresAt) {
				return errLeaseHeld
			}
			if d.Holder == holder && now.Before(d.ExpiresAt) {
				took.Since = d.Since // a renewal
			}
			seen = took
			return encodeLease(took, rec)
		})
		switch {
		case err == nil:
			return &Lease{Name: name, Holder: holder, Held: true, ExpiresAt: seen.ExpiresAt, Since: seen.Since}, nil
		case errors.Is(err, errLeaseHeld):
			return &Lease{Name: name, Holder: seen.Holder, ExpiresAt: seen.ExpiresAt, Since: seen.Since}, nil
		case errors.Is(err, apierr.ErrNotFound):
			continue // released between the create and the update: try again
		default:
			return nil, s.db.StoreErr(err, leaseKind, id)
		}
	}
	return nil, apierr.New(apierr.Conflict, "lease %s changes too fast to take; try again", name)
}

// releaseLease is [Host.ReleaseLease].
func (s *Service) releaseLease(ctx context.Context, name, holder string) error {
	if err := checkLease(name, holder, 0, false); err != nil {
		return err
	}
	id := leasePrefix + name
	rec, err := s.store.Get(ctx, kindLease, leaseAccount, id)
	if errors.Is(err, apierr.ErrNotFound) {
		return nil
	}
	if err != nil {
		return s.db.StoreErr(err, leaseKind, id)
	}
	d, err := decodeLease(rec)
	if err != nil {
		return err
	}
	if d.Holder != holder {
		return nil // not ours (any more): nothing to let go
	}
	err = s.store.DeleteIf(ctx, kindLease, leaseAccount, id, rec.Version, store.Note{})
	var ve *store.VersionError
	if err == nil || errors.Is(err, apierr.ErrNotFound) || errors.As(err, &ve) {
		return nil // gone, or renewed or taken meanwhile: no longer ours to release
	}
	return s.db.StoreErr(err, leaseKind, id)
}
