package oidcauth

import (
	"context"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/oauth2"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
)

// Limits and fixed values; see the package doc's "# Limits".
const (
	// DefaultCallbackPath is the path, on the edge's host, to which the
	// provider sends the browser back after sign-in when
	// [Options.CallbackPath] is empty. Register
	// https://<edge host><DefaultCallbackPath> as the app's redirect URI.
	DefaultCallbackPath = "/.service/oidc/callback"
	// MinKeyBytes is the shortest [Options.Key].
	MinKeyBytes = 32
	// MaxScopeBytes bounds [Options.Scope].
	MaxScopeBytes = 512
	// MaxCookieBytes bounds a cookie value this package writes or reads;
	// a longer value is ignored (no session).
	MaxCookieBytes = 4096
	// MaxClaimBytes bounds each identity claim (sub, email, name,
	// preferred_username). A token whose sub is longer, or not UTF-8
	// without control characters, is refused; other such claims are
	// dropped.
	MaxClaimBytes = 255
	// MaxReturnPathBytes bounds the URL (path and query) the browser is
	// sent back to after sign-in; a longer one is cut to its path, or to
	// "/".
	MaxReturnPathBytes = 2048
	// MaxPendingLogins is how many sign-ins one browser may have in flight
	// per route: each pending sign-in has a cookie in one of this many
	// slots (chosen by its state), and a new one in a taken slot replaces
	// the old, which then fails with "expired".
	MaxPendingLogins = 8
	// LoginTimeout is how long a sign-in may take, from the redirect to the
	// provider until the callback.
	LoginTimeout = 10 * time.Minute
	// MaxCallbackQueryBytes bounds the callback's query string.
	MaxCallbackQueryBytes = 8192
	// MaxCodeBytes bounds the authorization code.
	MaxCodeBytes = 2048
	// MaxHostBytes bounds the request's Host used to build the redirect URI.
	MaxHostBytes = 300
	// MaxRefreshInterval is the longest time between rewrites of a session
	// cookie's last-seen time when the route has an inactivity timeout
	// (the interval is a tenth of the timeout, between 1s and this).
	MaxRefreshInterval = time.Minute
	// ClockSkew is how far in the future a session's times may be (another
	// proxy's clock) before the cookie is refused.
	ClockSkew = time.Minute
)

// Bodies of the responses the Gate writes itself. They name no internals.
const (
	msgUnavailable = "the identity provider is unavailable; try again later"
	msgBadRequest  = "bad request"
	msgBadCallback = "invalid sign-in response"
	msgExpired     = "this sign-in is unknown or has expired; reload the page to sign in again"
	msgDenied      = "sign-in was not completed at the identity provider"
	msgFailed      = "sign-in failed"
)

// Options configure [New]. Key and Scope are required; the zero value of
// every other field means its documented default.
type Options struct {
	// Key is a secret of at least [MinKeyBytes] bytes. The Gate derives
	// its cookie key from it with HKDF-SHA256, bound to Scope, the issuer
	// and the client ID, so one secret serves every route: a proxy passes
	// its sealing key (the key that seals secrets at rest), and cookies
	// stay valid across restarts and across proxies sharing that key.
	Key []byte
	// Scope identifies the route, e.g. edge ID + "/" + route ID: it
	// namespaces the cookies' names and keys, so a cookie of one route is
	// not accepted by another. At most [MaxScopeBytes].
	Scope string
	// CallbackPath is the path of the callback on the edge's host;
	// "" means [DefaultCallbackPath]. It must start with "/".
	CallbackPath string
	// Providers is the discovery cache (and the HTTP client to the
	// providers); share one among the Gates of a proxy. Nil means a cache
	// of this Gate's own with default options.
	Providers *Providers
	// Now is the clock for sessions, pending sign-ins and ID token expiry;
	// nil means time.Now.
	Now func() time.Time
	// Logger receives the causes of failed sign-ins and provider errors,
	// which responses never show; nil discards them.
	Logger *slog.Logger
}

