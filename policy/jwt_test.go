package policy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// jwksServer serves a JWKS of the public halves of its keys, counting
// fetches; tests rotate keys by replacing them.
type jwksServer struct {
	*httptest.Server
	keys    atomic.Pointer[[]jwk.Key] // private keys
	fetches atomic.Int64
	fail    atomic.Bool
}

func newKey(t testing.TB, kid string) jwk.Key {
	t.Helper()
	raw, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := jwk.Import(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Set(jwk.KeyIDKey, kid); err != nil {
		t.Fatal(err)
	}
	if err := k.Set(jwk.AlgorithmKey, jwa.ES256()); err != nil {
		t.Fatal(err)
	}
	return k
}

func newJWKSServer(t testing.TB, keys ...jwk.Key) *jwksServer {
	s := &jwksServer{}
	s.keys.Store(&keys)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		if s.fail.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		set := jwk.NewSet()
		for _, k := range *s.keys.Load() {
			pub, err := k.PublicKey()
			if err != nil {
				t.Error(err)
				return
			}
			_ = set.AddKey(pub)
		}
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(s.Close)
	return s
}

// token signs a token with key; claims add to iss "https://issuer", aud
// "api", sub "alice", exp t1+1h.
func token(t testing.TB, key jwk.Key, claims map[string]any) string {
	t.Helper()
	b := jwt.NewBuilder().Issuer("https://issuer").Audience([]string{"api"}).Subject("alice").
		IssuedAt(t1.Add(-time.Minute)).Expiration(t1.Add(time.Hour))
	for k, v := range claims {
		b = b.Claim(k, v)
	}
	tok, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.ES256(), key))
	if err != nil {
		t.Fatal(err)
	}
	return string(signed)
}

func jwtDoc(url, extra string) string {
	cfg := `{"issuer":"https://issuer","audiences":["api","other"],"jwks_url":"` + url + `","vars":{"user":"sub","tenant":"tid","roles":"roles"}`
	if extra != "" {
		cfg += "," + extra
	}
	return `{"on_http_request":[{"actions":[{"type":"jwt-validation","config":` + cfg + `}}]},
	  {"actions":[{"type":"log","config":{"metadata":{"valid":"${string(actions.service.jwt_validation.valid)}","sub":"${actions.service.jwt_validation.subject}",
	    "err":"${actions.service.jwt_validation.error}","vars":"${has(vars.user) ? vars.user + '|' + vars.tenant + '|' + vars.roles : '-'}"}}}]}]}`
}

// TestJWTValidation checks jwt-validation (issue 19, item 8) against an
// httptest JWKS server: valid tokens, every way one is refused, enforced
// and in shadow mode.
func TestJWTValidation(t *testing.T) {
	key := newKey(t, "k1")
	other := newKey(t, "k1") // same kid, another key: a forged signature
	srv := newJWKSServer(t, key)
	good := token(t, key, map[string]any{"tid": "acme", "roles": []string{"a", "b"}})
	tests := []struct {
		name   string
		header string
		err    string // "" when valid
	}{
		{"valid", "Bearer " + good, ""},
		{"scheme case-insensitive", "bearer " + good, ""},
		{"missing", "", "no bearer token"},
		{"basic", "Basic YTpi", "no bearer token"},
		{"garbage", "Bearer abc.def.ghi", "invalid token"},
		{"forged", "Bearer " + token(t, other, nil), "invalid token"},
		{"expired", "Bearer " + token(t, key, map[string]any{"exp": t1.Add(-time.Hour).Unix()}), "invalid token"},
		{"not yet valid", "Bearer " + token(t, key, map[string]any{"nbf": t1.Add(time.Hour).Unix()}), "invalid token"},
		{"wrong issuer", "Bearer " + token(t, key, map[string]any{"iss": "https://evil"}), "invalid token: wrong issuer"},
		{"wrong audience", "Bearer " + token(t, key, map[string]any{"aud": []string{"web"}}), "invalid token: wrong audience"},
		{"too long", "Bearer " + good + strings.Repeat("A", MaxTokenBytes), "no bearer token"},
	}
	for _, enforce := range []bool{true, false} {
		for _, tt := range tests {
			name := tt.name
			extra := ""
			if !enforce {
				name, extra = name+"/shadow", `"enforce":false`
			}
			t.Run(name, func(t *testing.T) {
				e, sink := newTestEngine(t, Options{})
				p := mustCompile(t, e, jwtDoc(srv.URL, extra), CompileOptions{})
				req := testRequest()
				if tt.header != "" {
					req.Header["Authorization"] = []string{tt.header}
				}
				res := p.Inbound(req)
				if tt.err != "" && enforce {
					if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
						t.Fatalf("result %+v, want 401", res)
					}
					return
				}
				if res.Verdict != Continue || len(sink.logs) != 1 {
					t.Fatalf("result %+v, logs %+v, errors %v", res, sink.logs, sink.errors())
				}
				md := sink.logs[0].Metadata
				if tt.err == "" {
					if md["valid"] != "true" || md["sub"] != "alice" || md["err"] != "" || md["vars"] != `alice|acme|["a","b"]` {
						t.Fatalf("metadata %v", md)
					}
					return
				}
				if md["valid"] != "false" || md["err"] != tt.err || md["vars"] != "-" {
					t.Fatalf("metadata %v, want error %q", md, tt.err)
				}
			})
		}
	}
}

