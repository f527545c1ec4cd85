package credentials_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/credentials"
)

const testID = "cr_2BjSiaW8q7lZoHf5oy7tzj3cMqA"

func TestNewToken(t *testing.T) {
	seen := make(map[string]bool)
	for range 100 {
		tok, err := credentials.NewToken(testID)
		if err != nil {
			t.Fatal(err)
		}
		want := credentials.TokenPrefix + strings.TrimPrefix(testID, credentials.IDPrefix) + "_"
		if len(tok) != credentials.TokenLen || !strings.HasPrefix(tok, want) {
			t.Fatalf("token %q: want %d bytes starting with %q", tok, credentials.TokenLen, want)
		}
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, want))
		if err != nil || len(b) != 32 {
			t.Fatalf("token %q does not carry 32 base64url bytes: %v", tok, err)
		}
		if !credentials.WellFormedToken(tok) {
			t.Fatalf("WellFormedToken(%q) = false", tok)
		}
		if id, ok := credentials.TokenCredentialID(tok); !ok || id != testID {
			t.Fatalf("TokenCredentialID(%q) = %q, %v; want %q", tok, id, ok, testID)
		}
		if seen[tok] {
			t.Fatalf("token %q returned twice", tok)
		}
		seen[tok] = true
	}
}

func TestNewTokenRefusesOtherIDs(t *testing.T) {
	for _, id := range []string{"", "cr_", "cr_short", "usr_2BjSiaW8q7lZoHf5oy7tzj3cMqA", testID + "A", "cr_2BjSiaW8q7lZoHf5oy7tzj3cMq_"} {
		if tok, err := credentials.NewToken(id); err == nil || tok != "" {
			t.Errorf("NewToken(%q) = %q, %v; want an error", id, tok, err)
		}
	}
}

func TestWellFormedToken(t *testing.T) {
	secret := strings.Repeat("A", 42) + "E"
	legacy := credentials.TokenPrefix + secret
	good := credentials.TokenPrefix + strings.TrimPrefix(testID, credentials.IDPrefix) + "_" + secret
	tests := []struct {
		name string
		tok  string
		want bool
		id   string // TokenCredentialID's
	}{
		{name: "good", tok: good, want: true, id: testID},
		{name: "legacy", tok: legacy, want: true},
		{name: "empty", tok: "", want: false},
		{name: "no prefix", tok: "xxxx" + good[4:], want: false},
		{name: "legacy without prefix", tok: "xxxx" + legacy[4:], want: false},
		{name: "short", tok: good[:len(good)-1], want: false},
		{name: "long", tok: good + "A", want: false},
		{name: "legacy short", tok: legacy[:len(legacy)-1], want: false},
		{name: "legacy long", tok: legacy + "A", want: false},
		{name: "padding", tok: good[:len(good)-1] + "=", want: false},
		{name: "standard alphabet", tok: good[:len(good)-1] + "+", want: false},
		{name: "non-canonical last char", tok: good[:len(good)-1] + "B", want: false},
		{name: "legacy non-canonical last char", tok: legacy[:len(legacy)-1] + "B", want: false},
		{name: "no separator", tok: strings.Replace(good, "_", "A", 2)[:len(good)], want: false},
		{name: "ID not base62", tok: strings.Replace(good, "2Bj", "2-j", 1), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := credentials.WellFormedToken(tt.tok); got != tt.want {
				t.Fatalf("WellFormedToken(%q) = %v, want %v", tt.tok, got, tt.want)
			}
			id, ok := credentials.TokenCredentialID(tt.tok)
			if id != tt.id || ok != (tt.id != "") {
				t.Fatalf("TokenCredentialID(%q) = %q, %v; want %q", tt.tok, id, ok, tt.id)
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
		{name: "legacy token length", tok: "ept_" + strings.Repeat("A", 43), want: sha256Hex("ept_" + strings.Repeat("A", 43))},
		{name: "token length", tok: strings.Repeat("A", credentials.TokenLen), want: sha256Hex(strings.Repeat("A", credentials.TokenLen))},
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