// Gate enforces one route's OIDC module on HTTP requests: it lets through
// requests with a valid session, sends the others to the provider to sign
// in, and serves the callback that ends a sign-in. A Gate is immutable
// after [New] and safe for concurrent use; build a new one when the
// module's config changes.
type Gate struct {
	issuer, clientID, clientSecret string
	scopes                         []string
	optionsPassthrough             bool
	inactivity, maxDuration        int64 // seconds; 0: no limit
	refresh                        int64 // seconds between last-seen rewrites

	now       func() time.Time
	log       *slog.Logger
	providers *Providers
	scope     string
	callback  string
	tag       string

	aead        cipher.AEAD
	sessionName string
	loginPrefix string
	loginNames  [MaxPendingLogins]string
	loginPath   string
	forceSecure bool

	verifierMu  sync.Mutex
	verifierFor *oidc.Provider
	verifier    *oidc.IDTokenVerifier
}

// New returns the Gate of an enabled OIDC module cfg (see
// [edges.OIDC.Config]) for the route opts.Scope names. It reports every
// broken rule as an InvalidArgument [*apierr.Error]; it does not contact
// the provider (discovery happens on the first sign-in).
func New(cfg *edgeconfig.OIDC, opts Options) (*Gate, error) {
	var vs apierr.Violations
	if cfg == nil {
		vs.Add("config", "is required: the OIDC module must be set and enabled")
		return nil, vs.Err()
	}
	if cfg.Issuer == "" {
		vs.Add("issuer", "is required")
	}
	if cfg.ClientID == "" {
		vs.Add("client_id", "is required")
	}
	prefix := cfg.CookiePrefix
	if prefix == "" {
		prefix = edges.DefaultCookiePrefix
	}
	if len(prefix) > edges.MaxCookiePrefixBytes || !edges.IsToken(prefix) {
		vs.Add("cookie_prefix", "must be at most %d bytes of HTTP token characters", edges.MaxCookiePrefixBytes)
	}
	if cfg.InactivityTimeout < 0 {
		vs.Add("inactivity_timeout", "must not be negative")
	}
	if cfg.MaximumDuration < 0 {
		vs.Add("maximum_duration", "must not be negative")
	}
	if len(opts.Key) < MinKeyBytes {
		vs.Add("key", "must be at least %d bytes", MinKeyBytes)
	}
	if opts.Scope == "" || len(opts.Scope) > MaxScopeBytes {
		vs.Add("scope", "is required: 1 to %d bytes naming the route", MaxScopeBytes)
	}
	callback := opts.CallbackPath
	if callback == "" {
		callback = DefaultCallbackPath
	}
	if !safeReturnPath(callback) || strings.ContainsAny(callback, "?#") {
		vs.Add("callback_path", "must be an absolute path without query or fragment")
	}
	if err := vs.Err(); err != nil {
		return nil, err
	}

	g := &Gate{
		issuer:             cfg.Issuer,
		clientID:           cfg.ClientID,
		clientSecret:       cfg.ClientSecret,
		optionsPassthrough: cfg.OptionsPassthrough,
		inactivity:         int64(cfg.InactivityTimeout / time.Second),
		maxDuration:        int64(cfg.MaximumDuration / time.Second),
		now:                opts.Now,
		log:                opts.Logger,
		providers:          opts.Providers,
		scope:              opts.Scope,
		callback:           callback,
	}
	g.scopes = append(g.scopes, oidc.ScopeOpenID)
	for _, s := range cfg.Scopes {
		if s != oidc.ScopeOpenID {
			g.scopes = append(g.scopes, s)
		}
	}
	g.refresh = min(max(g.inactivity/10, 1), int64(MaxRefreshInterval/time.Second))
	if g.now == nil {
		g.now = time.Now
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.providers == nil {
		g.providers = NewProviders(ProvidersOptions{Now: g.now})
	}

	sum := sha256.Sum256([]byte("edgeplane/oidcauth tag\x00" + opts.Scope))
	g.tag = hex.EncodeToString(sum[:6])
	info := "edgeplane/oidcauth cookie v1\x00" + opts.Scope + "\x00" + cfg.Issuer + "\x00" + cfg.ClientID
	key, err := hkdf.Key(sha256.New, opts.Key, nil, info, chacha20poly1305.KeySize)
	if err != nil {
		return nil, err
	}
	if g.aead, err = chacha20poly1305.NewX(key); err != nil {
		return nil, err
	}
	g.sessionName = prefix + "session." + g.tag
	g.loginPrefix = prefix + "login." + g.tag + "."
	for i := range g.loginNames {
		g.loginNames[i] = g.loginPrefix + strconv.Itoa(i)
	}
	// Cookies named __Host-... must have Path=/ and, like __Secure-...,
	// the Secure attribute, or browsers drop them.
	g.loginPath = callback
	lower := strings.ToLower(prefix)
	if strings.HasPrefix(lower, "__host-") {
		g.loginPath = "/"
	}
	g.forceSecure = strings.HasPrefix(lower, "__host-") || strings.HasPrefix(lower, "__secure-")
	return g, nil
}

// SessionCookieName returns the name of the Gate's session cookie: the
// module's cookie prefix, "session." and a tag derived from the route's
// scope.
func (g *Gate) SessionCookieName() string { return g.sessionName }

// CallbackPath returns the path of the callback on the edge's host.
func (g *Gate) CallbackPath() string { return g.callback }

// Wrap returns a handler that runs [Gate.Check] and, when the request may
// proceed, calls next with the identity in the request's context
// ([FromContext]) and in the identity headers.
func (g *Gate) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := g.Check(w, r)
		if !ok {
			return
		}
		next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), id)))
	})
}