// TestJWKSCache checks the key set's caching by the Engine's clock: one
// fetch for many requests, a refresh after JWKSRefresh, a rotated key
// fetched at once but at most every JWKSMinRefetch, and a failed fetch
// keeping the previous keys.
func TestJWKSCache(t *testing.T) {
	k1, k2 := newKey(t, "k1"), newKey(t, "k2")
	srv := newJWKSServer(t, k1)
	now := t1
	e, sink := newTestEngine(t, Options{Clock: func() time.Time { return now }})
	p := mustCompile(t, e, `{"on_http_request":[{"actions":[{"type":"jwt-validation","config":{"issuer":"https://issuer","jwks_url":"`+srv.URL+`"}}]}]}`, CompileOptions{})
	call := func(key jwk.Key, at time.Time) Verdict {
		now = at
		req := testRequest()
		req.Time = at
		req.Header["Authorization"] = []string{"Bearer " + token(t, key, map[string]any{"exp": at.Add(time.Hour).Unix()})}
		return p.Inbound(req).Verdict
	}
	for i := range 3 {
		if v := call(k1, t1.Add(time.Duration(i)*time.Second)); v != Continue {
			t.Fatalf("request %d: %v", i, v)
		}
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches for 3 requests, want 1", n)
	}
	// Rotation: k2 is unknown, so the set is fetched again at once.
	srv.keys.Store(&[]jwk.Key{k1, k2})
	if v := call(k2, t1.Add(40*time.Second)); v != Continue || srv.fetches.Load() != 2 {
		t.Fatalf("rotated key: %v after %d fetches", v, srv.fetches.Load())
	}
	// A token of an unknown key cannot make fetches more often than
	// JWKSMinRefetch.
	k3 := newKey(t, "k3")
	call(k3, t1.Add(41*time.Second))
	call(k3, t1.Add(42*time.Second))
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2 (the last was less than JWKSMinRefetch ago)", n)
	}
	// After JWKSRefresh a failing server leaves the previous keys in use.
	srv.fail.Store(true)
	if v := call(k2, t1.Add(40*time.Second+JWKSRefresh)); v != Continue || srv.fetches.Load() != 3 {
		t.Fatalf("with the server down: %v after %d fetches", v, srv.fetches.Load())
	}
	if errs := sink.errors(); len(errs) == 0 || !strings.Contains(errs[len(errs)-1], "fetching the JWKS") {
		t.Fatalf("sink errors %v", errs)
	}
}

