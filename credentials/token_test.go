package credentials_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/credentials"
)

func TestNewToken(t *testing.T) {
	seen := make(map[string]bool)
	for range 100 {
		tok, err := credentials.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if len(tok) != credentials.TokenLen || !strings.HasPrefix(tok, credentials.TokenPrefix) {
			t.Fatalf("token %q: want %d bytes starting with %q", tok, credentials.TokenLen, credentials.TokenPrefix)
		}
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, credentials.TokenPrefix))
		if err != nil || len(b) != 32 {
			t.Fatalf("token %q does not carry 32 base64url bytes: %v", tok, err)
		}
		if !credentials.WellFormedToken(tok) {
			t.Fatalf("WellFormedToken(%q) = false", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q returned twice", tok)
		}
		seen[tok] = true
	}
}

func TestWellFormedToken(t *testing.T) {
	good := credentials.TokenPrefix + strings.Repeat("A", 42) + "E"
	tests := []struct {
		name string
		tok  string
		want bool
	}{
		{name: "good", tok: good, want: true},
		{name: "empty", tok: "", want: false},
		{name: "no prefix", tok: "xxxx" + good[4:], want: false},
		{name: "short", tok: good[:len(good)-1], want: false},
		{name: "long", tok: good + "A", want: false},
		{name: "padding", tok: good[:len(good)-1] + "=", want: false},
		{name: "standard alphabet", tok: good[:len(good)-1] + "+", want: false},
		{name: "non-canonical last char", tok: good[:len(good)-1] + "B", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := credentials.WellFormedToken(tt.tok); got != tt.want {
				t.Fatalf("WellFormedToken(%q) = %v, want %v", tt.tok, got, tt.want)
			}
		})
	}
}

func TestHashToken(t *testing.T) {
	tests := []struct {
		name, tok, want string
	}{
		{name: "empty", tok: "", want: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{name: "abc", tok: "abc", want: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		// A token's length: longer than the 32 bytes a conversion to
		// []byte may keep on the stack.
		{name: "token length", tok: "ept_" + strings.Repeat("A", 43), want: sha256Hex("ept_" + strings.Repeat("A", 43))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := credentials.HashToken(tt.tok); got != tt.want {
				t.Fatalf("HashToken(%q) = %s, want %s", tt.tok, got, tt.want)
			}
			if got := string(credentials.AppendTokenHash([]byte("key:"), tt.tok)); got != "key:"+tt.want {
				t.Fatalf("AppendTokenHash(key:, %q) = %s, want key:%s", tt.tok, got, tt.want)
			}
		})
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