// Check decides whether r may proceed. It always strips client-sent
// identity headers ([StripHeaders]). Then:
//
//   - a request for the callback path is the end of a sign-in: Check
//     serves it ([Gate.ServeCallback]) and returns false;
//   - with a valid session cookie, Check sets the identity headers on r,
//     removes the Gate's own cookies from r's Cookie header (the upstream
//     never sees them), may add a Set-Cookie to w's header (the sliding
//     last-seen time; keep it in the response), and returns the identity
//     and true;
//   - an OPTIONS request without a valid session, when the module has
//     options_passthrough, returns the zero Identity and true;
//   - anything else (no cookie, a bad one, an expired session) is
//     redirected to the provider, or answered 503 when the provider cannot
//     be discovered, and Check returns false.
//
// When Check returns false it has written the response. r must carry the
// path the client sent (before any rewrite for the upstream): Check
// compares it with the callback path and sends the browser back to it
// after sign-in.
func (g *Gate) Check(w http.ResponseWriter, r *http.Request) (Identity, bool) {
	StripHeaders(r.Header)
	if r.URL.Path == g.callback {
		g.ServeCallback(w, r)
		return Identity{}, false
	}
	now := g.now()
	if s, ok := g.readSession(r.Header, now.Unix()); ok {
		if g.inactivity > 0 && now.Unix()-s.lastSeen >= g.refresh {
			s.lastSeen = now.Unix()
			http.SetCookie(w, g.sessionCookie(r, &s, now.Unix()))
		}
		g.stripCookies(r.Header)
		id := g.identity(&s)
		SetHeaders(r.Header, id)
		return id, true
	}
	if r.Method == http.MethodOptions && g.optionsPassthrough {
		g.stripCookies(r.Header)
		return Identity{}, true
	}
	g.startLogin(w, r, now)
	return Identity{}, false
}

// IsCallback reports whether r is a callback of a sign-in this Gate
// started: its path is the callback path and its state names this Gate.
// A proxy with several OIDC routes on one edge uses it to hand the
// callback (which no route's match may cover) to the right Gate.
func (g *Gate) IsCallback(r *http.Request) bool {
	if r.URL.Path != g.callback || len(r.URL.RawQuery) > MaxCallbackQueryBytes {
		return false
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return false
	}
	_, ok := g.parseState(q.Get("state"))
	return ok
}

// bufPool holds decode buffers for the cookie check.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// readSession returns the first valid session among r's cookies named
// g.sessionName; bad, foreign or expired values are skipped.
func (g *Gate) readSession(h http.Header, now int64) (session, bool) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	var found session
	ok := false
	eachCookie(h, func(name, value string) bool {
		if name != g.sessionName {
			return true
		}
		plain, opened := open(g.aead, adSession, value, *bp)
		if !opened {
			return true
		}
		s, err := parseSession(plain)
		if err != nil || !g.validSession(&s, now) {
			return true
		}
		found, ok = s, true
		return false
	})
	return found, ok
}

// validSession reports whether s is in force at now.
func (g *Gate) validSession(s *session, now int64) bool {
	skew := int64(ClockSkew / time.Second)
	switch {
	case s.loginAt > now+skew, s.lastSeen < s.loginAt, s.lastSeen > now+skew:
		return false
	case g.maxDuration > 0 && now-s.loginAt >= g.maxDuration:
		return false
	case g.inactivity > 0 && now-s.lastSeen >= g.inactivity:
		return false
	}
	return true
}