// TestJWTKeysUnavailable checks that without any key set requests fail
// closed.
func TestJWTKeysUnavailable(t *testing.T) {
	k := newKey(t, "k1")
	srv := newJWKSServer(t, k)
	srv.fail.Store(true)
	e, sink := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"on_http_request":[{"actions":[{"type":"jwt-validation","config":{"issuer":"https://issuer","jwks_url":"`+srv.URL+`"}}]}]}`, CompileOptions{})
	req := testRequest()
	req.Header["Authorization"] = []string{"Bearer " + token(t, k, nil)}
	if res := p.Inbound(req); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("result %+v", res)
	}
	if len(sink.errors()) != 1 {
		t.Fatalf("errors %v", sink.errors())
	}
}

// TestJWTKeyedRateLimit is the README's example: a rate limit keyed by a
// claim of the validated token.
func TestJWTKeyedRateLimit(t *testing.T) {
	k := newKey(t, "k1")
	srv := newJWKSServer(t, k)
	e, _ := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"on_http_request":[{"actions":[
	  {"type":"jwt-validation","config":{"issuer":"https://issuer","audiences":["api"],"jwks_url":"`+srv.URL+`","vars":{"tenant":"tid"}}},
	  {"type":"rate-limit","config":{"name":"per-tenant","algorithm":"sliding_window","capacity":1,"rate":"60s","bucket_key":["vars.tenant"],"headers":"ietf"}}]}]}`, CompileOptions{})
	mk := func(tenant string) *Request {
		r := testRequest()
		r.Header["Authorization"] = []string{"Bearer " + token(t, k, map[string]any{"tid": tenant})}
		return r
	}
	if res := p.Inbound(mk("acme")); res.Verdict != Continue || res.ResponseHeader.Get("RateLimit") != `"per-tenant";r=0;t=60` {
		t.Fatalf("acme's first request: %+v", res)
	}
	if p.Inbound(mk("globex")).Verdict != Continue {
		t.Fatal("globex's first request refused")
	}
	if res := p.Inbound(mk("acme")); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("acme's second request: %+v", res)
	}
}

func TestJWTCompileErrors(t *testing.T) {
	const at = `on_http_request[0].actions[0].config.`
	tests := []struct{ name, cfg, want string }{
		{"no issuer", `{"jwks_url":"https://x/jwks"}`, at + "issuer: is required"},
		{"no jwks_url", `{"issuer":"i"}`, at + "jwks_url: is required"},
		{"relative jwks_url", `{"issuer":"i","jwks_url":"/jwks"}`, at + "jwks_url: must be an absolute http or https URL"},
		{"ftp jwks_url", `{"issuer":"i","jwks_url":"ftp://x/jwks"}`, at + "jwks_url: must be an absolute http or https URL"},
		{"empty audience", `{"issuer":"i","jwks_url":"https://x/","audiences":[""]}`, at + "audiences[0]: must be 1 to 1024 bytes"},
		{"bad var name", `{"issuer":"i","jwks_url":"https://x/","vars":{"1a":"sub"}}`, at + `vars["1a"]: invalid variable name`},
		{"empty claim", `{"issuer":"i","jwks_url":"https://x/","vars":{"a":""}}`, at + `vars["a"]: must name a claim`},
		{"unknown field", `{"issuer":"i","jwks_url":"https://x/","alg":"none"}`, at + `alg: unknown field`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newTestEngine(t, Options{})
			_, err := e.CompileJSON([]byte(`{"on_http_request":[{"actions":[{"type":"jwt-validation","config":`+tt.cfg+`}]}]}`), CompileOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
	e, _ := newTestEngine(t, Options{})
	_, err := e.CompileJSON([]byte(`{"on_http_request":[{"expressions":["vars.tenant == 'a'"],"actions":[{"type":"deny"}]},
	  {"actions":[{"type":"jwt-validation","config":{"issuer":"i","jwks_url":"https://x/","vars":{"tenant":"tid"}}}]}]}`), CompileOptions{})
	if err == nil || !strings.Contains(err.Error(), "vars.tenant is not set by a set-vars or jwt-validation action before this point") {
		t.Fatalf("reading a claim var before the action: %v", err)
	}
}
