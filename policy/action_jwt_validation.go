package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/policy/limits"
)

// ActionJWTValidation is the jwt-validation action: it checks the
// request's bearer token (a JWS-signed JWT) against an issuer, audiences
// and the keys of a JWKS URL, and makes its claims available as vars.
// Tokens are parsed and their signatures verified with
// github.com/go-jose/go-jose/v4, the JOSE library go-oidc (the edge
// proxy's OIDC module) uses too.
const ActionJWTValidation = "jwt-validation"

// Limits of the jwt-validation action.
const (
	// MaxTokenBytes is the longest Authorization header value
	// jwt-validation reads; a longer token is invalid unread.
	MaxTokenBytes = 8 << 10
	// MaxJWKSBytes is the largest JWKS document fetched; a larger one is
	// a fetch error.
	MaxJWKSBytes = 1 << 20
	// JWKSRefresh is how long a fetched JWKS is used before it is fetched
	// again (by the Engine's clock).
	JWKSRefresh = 10 * time.Minute
	// JWKSMinRefetch is the least time between two fetches of one JWKS
	// URL: a token that no cached key verifies makes a fetch (a key
	// rotation) at most this often, and so does a failed fetch.
	JWKSMinRefetch = 30 * time.Second
	// JWKSFetchTimeout bounds one fetch.
	JWKSFetchTimeout = 5 * time.Second
	// jwtSkew is the clock skew accepted on exp, nbf and iat.
	jwtSkew = 30 * time.Second
	// maxAudiences bounds the audiences of one action.
	maxAudiences = 20
)

// Result fields of jwt-validation.
const (
	jwtValid   = "valid"
	jwtSubject = "subject"
	jwtError   = "error"
)

// jwtValidationType is the jwt-validation action's registry entry.
var jwtValidationType = builtinType{name: ActionJWTValidation, compile: compileJWTValidation, httpOnly: true,
	results: []ResultField{{Name: jwtValid, Type: ResultBool, HTTPOnly: true}, {Name: jwtSubject, Type: ResultString, HTTPOnly: true},
		{Name: jwtError, Type: ResultString, HTTPOnly: true}}}

type jwtConfig struct {
	Issuer    string            `json:"issuer"`
	Audiences []string          `json:"audiences"`
	JWKSURL   string            `json:"jwks_url"`
	Vars      map[string]string `json:"vars"`
	Enforce   *bool             `json:"enforce"`
}

type jwtAction struct {
	issuer    string
	audiences []string
	jwks      *jwksCache
	vars      []string // variable names, sorted
	claims    []string // the claim of each
	enforce   bool
	valid     ResultSlot
	subject   ResultSlot
	errSlot   ResultSlot
}

func compileJWTValidation(c *CompileContext, config []byte) (Action, error) {
	var cfg jwtConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if !needHTTP(c, &vs, ActionJWTValidation) {
		return nil, vs.Err()
	}
	if c.Phase() != Inbound {
		vs.Add("type", "jwt-validation is only available in inbound (on_http_request) rules")
		return nil, vs.Err()
	}
	if cfg.Issuer == "" || len(cfg.Issuer) > 1024 {
		vs.Add("config.issuer", "is required: the iss the tokens must have, at most 1024 bytes")
	}
	if len(cfg.Audiences) > maxAudiences {
		vs.Add("config.audiences", "has %d entries; at most %d are allowed", len(cfg.Audiences), maxAudiences)
	}
	for i, a := range cfg.Audiences {
		if a == "" || len(a) > 1024 {
			vs.Add("config.audiences["+strconv.Itoa(i)+"]", "must be 1 to 1024 bytes")
		}
	}
	u, err := url.Parse(cfg.JWKSURL)
	switch {
	case cfg.JWKSURL == "":
		vs.Add("config.jwks_url", "is required: the https URL of the issuer's JSON Web Key Set")
	case len(cfg.JWKSURL) > 2048 || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		vs.Add("config.jwks_url", "must be an absolute http or https URL of at most 2048 bytes")
	}
	a := &jwtAction{issuer: cfg.Issuer, audiences: cfg.Audiences, enforce: cfg.Enforce == nil || *cfg.Enforce}
	if len(cfg.Vars) > limits.MaxVars {
		vs.Add("config.vars", "has %d entries; at most %d are allowed", len(cfg.Vars), limits.MaxVars)
	} else {
		for _, name := range sortedKeys(cfg.Vars) {
			f := headerField("config.vars", name)
			claim := cfg.Vars[name]
			switch {
			case !validVarName(name):
				vs.Add(f, "invalid variable name %s: use up to %d letters, digits and _, not starting with a digit", quoteTrunc(name), limits.MaxVarNameLength)
			case claim == "" || len(claim) > 256:
				vs.Add(f, "must name a claim of 1 to 256 bytes")
			case !c.c.setVars[name] && len(c.c.setVars) >= limits.MaxVars:
				vs.Add(f, "the document sets more than %d distinct variables (MaxVars)", limits.MaxVars)
			default:
				a.vars = append(a.vars, name)
				a.claims = append(a.claims, claim)
				c.c.setVars[name] = true
			}
		}
	}
	if err := vs.Err(); err != nil {
		return nil, err
	}
	a.jwks = c.c.e.jwksFor(cfg.JWKSURL)
	if err := resultSlots(c, map[string]*ResultSlot{jwtValid: &a.valid, jwtSubject: &a.subject, jwtError: &a.errSlot}); err != nil {
		return nil, err
	}
	return a, nil
}