// identity returns the Identity of s.
func (g *Gate) identity(s *session) Identity {
	return Identity{
		Issuer:            g.issuer,
		Subject:           s.subject,
		Email:             s.email,
		EmailVerified:     s.emailVerified,
		Name:              s.name,
		PreferredUsername: s.preferredUsername,
		LoginTime:         time.Unix(s.loginAt, 0).UTC(),
	}
}

// sessionCookie returns the cookie holding s. Its Max-Age is the time
// left before the session ends (inactivity or maximum duration), or none
// (a browser-session cookie) when the route has neither limit.
func (g *Gate) sessionCookie(r *http.Request, s *session, now int64) *http.Cookie {
	var maxAge int64
	if g.maxDuration > 0 {
		maxAge = s.loginAt + g.maxDuration - now
	}
	if g.inactivity > 0 {
		if left := s.lastSeen + g.inactivity - now; maxAge == 0 || left < maxAge {
			maxAge = left
		}
	}
	if (g.maxDuration > 0 || g.inactivity > 0) && maxAge < 1 {
		maxAge = 1
	}
	return &http.Cookie{
		Name:     g.sessionName,
		Value:    seal(g.aead, adSession, appendSession(make([]byte, 0, 64), s)),
		Path:     "/",
		MaxAge:   int(maxAge),
		HttpOnly: true,
		Secure:   g.secure(r),
		SameSite: http.SameSiteLaxMode,
	}
}

// secure reports whether cookies set in answer to r get the Secure
// attribute: when r came over TLS, or the prefix demands it.
func (g *Gate) secure(r *http.Request) bool { return r.TLS != nil || g.forceSecure }

// stripCookies removes the Gate's own cookies from the Cookie header. It
// replaces the header's slice rather than editing it (another holder of
// the same slice sees no change).
func (g *Gate) stripCookies(h http.Header) {
	lines := h["Cookie"]
	found := false
	for _, line := range lines {
		if strings.Contains(line, g.sessionName) || strings.Contains(line, g.loginPrefix) {
			found = true
			break
		}
	}
	if !found {
		return
	}
	kept := make([]string, 0, len(lines))
	for _, line := range lines {
		var b strings.Builder
		for part := range strings.SplitSeq(line, ";") {
			part = strings.TrimSpace(part)
			name, _, _ := strings.Cut(part, "=")
			if part == "" || name == g.sessionName || strings.HasPrefix(name, g.loginPrefix) {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			b.WriteString(part)
		}
		if b.Len() > 0 {
			kept = append(kept, b.String())
		}
	}
	if len(kept) == 0 {
		delete(h, "Cookie")
	} else {
		h["Cookie"] = kept
	}
}

// eachCookie calls fn with the name and value of every cookie of the
// Cookie header lines in h, in order, until fn returns false. It does not
// allocate; values in double quotes are unquoted.
func eachCookie(h http.Header, fn func(name, value string) bool) {
	for _, line := range h["Cookie"] {
		for len(line) > 0 {
			var part string
			part, line, _ = strings.Cut(line, ";")
			part = strings.TrimSpace(part)
			name, value, ok := strings.Cut(part, "=")
			if !ok || name == "" {
				continue
			}
			if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
				value = value[1 : len(value)-1]
			}
			if !fn(name, value) {
				return
			}
		}
	}
}

