package policy

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The tests build keys, key sets and tokens with the standard library
// only, so that they check the action's behaviour whatever JOSE library
// it uses.

// testKey is a signing key and how its JWKS entry presents it.
type testKey struct {
	kid    string
	alg    string // the JWS alg the key signs with
	jwkAlg string // the JWKS entry's alg ("" for none)
	use    string // the JWKS entry's use ("" for none)
	signer crypto.Signer
	secret []byte // an HMAC key (kty oct)
}

// newKey returns a P-256 key whose JWKS entry has kid and alg ES256.
func newKey(t testing.TB, kid string) *testKey {
	t.Helper()
	raw, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &testKey{kid: kid, alg: "ES256", jwkAlg: "ES256", signer: raw}
}

// jsonNull is a claim value that encodes as null.
type jsonNull struct{}

func (jsonNull) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jwk returns the key's public JWKS entry.
func (k *testKey) jwk(t testing.TB) map[string]any {
	t.Helper()
	m := map[string]any{"kid": k.kid}
	if k.jwkAlg != "" {
		m["alg"] = k.jwkAlg
	}
	if k.use != "" {
		m["use"] = k.use
	}
	switch pub := k.public().(type) {
	case *ecdsa.PublicKey:
		b, err := pub.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		n := (len(b) - 1) / 2
		m["kty"], m["crv"], m["x"], m["y"] = "EC", pub.Curve.Params().Name, b64(b[1:1+n]), b64(b[1+n:])
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", b64(pub.N.Bytes()), b64(big.NewInt(int64(pub.E)).Bytes())
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64(pub)
	case nil:
		m["kty"], m["k"] = "oct", b64(k.secret)
	}
	return m
}

func (k *testKey) public() crypto.PublicKey {
	if k.signer == nil {
		return nil
	}
	return k.signer.Public()
}

