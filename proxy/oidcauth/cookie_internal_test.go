package oidcauth

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/edgeconfig"
	"golang.org/x/crypto/chacha20poly1305"
)

var internalKey = []byte("0123456789abcdef0123456789abcdef")

// newTestGate returns a Gate for an issuer it never contacts.
func newTestGate(tb testing.TB, edit func(*edgeconfig.OIDC), now func() time.Time) *Gate {
	tb.Helper()
	cfg := &edgeconfig.OIDC{Issuer: "https://idp.example", ClientID: "client", ClientSecret: "secret", CookiePrefix: "service."}
	if edit != nil {
		edit(cfg)
	}
	g, err := New(cfg, Options{Key: internalKey, Scope: "edghts_1/edghtsrt_1", Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

func TestSessionRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    session
	}{
		{"subject only", session{loginAt: 1, lastSeen: 2, subject: "s"}},
		{"all claims", session{loginAt: 1700000000, lastSeen: 1700000100, subject: "user-1", email: "a@b.c", emailVerified: true, name: "Ada Lovelace", preferredUsername: "ada"}},
		{"longest claims", session{subject: strings.Repeat("s", MaxClaimBytes), email: strings.Repeat("e", MaxClaimBytes), name: strings.Repeat("é", MaxClaimBytes/2), preferredUsername: strings.Repeat("p", MaxClaimBytes)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := appendSession(nil, &tc.s)
			got, err := parseSession(b)
			if err != nil || got != tc.s {
				t.Fatalf("parseSession(appendSession(%+v)) = %+v, %v", tc.s, got, err)
			}
			g := newTestGate(t, nil, nil)
			c := g.sessionCookie(httptest.NewRequest("GET", "/", nil), &tc.s, 0)
			if len(c.Value) > MaxCookieBytes {
				t.Errorf("cookie of %d bytes; bound %d", len(c.Value), MaxCookieBytes)
			}
		})
	}
}

func TestParseSessionRefuses(t *testing.T) {
	good := appendSession(nil, &session{loginAt: 1, lastSeen: 2, subject: "s", email: "e"})
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"short", good[:10]},
		{"other version", append([]byte{2}, good[1:]...)},
		{"unknown flag", func() []byte { b := bytes.Clone(good); b[17] = 2; return b }()},
		{"truncated field", good[:len(good)-1]},
		{"trailing byte", append(bytes.Clone(good), 0)},
		{"empty subject", appendSession(nil, &session{})},
		{"control character", appendSession(nil, &session{subject: "a\nb"})},
		{"not UTF-8", appendSession(nil, &session{subject: "a\xffb"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := parseSession(tc.b); err == nil {
				t.Errorf("parseSession accepted %q as %+v", tc.b, s)
			}
		})
	}
}

func TestLoginRoundTrip(t *testing.T) {
	l := login{created: 1700000000, returnTo: "/a/b?c=d"}
	l.state[0], l.nonce[1], l.verifier[31] = 1, 2, 3
	got, err := parseLogin(appendLogin(nil, &l))
	if err != nil || got != l {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, l)
	}
	for _, bad := range []string{"", "x", "//evil.example", "/\\evil", "/a b", "/\x00", strings.Repeat("/", MaxReturnPathBytes+1)} {
		l.returnTo = bad
		if _, err := parseLogin(appendLogin(nil, &l)); err == nil {
			t.Errorf("parseLogin accepted return path %q", bad)
		}
	}
}

func TestSafeReturnPath(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/", true},
		{"/a/b?c=d&e=%2F", true},
		{"", false},
		{"a", false},
		{"//evil.example", false},
		{"/\\evil.example", false},
		{"/a\\b", false},
		{"https://evil.example", false},
		{"/a\tb", false},
		{"/a\nb", false},
		{"/é", false},
		{"/" + strings.Repeat("a", MaxReturnPathBytes-1), true},
		{"/" + strings.Repeat("a", MaxReturnPathBytes), false},
	} {
		if got := safeReturnPath(tc.path); got != tc.want {
			t.Errorf("safeReturnPath(%q) = %v; want %v", tc.path, got, tc.want)
		}
	}
}