// startLogin sends the browser to the provider: it records a pending
// sign-in (state, nonce, PKCE verifier, where to return) in a login
// cookie and redirects to the authorization endpoint.
func (g *Gate) startLogin(w http.ResponseWriter, r *http.Request, now time.Time) {
	w.Header().Set("Cache-Control", "no-store")
	redirectURL, ok := g.redirectURL(r)
	if !ok {
		http.Error(w, msgBadRequest, http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.providers.timeout)
	defer cancel()
	p, err := g.providers.provider(ctx, g.issuer)
	if err != nil {
		g.log.Warn("oidc discovery failed", "scope", g.scope, "issuer", g.issuer, "err", err)
		http.Error(w, msgUnavailable, http.StatusServiceUnavailable)
		return
	}
	l := login{created: now.Unix(), returnTo: g.returnPath(r)}
	rand.Read(l.state[:]) // never fails (crypto/rand)
	rand.Read(l.nonce[:])
	rand.Read(l.verifier[:])
	slot := int(l.state[0]) % MaxPendingLogins
	http.SetCookie(w, &http.Cookie{
		Name:     g.loginNames[slot],
		Value:    seal(g.aead, adLogin, appendLogin(nil, &l)),
		Path:     g.loginPath,
		MaxAge:   int(LoginTimeout / time.Second),
		HttpOnly: true,
		Secure:   g.secure(r),
		SameSite: http.SameSiteLaxMode,
	})
	u := g.oauthConfig(p, redirectURL).AuthCodeURL(g.tag+"."+b64(l.state[:]),
		oauth2.S256ChallengeOption(b64(l.verifier[:])), oidc.Nonce(b64(l.nonce[:])))
	http.Redirect(w, r, u, http.StatusFound)
}

// ServeCallback ends a sign-in: it checks the state against the pending
// sign-in's cookie (which it deletes: each is used once), exchanges the
// code (with the PKCE verifier), verifies the ID token (signature with the
// issuer's keys, issuer, audience = client ID, expiry, nonce), sets the
// session cookie and redirects to the URL the sign-in started from. Every
// failure is answered without a session and without internals: 400 for a
// malformed or unknown callback, 403 for a refused sign-in or a token
// that does not verify (also when the key set cannot be fetched), 502 when
// the token endpoint cannot be reached, 503 when discovery fails.
func (g *Gate) ServeCallback(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	now := g.now()
	if len(r.URL.RawQuery) > MaxCallbackQueryBytes {
		http.Error(w, msgBadCallback, http.StatusBadRequest)
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		http.Error(w, msgBadCallback, http.StatusBadRequest)
		return
	}
	state, ok := g.parseState(q.Get("state"))
	if !ok {
		http.Error(w, msgBadCallback, http.StatusBadRequest)
		return
	}
	slot := int(state[0]) % MaxPendingLogins
	l, ok := g.readLogin(r.Header, slot, state, now.Unix())
	if !ok {
		http.Error(w, msgExpired, http.StatusBadRequest)
		return
	}
	// The pending sign-in is used once, whatever happens next.
	http.SetCookie(w, &http.Cookie{Name: g.loginNames[slot], Value: "", Path: g.loginPath, MaxAge: -1,
		HttpOnly: true, Secure: g.secure(r), SameSite: http.SameSiteLaxMode})
	if q.Get("error") != "" {
		http.Error(w, msgDenied, http.StatusForbidden)
		return
	}
	code := q.Get("code")
	if code == "" || len(code) > MaxCodeBytes {
		http.Error(w, msgBadCallback, http.StatusBadRequest)
		return
	}
	redirectURL, ok := g.redirectURL(r)
	if !ok {
		http.Error(w, msgBadRequest, http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(g.providers.clientContext(r.Context()), g.providers.timeout)
	defer cancel()
	p, err := g.providers.provider(ctx, g.issuer)
	if err != nil {
		g.log.Warn("oidc discovery failed", "scope", g.scope, "issuer", g.issuer, "err", err)
		http.Error(w, msgUnavailable, http.StatusServiceUnavailable)
		return
	}
	tok, err := g.oauthConfig(p, redirectURL).Exchange(ctx, code, oauth2.VerifierOption(b64(l.verifier[:])))
	if err != nil {
		g.log.Warn("oidc code exchange failed", "scope", g.scope, "issuer", g.issuer, "err", err)
		if _, refused := errors.AsType[*oauth2.RetrieveError](err); refused {
			http.Error(w, msgFailed, http.StatusForbidden)
		} else {
			http.Error(w, msgUnavailable, http.StatusBadGateway)
		}
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		g.log.Warn("oidc token response without id_token", "scope", g.scope, "issuer", g.issuer)
		http.Error(w, msgFailed, http.StatusForbidden)
		return
	}
	idt, err := g.idTokenVerifier(p).Verify(ctx, raw)
	if err != nil {
		// go-oidc does not wrap the cause of a failed signature check, so a
		// key set that could not be fetched lands here too: 403 either way.
		g.log.Warn("oidc id token refused", "scope", g.scope, "issuer", g.issuer, "err", err)
		http.Error(w, msgFailed, http.StatusForbidden)
		return
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(b64(l.nonce[:]))) != 1 {
		g.log.Warn("oidc id token nonce mismatch", "scope", g.scope, "issuer", g.issuer)
		http.Error(w, msgFailed, http.StatusForbidden)
		return
	}
	s, err := newSession(idt, now.Unix())
	if err != nil {
		g.log.Warn("oidc id token claims refused", "scope", g.scope, "issuer", g.issuer, "err", err)
		http.Error(w, msgFailed, http.StatusForbidden)
		return
	}
	http.SetCookie(w, g.sessionCookie(r, &s, now.Unix()))
	http.Redirect(w, r, l.returnTo, http.StatusSeeOther)
}

// idTokenVerifier returns the verifier for p's tokens, made once per
// discovered provider.
func (g *Gate) idTokenVerifier(p *oidc.Provider) *oidc.IDTokenVerifier {
	g.verifierMu.Lock()
	defer g.verifierMu.Unlock()
	if g.verifierFor != p {
		g.verifierFor = p
		g.verifier = p.Verifier(&oidc.Config{ClientID: g.clientID, Now: g.now})
	}
	return g.verifier
}

// newSession returns the session of a verified ID token signed in at now.
func newSession(idt *oidc.IDToken, now int64) (session, error) {
	if idt.Subject == "" || !claimString(idt.Subject) {
		return session{}, errors.New("sub claim is empty, longer than 255 bytes, or not UTF-8 text")
	}
	var c struct {
		Email             string `json:"email"`
		EmailVerified     any    `json:"email_verified"`
		Name              string `json:"name"`
		PreferredUsername string `json:"preferred_username"`
	}
	if err := idt.Claims(&c); err != nil {
		// A claim of the wrong type: keep the subject alone.
		c.Email, c.EmailVerified, c.Name, c.PreferredUsername = "", nil, "", ""
	}
	keep := func(s string) string {
		if claimString(s) {
			return s
		}
		return ""
	}
	s := session{
		loginAt:           now,
		lastSeen:          now,
		subject:           idt.Subject,
		email:             keep(c.Email),
		name:              keep(c.Name),
		preferredUsername: keep(c.PreferredUsername),
	}
	s.emailVerified = s.email != "" && (c.EmailVerified == true || c.EmailVerified == "true")
	return s, nil
}

// readLogin returns the pending sign-in in the login cookie of slot whose
// state is state, if it has not expired.
func (g *Gate) readLogin(h http.Header, slot int, state [stateBytes]byte, now int64) (login, bool) {
	var found login
	ok := false
	eachCookie(h, func(name, value string) bool {
		if name != g.loginNames[slot] {
			return true
		}
		plain, opened := open(g.aead, adLogin, value, nil)
		if !opened {
			return true
		}
		l, err := parseLogin(plain)
		if err != nil || subtle.ConstantTimeCompare(l.state[:], state[:]) != 1 {
			return true
		}
		if age := now - l.created; age < -int64(ClockSkew/time.Second) || age >= int64(LoginTimeout/time.Second) {
			return true
		}
		found, ok = l, true
		return false
	})
	return found, ok
}

// parseState returns the random bytes of a state this Gate made:
// its tag, ".", then base64url of [stateBytes] bytes.
func (g *Gate) parseState(s string) ([stateBytes]byte, bool) {
	var st [stateBytes]byte
	rest, ok := strings.CutPrefix(s, g.tag+".")
	if !ok || len(rest) != base64.RawURLEncoding.EncodedLen(stateBytes) {
		return st, false
	}
	n, err := base64.RawURLEncoding.Decode(st[:], []byte(rest))
	return st, err == nil && n == stateBytes
}

// oauthConfig returns the OAuth 2.0 client config for p and redirectURL.
func (g *Gate) oauthConfig(p *oidc.Provider, redirectURL string) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     g.clientID,
		ClientSecret: g.clientSecret,
		Endpoint:     p.Endpoint(),
		RedirectURL:  redirectURL,
		Scopes:       g.scopes,
	}
}

// redirectURL returns the callback URL on r's host: https when r came
// over TLS, http otherwise. It refuses a Host that is not a plain
// host[:port].
func (g *Gate) redirectURL(r *http.Request) (string, bool) {
	host := r.Host
	if host == "" || len(host) > MaxHostBytes {
		return "", false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']') {
			return "", false
		}
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + host + g.callback, true
}

// returnPath returns where to send the browser after sign-in: r's path
// and query, or its path alone when that is too long, or "/" when neither
// is a [safeReturnPath] or the path is the callback's.
func (g *Gate) returnPath(r *http.Request) string {
	if r.URL.Path == g.callback {
		return "/"
	}
	if u := r.URL.RequestURI(); safeReturnPath(u) {
		return u
	}
	if u := r.URL.EscapedPath(); safeReturnPath(u) {
		return u
	}
	return "/"
}

// b64 is base64url without padding.
func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