// sign returns the JWS signature of input with alg.
func (k *testKey) sign(t testing.TB, alg, input string) []byte {
	t.Helper()
	if alg == "none" {
		return nil
	}
	if k.secret != nil {
		m := hmac.New(sha256.New, k.secret)
		m.Write([]byte(input))
		return m.Sum(nil)
	}
	digest := sha256.Sum256([]byte(input))
	var sig []byte
	var err error
	switch s := k.signer.(type) {
	case *ecdsa.PrivateKey:
		var r, ss *big.Int
		r, ss, err = ecdsa.Sign(rand.Reader, s, digest[:])
		sig = append(r.FillBytes(make([]byte, 32)), ss.FillBytes(make([]byte, 32))...)
	case *rsa.PrivateKey:
		if strings.HasPrefix(alg, "PS") {
			sig, err = rsa.SignPSS(rand.Reader, s, crypto.SHA256, digest[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		} else {
			sig, err = rsa.SignPKCS1v15(rand.Reader, s, crypto.SHA256, digest[:])
		}
	case ed25519.PrivateKey:
		sig = ed25519.Sign(s, []byte(input))
	}
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// jwksServer serves a JWKS of the public halves of its keys, counting
// fetches; tests rotate keys by replacing them.
type jwksServer struct {
	*httptest.Server
	keys    atomic.Pointer[[]*testKey]
	fetches atomic.Int64
	fail    atomic.Bool
}

func newJWKSServer(t testing.TB, keys ...*testKey) *jwksServer {
	s := &jwksServer{}
	s.keys.Store(&keys)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		if s.fail.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		var set []map[string]any
		for _, k := range *s.keys.Load() {
			set = append(set, k.jwk(t))
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": set})
	}))
	t.Cleanup(s.Close)
	return s
}

// token signs a token with key; claims add to (or, with a nil value,
// remove from) iss "https://issuer", aud "api", sub "alice", iat t1-1m,
// exp t1+1h.
func token(t testing.TB, key *testKey, claims map[string]any) string {
	t.Helper()
	return signedToken(t, key, map[string]any{"alg": key.alg, "kid": key.kid, "typ": "JWT"}, claims)
}

// signedToken is token with the given protected header (a nil value
// removes a member).
func signedToken(t testing.TB, key *testKey, header, claims map[string]any) string {
	t.Helper()
	c := map[string]any{"iss": "https://issuer", "aud": []string{"api"}, "sub": "alice",
		"iat": t1.Add(-time.Minute).Unix(), "exp": t1.Add(time.Hour).Unix()}
	for k, v := range claims {
		c[k] = v
		if v == nil {
			delete(c, k)
		}
	}
	h := map[string]any{}
	for k, v := range header {
		if v != nil {
			h[k] = v
		}
	}
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	input := b64(hb) + "." + b64(cb)
	alg, _ := h["alg"].(string)
	return input + "." + b64(key.sign(t, alg, input))
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
	call := func(key *testKey, at time.Time) Verdict {
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
	srv.keys.Store(&[]*testKey{k1, k2})
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

// TestJWTValidationRules pins down what jwt-validation accepts: the
// algorithms (inferred from the key when its JWKS entry has no alg, never
// "none"), key selection by kid, the 30s of clock skew on exp, nbf and
// iat, the claims' types, and how claims become vars.
func TestJWTValidationRules(t *testing.T) {
	es := newKey(t, "es")
	esNoAlg := newKey(t, "es-noalg")
	esNoAlg.jwkAlg = ""
	esEnc := newKey(t, "es-enc")
	esEnc.use = "enc"
	esSig := newKey(t, "es-sig")
	esSig.use = "sig"
	rsaRaw, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rs := &testKey{kid: "rs", alg: "RS256", signer: rsaRaw}
	ps := &testKey{kid: "rs", alg: "PS256", signer: rsaRaw}
	_, edRaw, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ed := &testKey{kid: "ed", alg: "EdDSA", signer: edRaw}
	oct := &testKey{kid: "oct", alg: "HS256", secret: []byte("0123456789abcdef0123456789abcdef")}
	// HS256 over the RSA key's JWKS entry: the algorithm confusion attack.
	confused := &testKey{kid: "rs", alg: "HS256", secret: []byte(rs.jwk(t)["n"].(string))}
	other := newKey(t, "es") // kid es, another key
	srv := newJWKSServer(t, es, esNoAlg, esEnc, esSig, rs, ed, oct)
	now := t1.Unix()
	hdr := func(k *testKey, kv ...any) map[string]any {
		h := map[string]any{"alg": k.alg, "kid": k.kid}
		for i := 0; i < len(kv); i += 2 {
			h[kv[i].(string)] = kv[i+1]
		}
		return h
	}
	tests := []struct {
		name string
		tok  string
		err  string            // "" when valid
		vars map[string]string // expected vars when valid (absent: "-")
	}{
		{name: "ES256", tok: token(t, es, nil)},
		{name: "ES256 inferred from the key", tok: token(t, esNoAlg, nil)},
		{name: "use sig", tok: token(t, esSig, nil)},
		{name: "use enc", tok: token(t, esEnc, nil), err: "invalid token"},
		{name: "RS256 inferred", tok: token(t, rs, nil)},
		{name: "PS256 inferred", tok: token(t, ps, nil)},
		{name: "EdDSA inferred", tok: token(t, ed, nil)},
		{name: "HS256 with an oct key of the set", tok: token(t, oct, nil)},
		{name: "HS256 keyed by an RSA key", tok: token(t, confused, nil), err: "invalid token"},
		{name: "alg none", tok: signedToken(t, es, hdr(es, "alg", "none"), nil), err: "invalid token"},
		{name: "alg none unsigned", tok: strings.TrimSuffix(signedToken(t, es, hdr(es, "alg", "none"), nil), "."), err: "invalid token"},
		// jwx inferred an algorithm for a token without alg; RFC 7515 requires
		// one, and go-jose refuses a token without.
		{name: "alg missing", tok: signedToken(t, es, hdr(es, "alg", nil), nil), err: "invalid token"},
		{name: "kid missing", tok: signedToken(t, es, hdr(es, "kid", nil), nil), err: "invalid token"},
		{name: "kid unknown", tok: signedToken(t, es, hdr(es, "kid", "nope"), nil), err: "invalid token"},
		{name: "kid of another key", tok: signedToken(t, es, hdr(es, "kid", "rs"), nil), err: "invalid token"},
		{name: "kid selects among keys", tok: token(t, other, nil), err: "invalid token"},
		// jwx ignored crit; RFC 7515 requires refusing a token whose crit names
		// an extension the recipient does not process, as go-jose does.
		{name: "crit", tok: signedToken(t, es, hdr(es, "crit", []string{"exp"}), nil), err: "invalid token"},
		{name: "iss null", tok: token(t, es, map[string]any{"iss": jsonNull{}}), err: "invalid token: wrong issuer"},
		{name: "sub null", tok: token(t, es, map[string]any{"sub": jsonNull{}}), vars: map[string]string{"sub": ""}},
		{name: "aud null", tok: token(t, es, map[string]any{"aud": jsonNull{}}), err: "invalid token"},
		{name: "aud empty", tok: token(t, es, map[string]any{"aud": []string{}}), err: "invalid token: wrong audience"},
		{name: "exp null", tok: token(t, es, map[string]any{"exp": jsonNull{}}), err: "invalid token"},
		{name: "exp 29s ago", tok: token(t, es, map[string]any{"exp": now - 29})},
		{name: "exp 30s ago", tok: token(t, es, map[string]any{"exp": now - 30}), err: "invalid token"},
		{name: "exp as a numeric string", tok: token(t, es, map[string]any{"exp": "9999999999"})},
		{name: "exp as RFC 3339", tok: token(t, es, map[string]any{"exp": "2099-01-01T00:00:00Z"})},
		{name: "exp fractional", tok: token(t, es, map[string]any{"exp": float64(now) - 28.5})},
		{name: "exp fractional truncated", tok: token(t, es, map[string]any{"exp": float64(now) - 29.9}), err: "invalid token"},
		{name: "exp negative", tok: token(t, es, map[string]any{"exp": -1}), err: "invalid token"},
		{name: "exp not a date", tok: token(t, es, map[string]any{"exp": true}), err: "invalid token"},
		{name: "no exp", tok: token(t, es, map[string]any{"exp": nil})},
		{name: "nbf in 30s", tok: token(t, es, map[string]any{"nbf": now + 30})},
		{name: "nbf in 31s", tok: token(t, es, map[string]any{"nbf": now + 31}), err: "invalid token"},
		{name: "iat in 30s", tok: token(t, es, map[string]any{"iat": now + 30})},
		{name: "iat in 31s", tok: token(t, es, map[string]any{"iat": now + 31}), err: "invalid token"},
		{name: "iss missing", tok: token(t, es, map[string]any{"iss": nil}), err: "invalid token: wrong issuer"},
		{name: "iss not a string", tok: token(t, es, map[string]any{"iss": 5}), err: "invalid token"},
		{name: "sub not a string", tok: token(t, es, map[string]any{"sub": 5}), err: "invalid token"},
		{name: "jti not a string", tok: token(t, es, map[string]any{"jti": 5}), err: "invalid token"},
		{name: "aud a string", tok: token(t, es, map[string]any{"aud": "other"})},
		{name: "aud missing", tok: token(t, es, map[string]any{"aud": nil}), err: "invalid token: wrong audience"},
		{name: "aud not strings", tok: token(t, es, map[string]any{"aud": []any{"api", 5}}), err: "invalid token"},
		{name: "payload not an object", tok: func() string {
			h := b64([]byte(`{"alg":"ES256","kid":"es"}`))
			p := b64([]byte(`["a"]`))
			return h + "." + p + "." + b64(es.sign(t, "ES256", h+"."+p))
		}(), err: "invalid token"},
		{name: "JSON serialization", tok: func() string {
			parts := strings.Split(token(t, es, nil), ".")
			return `{"payload":"` + parts[1] + `","protected":"` + parts[0] + `","signature":"` + parts[2] + `"}`
		}(), err: "invalid token"},
		{name: "bad base64", tok: "e30.e30.!!", err: "invalid token"},
		{name: "vars of every claim type", tok: token(t, es, map[string]any{"n": 5, "f": 1.5, "b": true, "o": map[string]any{"z": 1, "a": "x"},
			"l": []any{"a", 1}, "exp": now + 60, "aud": "api", "null": nil}),
			vars: map[string]string{"sub": "alice", "iss": "https://issuer", "aud": `["api"]`, "exp": `"2025-01-01T00:01:05Z"`,
				"iat": `"2024-12-31T23:59:05Z"`, "n": "5", "f": "1.5", "b": "true", "o": `{"a":"x","z":1}`, "l": `["a",1]`, "missing": "-"}},
	}
	varsCfg := `{"sub":"sub","iss":"iss","aud":"aud","exp":"exp","iat":"iat","n":"n","f":"f","b":"b","o":"o","l":"l","missing":"missing"}`
	meta := `{"valid":"${string(actions.service.jwt_validation.valid)}","err":"${actions.service.jwt_validation.error}"`
	for _, name := range []string{"sub", "iss", "aud", "exp", "iat", "n", "f", "b", "o", "l", "missing"} {
		meta += `,"` + name + `":"${has(vars.` + name + `) ? vars.` + name + ` : '-'}"`
	}
	meta += "}"
	doc := `{"on_http_request":[{"actions":[{"type":"jwt-validation","config":{"issuer":"https://issuer","audiences":["api","other"],"jwks_url":"` +
		srv.URL + `","enforce":false,"vars":` + varsCfg + `}}]},{"actions":[{"type":"log","config":{"metadata":` + meta + `}}]}]}`
	e, sink := newTestEngine(t, Options{})
	p := mustCompile(t, e, doc, CompileOptions{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink.logs = nil
			req := testRequest()
			req.Header["Authorization"] = []string{"Bearer " + tt.tok}
			p.Inbound(req)
			if len(sink.logs) != 1 {
				t.Fatalf("logs %+v, errors %v", sink.logs, sink.errors())
			}
			md := sink.logs[0].Metadata
			if want := map[bool]string{true: "true", false: "false"}[tt.err == ""]; md["valid"] != want || md["err"] != tt.err {
				t.Fatalf("valid %s, error %q; want %s, %q", md["valid"], md["err"], want, tt.err)
			}
			for k, want := range tt.vars {
				if md[k] != want {
					t.Errorf("vars.%s = %s, want %s", k, md[k], want)
				}
			}
		})
	}
}

// BenchmarkJWTValidation is the action's hot path: a valid ES256 token
// verified with a cached key set, its subject and two claims made vars.
func BenchmarkJWTValidation(b *testing.B) {
	k := newKey(b, "k1")
	srv := newJWKSServer(b, k)
	e, _ := newTestEngine(b, Options{})
	p := mustCompile(b, e, `{"on_http_request":[{"actions":[{"type":"jwt-validation","config":{"issuer":"https://issuer","audiences":["api"],"jwks_url":"`+
		srv.URL+`","vars":{"user":"sub","tenant":"tid"}}}]}]}`, CompileOptions{})
	req := testRequest()
	req.Header["Authorization"] = []string{"Bearer " + token(b, k, map[string]any{"tid": "acme"})}
	if res := p.Inbound(req); res.Verdict != Continue {
		b.Fatalf("result %+v", res)
	}
	b.ReportAllocs()
	for b.Loop() {
		if p.Inbound(req).Verdict != Continue {
			b.Fatal("refused")
		}
	}
}