// Errors of jwt-validation, the values of actions.service.jwt_validation.error.
var (
	errNoToken     = errors.New("no bearer token")
	errBadToken    = errors.New("invalid token")
	errNoKeys      = errors.New("the issuer's keys are unavailable")
	errWrongIssuer = errors.New("invalid token: wrong issuer")
	errAudience    = errors.New("invalid token: wrong audience")
)

// bearerToken returns the token of the request's one Authorization
// header "Bearer <token>".
func bearerToken(v []string) (string, bool) {
	if len(v) != 1 || len(v[0]) > MaxTokenBytes {
		return "", false
	}
	scheme, tok, ok := strings.Cut(v[0], " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", false
	}
	return tok, true
}

// jwtAlgorithms are the JWS algorithms a token may name in its alg
// header: those that can be inferred from an RSA, EC, Ed25519 or
// symmetric key of a JWKS. "none" is not one of them, nor is a missing
// alg.
var jwtAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA, jose.HS256, jose.HS384, jose.HS512,
}

// errKey is why a token's signature was not verified with a key of the
// set (it becomes errBadToken).
var errKey = errors.New("no key of the set verifies the token")

// verifyToken verifies the signature of a compact JWS with the key of set
// that its kid header names (the first with that kid), which must be for
// signatures (use "sig" or none) and, when its JWKS entry names an alg,
// be used with that alg; without one the key's type decides which algs
// verify (RS* and PS* for RSA, ES* for EC on the matching curve, EdDSA
// for Ed25519, HS* for a symmetric key). It returns the payload.
func verifyToken(obj *jose.JSONWebSignature, set *jwkSet) ([]byte, error) {
	if set == nil || len(obj.Signatures) != 1 {
		return nil, errKey
	}
	h := obj.Signatures[0].Protected
	if h.KeyID == "" {
		return nil, errKey
	}
	key := set.lookup(h.KeyID)
	switch {
	case key == nil,
		key.Use != "" && key.Use != "sig",
		key.Algorithm != "" && key.Algorithm != h.Algorithm:
		return nil, errKey
	}
	return obj.Verify(key.Key)
}