// TestSealBinding: a value sealed for one kind or name does not open as
// another, and changing any byte breaks it.
func TestSealBinding(t *testing.T) {
	g := newTestGate(t, nil, nil)
	v := seal(g.aead, adSession, []byte("payload"))
	if p, ok := open(g.aead, adSession, v, nil); !ok || string(p) != "payload" {
		t.Fatalf("open(seal) = %q, %v", p, ok)
	}
	if _, ok := open(g.aead, adLogin, v, nil); ok {
		t.Error("a session value opened as a login cookie")
	}
	g2 := newTestGate(t, func(c *edgeconfig.OIDC) { c.ClientID = "other" }, nil)
	if _, ok := open(g2.aead, adSession, v, nil); ok {
		t.Error("a session value opened under another client's key")
	}
	// Another route with the same secret: its key differs, whatever the
	// additional data.
	g3, err := New(&edgeconfig.OIDC{Issuer: "https://idp.example", ClientID: "client", CookiePrefix: "service."},
		Options{Key: internalKey, Scope: "edghts_1/edghtsrt_2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := open(g3.aead, adSession, v, nil); ok {
		t.Error("a session value opened under another route's key")
	}
}

// FuzzParseSession: the session parser never panics, and what it accepts
// is exactly what the encoder writes for the result.
func FuzzParseSession(f *testing.F) {
	f.Add(appendSession(nil, &session{loginAt: 1, lastSeen: 2, subject: "s"}))
	f.Add(appendSession(nil, &session{loginAt: -5, lastSeen: 1 << 40, subject: "user", email: "a@b", emailVerified: true, name: "N", preferredUsername: "p"}))
	f.Add([]byte{1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseSession(b)
		if err != nil {
			return
		}
		if s.subject == "" {
			t.Fatalf("accepted an empty subject from %q", b)
		}
		if again := appendSession(nil, &s); !bytes.Equal(again, b) {
			t.Fatalf("parse(%q) = %+v re-encodes as %q", b, s, again)
		}
	})
}

// FuzzParseLogin: the login parser never panics, accepts only safe return
// paths, and round-trips what it accepts.
func FuzzParseLogin(f *testing.F) {
	l := login{created: 1, returnTo: "/a?b=c"}
	f.Add(appendLogin(nil, &l))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := parseLogin(b)
		if err != nil {
			return
		}
		if !safeReturnPath(l.returnTo) {
			t.Fatalf("accepted return path %q", l.returnTo)
		}
		if again := appendLogin(nil, &l); !bytes.Equal(again, b) {
			t.Fatalf("parse(%q) re-encodes as %q", b, again)
		}
	})
}

// FuzzCookieHeader: any Cookie header is handled without panic; it never
// yields a session unless it carries a value the Gate sealed, and after
// stripping, none of the Gate's cookies remain.
func FuzzCookieHeader(f *testing.F) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := newTestGate(f, nil, func() time.Time { return now })
	// Sealed with a fixed nonce, so that every fuzzing process has the
	// same value.
	nonce := make([]byte, chacha20poly1305.NonceSizeX)
	plain := appendSession(nil, &session{loginAt: now.Unix(), lastSeen: now.Unix(), subject: "s"})
	good := struct{ Value string }{base64.RawURLEncoding.EncodeToString(g.aead.Seal(nonce, nonce, plain, adSession))}
	f.Add("a=b; " + g.sessionName + "=" + good.Value)
	f.Add(g.sessionName + "=\"" + good.Value + "\"")
	f.Add(g.sessionName + "=" + good.Value[:len(good.Value)-1] + "A")
	f.Add(";;;=;" + g.loginNames[3] + "=x; " + g.sessionName)
	f.Add(g.sessionName + "=" + strings.Repeat("A", 5000))
	f.Fuzz(func(t *testing.T, line string) {
		h := http.Header{"Cookie": {line}}
		s, ok := g.readSession(h, now.Unix())
		if ok && !strings.Contains(line, good.Value) {
			t.Fatalf("a session %+v from a header without the sealed value: %q", s, line)
		}
		g.stripCookies(h)
		eachCookie(h, func(name, _ string) bool {
			if name == g.sessionName || strings.HasPrefix(name, g.loginPrefix) {
				t.Fatalf("cookie %q survived stripping of %q: %q", name, line, h["Cookie"])
			}
			return true
		})
		if _, ok := g.readSession(h, now.Unix()); ok {
			t.Fatalf("a session after stripping %q", line)
		}
	})
}

// BenchmarkCheck is the authenticated request path: the session cookie is
// read, opened, parsed and checked, the Gate's cookie removed from the
// request and the identity headers set. Each iteration restores the
// request's two headers (a slice assignment each).
func BenchmarkCheck(b *testing.B) {
	for _, bc := range []struct {
		name       string
		inactivity time.Duration
		idle       time.Duration // since the cookie's last-seen time
	}{
		{"valid", 0, 0},
		// Last seen two minutes ago, the cookie is rewritten each time.
		{"refresh every request", time.Hour, 2 * time.Minute},
	} {
		b.Run(bc.name, func(b *testing.B) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clock := func() time.Time { return now }
			g := newTestGate(b, func(c *edgeconfig.OIDC) { c.InactivityTimeout = bc.inactivity; c.MaximumDuration = 1000 * time.Hour }, clock)
			s := session{loginAt: now.Unix() - 3600, lastSeen: now.Add(-bc.idle).Unix(), subject: "248289761001", email: "ada@example.com", emailVerified: true, name: "Ada Lovelace", preferredUsername: "ada"}
			r := httptest.NewRequest("GET", "https://app.example/page", nil)
			cookieLine := []string{"theme=dark; " + g.sessionName + "=" + g.sessionCookie(r, &s, now.Unix()).Value}
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				r.Header["Cookie"] = cookieLine
				clear(w.h)
				id, ok := g.Check(w, r)
				if !ok || id.Subject != s.subject {
					b.Fatalf("Check = %+v, %v", id, ok)
				}
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps only its header.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}
