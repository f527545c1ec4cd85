package records

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/store"
)

// Caps on the children of one record (the rules of an IP policy, the
// routes of an HTTPS edge) hold atomically under concurrent creates on
// every backend: each child takes one of its parent's numbered slots as a
// unique store key, so two creates that pick the same free slot clash on
// the key and the loser looks again. Deleting a child frees its slot with
// it. Store keys are unique across accounts, so the key names the account
// too: naming another account's parent fails as a missing reference,
// never clashes with that account's slots.

// SlotKey is the store key of slot n of parent's children of kind k.
func SlotKey(k store.Kind, accountID, parentID string, n int) string {
	return "slot/" + string(k) + "/" + accountID + "/" + parentID + "/" + strconv.Itoa(n)
}

// SlotKeys returns the slot keys among a record's keys: an update that
// sets a child's keys keeps them, or the child would lose its slot and
// the cap would no longer hold.
func SlotKeys(keys []string) []string {
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k, "slot/") {
			out = append(out, k)
		}
	}
	return out
}

// maxSlotAttempts bounds how often a create looks for a free slot again
// after losing one to a concurrent create.
const maxSlotAttempts = 8

// CreateInSlot stores v as a child of parentID (form f, with the
// references refs and the lookup keys keys) in the lowest free of
// capacity slots. When every slot is
// taken it returns full(); other errors are create's.
func CreateInSlot[M any](ctx context.Context, db *DB, p identity.Principal, f Form[M], id, parentID string, v *M, refs []string, capacity int, full func() error, keys ...string) error {
	k := f.Kind
	err := CreateCapped(ctx, db.Store, []Cap{{Kind: k.StoreKind, AccountID: p.AccountID, ParentID: parentID, Capacity: capacity, Full: full}},
		func(slots []string) error {
			return Create(ctx, db, p, f, id, parentID, v, refs, append(keys[:len(keys):len(keys)], slots...)...)
		})
	switch {
	case err == nil || !errors.Is(err, errSlotsBusy):
		return db.slotErr(err, k)
	case k.Parent == nil:
		return apierr.New(apierr.Conflict, "the account's %ss are changing too fast to add to; try again", k.Noun)
	default:
		return apierr.New(apierr.Conflict, "%s %s is changing too fast to add to; try again", k.Parent.Noun, parentID)
	}
}

// slotErr is the error of a failed listing of slots as k's (a store
// error is mapped as every read's), or err as it is.
func (db *DB) slotErr(err error, k *Kind) error {
	var le *listError
	if errors.As(err, &le) {
		return db.StoreErr(le.err, k, "")
	}
	return err
}

// Cap bounds the records of one kind that hold its slots: at most
// Capacity of them, counted among the children of ParentID in AccountID
// when ParentID is set, else among all the account's records of Kind.
// Full is the error of a create that finds every slot taken.
type Cap struct {
	Kind      store.Kind
	AccountID string
	ParentID  string
	Capacity  int
	Full      func() error
}

// errSlotsBusy is CreateCapped's error when its creates kept losing the
// slots they picked to concurrent creates.
var errSlotsBusy = apierr.New(apierr.Conflict, "too many records are being created at once to find a free slot; try again")

// listError is a store error of listing the slots in use.
type listError struct{ err error }

func (e *listError) Error() string { return e.err.Error() }
func (e *listError) Unwrap() error { return e.err }

// CreateCapped calls create with the lowest free slot key of each cap
// (in the order of caps), which create adds to the record it writes: the
// store's unique keys make each cap hold under concurrent creates on
// every backend, and deleting the record frees its slots. When a cap has
// no free slot it returns that cap's Full(); when create fails because a
// concurrent create took one of the slots, it looks again (a few times,
// then gives up with a conflict). Other errors are create's, or the
// listing's (wrapped so that [errors.As] finds the store's).
func CreateCapped(ctx context.Context, st store.Store, caps []Cap, create func(slots []string) error) error {
	for range maxSlotAttempts {
		slots := make([]string, 0, len(caps))
		for _, c := range caps {
			key, err := freeSlot(ctx, st, c)
			if err != nil {
				return err
			}
			slots = append(slots, key)
		}
		err := create(slots)
		var dup *store.DuplicateError
		if errors.As(err, &dup) && slices.Contains(slots, dup.Key) {
			continue // a concurrent create took the slot: look again
		}
		return err
	}
	return errSlotsBusy
}

// freeSlot returns the key of c's lowest free slot, or c.Full() when
// every one is taken.
func freeSlot(ctx context.Context, st store.Store, c Cap) (string, error) {
	recs, err := st.List(ctx, store.Query{Kind: c.Kind, AccountID: c.AccountID, ParentID: c.ParentID, Limit: c.Capacity})
	if err != nil {
		return "", &listError{err}
	}
	used := make(map[string]bool, len(recs))
	for _, rec := range recs {
		for _, key := range rec.Keys {
			used[key] = true
		}
	}
	for n := range c.Capacity {
		if key := SlotKey(c.Kind, c.AccountID, c.ParentID, n); !used[key] {
			return key, nil
		}
	}
	return "", c.Full()
}

// ListCapped returns every child of parentID of kind k, or fails when
// there are more than capacity (a store written by other code): a config
// is built from all of them or not at all.
func ListCapped(ctx context.Context, db *DB, accountID string, k *Kind, parentID string, capacity int) ([]store.Record, error) {
	recs, err := db.Store.List(ctx, store.Query{Kind: k.StoreKind, AccountID: accountID, ParentID: parentID, Limit: capacity + 1})
	if err != nil {
		return nil, db.StoreErr(err, k, "")
	}
	if len(recs) > capacity {
		db.Log.Error("a record has more children than its cap; refusing to use it", "kind", string(k.StoreKind), "parent", parentID, "cap", capacity)
		if k.Parent == nil {
			return nil, apierr.New(apierr.FailedPrecondition, "the account has more than %d %ss and they cannot be used; delete some until it has at most %d",
				capacity, k.Noun, capacity)
		}
		return nil, apierr.New(apierr.FailedPrecondition, "%s %s has more than %d %ss and cannot be used; delete some until it has at most %d",
			k.Parent.Noun, parentID, capacity, k.Noun, capacity)
	}
	return recs, nil
}
