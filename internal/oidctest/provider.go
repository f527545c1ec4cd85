// Package oidctest is an OpenID Connect provider for tests: discovery,
// JWKS, an authorization endpoint that approves every request at once,
// and a token endpoint that checks the client, the redirect URI, PKCE and
// that a code is used once. It signs ID tokens (ES256) with go-jose. Its
// exported fields are knobs a test turns (under [Provider.Set]) to make
// it misbehave.
package oidctest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Provider is an OIDC provider of our own making: discovery, JWKS, an
// authorization endpoint that approves every request at once, and a token
// endpoint that checks the client, the redirect URI, PKCE and that a code
// is used once. It signs ID tokens (ES256) with go-jose.
type Provider struct {
	srv          *httptest.Server
	key          *ecdsa.PrivateKey
	clientID     string
	clientSecret string
	now          func() time.Time

	mu         sync.Mutex
	codes      map[string]*grant
	authorized []url.Values // every authorization request's query
	discovered int          // discovery requests served

	// Knobs a test turns to make the provider misbehave.
	Audience    string            // aud of ID tokens; "" means the client ID
	IssuerClaim string            // iss of ID tokens; "" means the real issuer
	Nonce       *string           // nonce of ID tokens; nil means the requested one
	Signer      *ecdsa.PrivateKey // signs ID tokens; nil means key (in the JWKS)
	Lifetime    time.Duration     // ID token lifetime; 0 means an hour
	Deny        bool              // the authorization endpoint answers error=access_denied
	NoIDToken   bool              // the token response has no id_token
	Claims      map[string]any    // claims of ID tokens besides the standard ones
	Subject     string            // sub of ID tokens; "" means "user-1"
	JWKSDown    bool              // the JWKS endpoint answers 503
}

// grant is an issued authorization code.
type grant struct {
	redirectURI, challenge, nonce string
	used                          bool
}

// New starts a provider over TLS for client clientID.
func New(clientID, clientSecret string, now func() time.Time) *Provider {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	p := &Provider{key: key, clientID: clientID, clientSecret: clientSecret, now: now, codes: map[string]*grant{},
		Claims: map[string]any{"email": "ada@example.com", "email_verified": true, "name": "Ada Lovelace", "preferred_username": "ada"}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	p.srv = httptest.NewTLSServer(mux)
	return p
}

// Issuer returns the provider's issuer URL.
func (p *Provider) Issuer() string { return p.srv.URL }

// Client returns an HTTP client that trusts the provider's TLS
// certificate.
func (p *Provider) Client() *http.Client { return p.srv.Client() }

// Close stops the provider.
func (p *Provider) Close() { p.srv.Close() }

// Set changes the provider's knobs under its lock.
func (p *Provider) Set(f func(p *Provider)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// Counts returns how many authorization and discovery requests were served.
func (p *Provider) Counts() (authorized, discovered int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.authorized), p.discovered
}

// LastAuthorization returns the query of the last authorization request.
func (p *Provider) LastAuthorization() url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.authorized) == 0 {
		return nil
	}
	return p.authorized[len(p.authorized)-1]
}

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.discovered++
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.Issuer(),
		"authorization_endpoint":                p.Issuer() + "/authorize",
		"token_endpoint":                        p.Issuer() + "/token",
		"jwks_uri":                              p.Issuer() + "/jwks",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"ES256"},
		"code_challenge_methods_supported":      []string{"S256"},
	})
}

func (p *Provider) jwks(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	down := p.JWKSDown
	p.mu.Unlock()
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &p.key.PublicKey, KeyID: "k1", Algorithm: string(jose.ES256), Use: "sig"},
	}})
}

func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.authorized = append(p.authorized, q)
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme == "" || q.Get("client_id") != p.clientID || q.Get("response_type") != "code" ||
		q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" ||
		!strings.Contains(" "+q.Get("scope")+" ", " openid ") {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	back := redirect.Query()
	back.Set("state", q.Get("state"))
	if p.Deny {
		back.Set("error", "access_denied")
	} else {
		code := randomString()
		p.codes[code] = &grant{redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), nonce: q.Get("nonce")}
		back.Set("code", code)
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != p.clientID || secret != p.clientSecret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.codes[r.PostForm.Get("code")]
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if r.PostForm.Get("grant_type") != "authorization_code" || g == nil || g.used ||
		g.redirectURI != r.PostForm.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		if g != nil {
			g.used = true // a replayed or misused code is dead
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	}
	g.used = true
	res := map[string]any{"access_token": randomString(), "token_type": "Bearer", "expires_in": 3600}
	if !p.NoIDToken {
		res["id_token"] = p.idToken(g.nonce)
	}
	writeJSON(w, http.StatusOK, res)
}

// idToken returns a signed ID token; p.mu is held.
func (p *Provider) idToken(nonce string) string {
	now := p.now()
	claims := map[string]any{}
	for k, v := range p.Claims {
		claims[k] = v
	}
	claims["iss"] = or(p.IssuerClaim, p.Issuer())
	claims["sub"] = or(p.Subject, "user-1")
	claims["aud"] = or(p.Audience, p.clientID)
	claims["iat"] = now.Unix()
	claims["exp"] = now.Add(or(p.Lifetime, time.Hour)).Unix()
	claims["nonce"] = nonce
	if p.Nonce != nil {
		claims["nonce"] = *p.Nonce
	}
	key := p.key
	if p.Signer != nil {
		key = p.Signer
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		panic(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		panic(err)
	}
	raw, err := obj.CompactSerialize()
	if err != nil {
		panic(err)
	}
	return raw
}

// or returns v, or def when v is the zero value.
func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func randomString() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
