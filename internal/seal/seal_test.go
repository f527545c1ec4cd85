package seal_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/edgeplane/edgeplane/internal/seal"
)

func TestSealOpen(t *testing.T) {
	s, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n")
	aad := []byte("acct_1/cert_1")
	sealed := s.Seal(secret, aad)
	if bytes.Contains(sealed, secret) || bytes.Contains(sealed, []byte("PRIVATE KEY")) {
		t.Fatal("the sealed value shows the secret")
	}
	if again := s.Seal(secret, aad); bytes.Equal(again, sealed) {
		t.Error("two seals of one value are equal: the nonce is not random")
	}
	got, err := s.Open(sealed, aad)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}

	other, _ := seal.New(seal.NewKey())
	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-1] ^= 1
	for name, tc := range map[string]struct {
		s      *seal.Sealer
		sealed []byte
		aad    []byte
		want   error
	}{
		"other key":   {other, sealed, aad, seal.ErrOtherKey},
		"other aad":   {s, sealed, []byte("acct_2/cert_1"), seal.ErrCorrupt},
		"changed":     {s, flipped, aad, seal.ErrCorrupt},
		"truncated":   {s, sealed[:20], aad, seal.ErrCorrupt},
		"empty":       {s, nil, aad, seal.ErrCorrupt},
		"bad version": {s, append([]byte{9}, sealed[1:]...), aad, seal.ErrCorrupt},
	} {
		if _, err := tc.s.Open(tc.sealed, tc.aad); !errors.Is(err, tc.want) {
			t.Errorf("%s: Open = %v, want %v", name, err, tc.want)
		}
	}
	if _, err := seal.New(make([]byte, 16)); err == nil {
		t.Error("a 16-byte key was accepted")
	}
}

func FuzzOpen(f *testing.F) {
	s, _ := seal.New(bytes.Repeat([]byte{7}, seal.KeySize))
	f.Add(s.Seal([]byte("x"), nil), []byte(nil))
	f.Add([]byte{1, 2, 3}, []byte("a"))
	f.Fuzz(func(t *testing.T, sealed, aad []byte) {
		_, _ = s.Open(sealed, aad) // never panics
	})
}

func BenchmarkOpen(b *testing.B) {
	s, _ := seal.New(seal.NewKey())
	sealed := s.Seal(bytes.Repeat([]byte("k"), 1700), []byte("acct/cert"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Open(sealed, []byte("acct/cert")); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDerive(t *testing.T) {
	k1, k2 := seal.NewKey(), seal.NewKey()
	s1, _ := seal.New(k1)
	s1b, _ := seal.New(k1)
	s2, _ := seal.New(k2)
	a := s1.Derive("purpose a", 32)
	if len(a) != 32 {
		t.Fatalf("len %d, want 32", len(a))
	}
	if !bytes.Equal(a, s1b.Derive("purpose a", 32)) {
		t.Error("the same key and purpose derived different bytes")
	}
	if bytes.Equal(a, s1.Derive("purpose b", 32)) {
		t.Error("two purposes derived the same bytes")
	}
	if bytes.Equal(a, s2.Derive("purpose a", 32)) {
		t.Error("two keys derived the same bytes")
	}
	if bytes.Equal(a, k1) {
		t.Error("derived bytes are the key")
	}
}