// validate verifies the token and returns its claims.
func (a *jwtAction) validate(r *RunContext) (*jwtClaims, error) {
	tok, ok := bearerToken(r.Header("authorization"))
	if !ok {
		return nil, errNoToken
	}
	now := r.Time()
	obj, perr := jose.ParseSignedCompact(tok, jwtAlgorithms)
	parse := func(set *jwkSet) (*jwtClaims, error) {
		if perr != nil {
			return nil, perr
		}
		payload, err := verifyToken(obj, set)
		if err != nil {
			return nil, err
		}
		c, err := parseClaims(payload)
		if err != nil {
			return nil, err
		}
		return c, c.validTimes(now)
	}
	set, err := a.jwks.get(now, false)
	if err != nil {
		r.ReportError(err)
		if set == nil {
			return nil, errNoKeys
		}
	}
	t, err := parse(set)
	if err != nil {
		// Perhaps a rotated key: fetch again (at most every
		// JWKSMinRefetch, whatever the tokens).
		if fresh, ferr := a.jwks.get(now, true); ferr == nil && fresh != set {
			t, err = parse(fresh)
		}
	}
	if err != nil {
		return nil, errBadToken
	}
	if t.iss != a.issuer {
		return nil, errWrongIssuer
	}
	if len(a.audiences) > 0 {
		found := false
		for _, want := range a.audiences {
			for _, got := range t.aud {
				found = found || got == want
			}
		}
		if !found {
			return nil, errAudience
		}
	}
	return t, nil
}

// Run validates the request's token. Without a valid one it ends
// evaluation with 401 and a Bearer challenge, unless enforce is off; with
// one, it sets the configured vars from its claims.
func (a *jwtAction) Run(r *RunContext) {
	t, err := a.validate(r)
	r.SetBool(a.valid, err == nil)
	if err != nil {
		r.SetString(a.subject, "")
		r.SetString(a.errSlot, err.Error())
		if a.enforce {
			challenge := `Bearer error="invalid_token"`
			if err == errNoToken {
				challenge = "Bearer"
			}
			r.Respond(http.StatusUnauthorized, http.Header{"Www-Authenticate": {challenge}}, "")
		}
		return
	}
	r.SetString(a.subject, t.sub)
	r.SetString(a.errSlot, "")
	if len(a.vars) == 0 {
		return
	}
	var names, vals []string
	for i, claim := range a.claims {
		v, ok := t.get(claim)
		if !ok {
			continue
		}
		s, ok := v.(string)
		if !ok {
			b, err := json.Marshal(v)
			if err != nil {
				continue
			}
			s = string(b)
		}
		names, vals = append(names, a.vars[i]), append(vals, truncateAt(s, limits.MaxVarBytes))
	}
	r.st.setVars(names, vals)
}

// jwksCache is the key set of one JWKS URL, shared by the Engine's
// jwt-validation actions.
type jwksCache struct {
	url    string
	client *http.Client

	mu      sync.Mutex // held during a fetch: concurrent requests wait for it
	set     *jwkSet
	fetched time.Time // when set was fetched (the Engine's clock)
	tried   time.Time // when a fetch was last tried
}

// jwksFor returns the Engine's cache of url.
func (e *Engine) jwksFor(u string) *jwksCache {
	e.jwksMu.Lock()
	defer e.jwksMu.Unlock()
	if c, ok := e.jwks[u]; ok {
		return c
	}
	if e.jwks == nil {
		e.jwks = map[string]*jwksCache{}
	}
	c := &jwksCache{url: u, client: e.httpClient}
	e.jwks[u] = c
	return c
}

// get returns the key set, fetching it when there is none, when it is
// older than JWKSRefresh, or when again is set (a token no key verified);
// never more often than JWKSMinRefetch. A failed fetch keeps the previous
// set, returned with the error.
func (c *jwksCache) get(now time.Time, again bool) (*jwkSet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	due := c.set == nil || now.Sub(c.fetched) >= JWKSRefresh || again
	if !due || !c.tried.IsZero() && now.Sub(c.tried) < JWKSMinRefetch && now.Sub(c.tried) >= 0 {
		return c.set, nil
	}
	c.tried = now
	set, err := c.fetch()
	if err != nil {
		return c.set, fmt.Errorf("fetching the JWKS %s: %w", c.url, err)
	}
	c.set, c.fetched = set, now
	return set, nil
}

func (c *jwksCache) fetch() (*jwkSet, error) {
	ctx, cancel := context.WithTimeout(context.Background(), JWKSFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", res.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, MaxJWKSBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxJWKSBytes {
		return nil, fmt.Errorf("the key set is larger than %d bytes", MaxJWKSBytes)
	}
	return parseJWKS(b)
}
