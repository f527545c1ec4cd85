package records

import (
	"context"
	"errors"
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
	for range maxSlotAttempts {
		recs, err := db.Store.List(ctx, store.Query{Kind: k.StoreKind, AccountID: p.AccountID, ParentID: parentID, Limit: capacity})
		if err != nil {
			return db.StoreErr(err, k, "")
		}
		used := make(map[string]bool, len(recs))
		for _, rec := range recs {
			for _, key := range rec.Keys {
				used[key] = true
			}
		}
		slot := ""
		for n := range capacity {
			if key := SlotKey(k.StoreKind, p.AccountID, parentID, n); !used[key] {
				slot = key
				break
			}
		}
		if slot == "" {
			return full()
		}
		err = Create(ctx, db, p, f, id, parentID, v, refs, append(keys[:len(keys):len(keys)], slot)...)
		var dup *store.DuplicateError
		if errors.As(err, &dup) && dup.Key == slot {
			continue // a concurrent create took the slot: look again
		}
		return err
	}
	if k.Parent == nil {
		return apierr.New(apierr.Conflict, "the account's %ss are changing too fast to add to; try again", k.Noun)
	}
	return apierr.New(apierr.Conflict, "%s %s is changing too fast to add to; try again", k.Parent.Noun, parentID)
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
