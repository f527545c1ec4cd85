// Package seal encrypts secrets at rest with AES-256-GCM (crypto/aes,
// crypto/cipher) under a key the host supplies.
//
// A sealed value is: one version byte (1), a 4-byte key ID (the first
// bytes of SHA-256 of the key, so that a value sealed under another key is
// refused with a clear error rather than a bare authentication failure),
// a 12-byte random nonce, then the ciphertext and its 16-byte tag. The
// caller's additional data (for a certificate's key: its account and ID)
// is authenticated, so a sealed value moved to another record does not
// open.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// KeySize is the size of a sealing key in bytes (AES-256).
const KeySize = 32

const (
	version   = 1
	idSize    = 4
	nonceSize = 12
	overhead  = 1 + idSize + nonceSize + 16
)

// Errors of [Sealer.Open].
var (
	// ErrOtherKey is returned for a value sealed under another key.
	ErrOtherKey = errors.New("sealed under another key")
	// ErrCorrupt is returned for a value that is malformed, was changed,
	// or belongs to other additional data.
	ErrCorrupt = errors.New("sealed value is corrupt or belongs elsewhere")
)

// Sealer seals and opens values under one key. It is safe for concurrent
// use.
type Sealer struct {
	aead cipher.AEAD
	id   [idSize]byte
	prk  []byte // HKDF-Extract of the key, for Derive
}

// New returns a Sealer for key, which must be [KeySize] bytes.
func New(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("a sealing key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	prk, err := hkdf.Extract(sha256.New, key, []byte("edgeplane seal derive"))
	if err != nil {
		return nil, err
	}
	s := &Sealer{aead: aead, prk: prk}
	sum := sha256.Sum256(key)
	copy(s.id[:], sum[:idSize])
	return s, nil
}

// NewKey returns a random key of [KeySize] bytes.
func NewKey() []byte {
	key := make([]byte, KeySize)
	rand.Read(key) // never fails (crypto/rand)
	return key
}

// Seal encrypts plaintext, authenticating aad with it.
func (s *Sealer) Seal(plaintext, aad []byte) []byte {
	out := make([]byte, 1+idSize+nonceSize, overhead+len(plaintext))
	out[0] = version
	copy(out[1:], s.id[:])
	nonce := out[1+idSize:]
	rand.Read(nonce)
	return s.aead.Seal(out, nonce, plaintext, aad)
}

// Derive returns n bytes derived from the key for purpose (HKDF-SHA256,
// RFC 5869): the same key and purpose give the same bytes, which tell
// nothing of the key or of another purpose's bytes. n is at most 8160.
func (s *Sealer) Derive(purpose string, n int) []byte {
	b, err := hkdf.Expand(sha256.New, s.prk, purpose, n)
	if err != nil {
		panic("seal: Derive: " + err.Error()) // only for n beyond HKDF's bound, a caller's bug
	}
	return b
}

// Open decrypts a value made by Seal with the same aad.
func (s *Sealer) Open(sealed, aad []byte) ([]byte, error) {
	if len(sealed) < overhead || sealed[0] != version {
		return nil, ErrCorrupt
	}
	if [idSize]byte(sealed[1:1+idSize]) != s.id {
		return nil, ErrOtherKey
	}
	nonce := sealed[1+idSize : 1+idSize+nonceSize]
	plain, err := s.aead.Open(nil, nonce, sealed[1+idSize+nonceSize:], aad)
	if err != nil {
		return nil, ErrCorrupt
	}
	return plain, nil
}
