package acmestate_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/internal/acmestate"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/seal"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// clock is a fake clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newState(t *testing.T) (*acmestate.State, store.Store, *seal.Sealer, *clock) {
	t.Helper()
	st := memstore.New()
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	log := slog.New(slog.DiscardHandler)
	db := &records.DB{Store: st, Log: log, Now: c.now, Sealer: sealer}
	return acmestate.New(st, db, sealer, c.now, log), st, sealer, c
}

// hashID is the records' IDs as stored before the move: prefix and the
// first 16 bytes of the SHA-256 of each part followed by a zero byte, in
// hex.
func hashID(prefix string, parts ...string) string {
	var b []byte
	for _, p := range parts {
		b = append(append(b, p...), 0)
	}
	sum := sha256.Sum256(b)
	return prefix + hex.EncodeToString(sum[:16])
}

// TestStoredForms: the records keep the IDs, account, index and
// document they had in the root package, so that a store written before
// reads the same.
func TestStoredForms(t *testing.T) {
	ctx := context.Background()
	s, st, sealer, c := newState(t)

	exp := c.t.Add(time.Minute)
	if err := s.PutChallenge(ctx, domains.ACMEChallenge{Type: domains.ChallengeHTTP01, Name: "a.example.com", Token: "tok", KeyAuthorization: "tok.thumb", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	id := hashID("acmech_", domains.ChallengeHTTP01, "a.example.com", "tok")
	rec, err := st.Get(ctx, kinds.ACMEChallenge, "acme", id)
	if err != nil {
		t.Fatalf("the challenge is not stored as %s under acme: %v", id, err)
	}
	if want := `{"type":"http-01","name":"a.example.com","token":"tok","key_authorization":"tok.thumb","expires_at":"2030-01-02T03:05:05Z"}`; string(rec.Data) != want {
		t.Errorf("challenge document %s; want %s", rec.Data, want)
	}
	if len(rec.Indexes) != 1 || rec.Indexes[0] != (store.IndexEntry{Name: "acme_challenge_end", Value: store.IndexTime(exp)}) {
		t.Errorf("challenge indexes %v", rec.Indexes)
	}

	key, err := s.AccountKey(ctx, "https://ca.example/dir", func() ([]byte, error) { return []byte("KEY"), nil })
	if err != nil || string(key) != "KEY" {
		t.Fatalf("AccountKey = %q, %v", key, err)
	}
	id = hashID("acmeacct_", "https://ca.example/dir")
	rec, err = st.Get(ctx, kinds.ACMEAccount, "acme", id)
	if err != nil {
		t.Fatalf("the account key is not stored as %s under acme: %v", id, err)
	}
	var doc struct {
		Directory string    `json:"directory"`
		SealedKey []byte    `json:"sealed_key"`
		CreatedAt time.Time `json:"created_at"`
	}
	if err := json.Unmarshal(rec.Data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Directory != "https://ca.example/dir" || !doc.CreatedAt.Equal(c.t) {
		t.Errorf("account document %s", rec.Data)
	}
	if plain, err := sealer.Open(doc.SealedKey, []byte("acme/"+id)); err != nil || string(plain) != "KEY" {
		t.Errorf("the sealed key opens as %q, %v with its record's additional data", plain, err)
	}
	again, err := s.AccountKey(ctx, "https://ca.example/dir", func() ([]byte, error) { return nil, errors.New("generated again") })
	if err != nil || string(again) != "KEY" {
		t.Errorf("AccountKey again = %q, %v; want the stored key", again, err)
	}
}

// TestChallengeExpiry: a challenge is found until it expires, then not
// found and reaped; one that is not expired is kept.
func TestChallengeExpiry(t *testing.T) {
	ctx := context.Background()
	s, _, _, c := newState(t)
	for _, ch := range []domains.ACMEChallenge{
		{Type: domains.ChallengeDNS01, Name: "_acme-challenge.a.example.com", KeyAuthorization: "digest", ExpiresAt: c.t.Add(time.Minute)},
		{Type: domains.ChallengeTLSALPN01, Name: "a.example.com", KeyAuthorization: "ka", ExpiresAt: c.t.Add(time.Hour)},
	} {
		if err := s.PutChallenge(ctx, ch); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Challenge(ctx, domains.ChallengeDNS01, "_acme-challenge.a.example.com", ""); err != nil || got.KeyAuthorization != "digest" {
		t.Fatalf("Challenge = %+v, %v", got, err)
	}
	c.t = c.t.Add(time.Minute)
	if _, err := s.Challenge(ctx, domains.ChallengeDNS01, "_acme-challenge.a.example.com", ""); !errors.Is(err, apierr.ErrNotFound) {
		t.Fatalf("an expired challenge: %v; want not found", err)
	}
	if n, err := s.ReapChallenges(ctx, 10); err != nil || n != 1 {
		t.Fatalf("ReapChallenges = %d, %v; want 1", n, err)
	}
	if _, err := s.Challenge(ctx, domains.ChallengeTLSALPN01, "a.example.com", ""); err != nil {
		t.Fatalf("the challenge not expired: %v", err)
	}
	if err := s.DeleteChallenge(ctx, domains.ChallengeDNS01, "_acme-challenge.a.example.com", ""); err != nil {
		t.Fatalf("deleting a challenge that is gone: %v; want no error", err)
	}
}
