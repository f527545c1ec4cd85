package oidcauth

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// Identity is who a session belongs to: the claims of the ID token the
// provider issued at sign-in. The zero Identity is "not authenticated".
type Identity struct {
	// Issuer is the provider's issuer URL (the route's configured issuer).
	Issuer string
	// Subject is the ID token's sub claim: the user's stable identifier at
	// the issuer. Never empty for an authenticated identity.
	Subject string
	// Email is the email claim, "" when the token had none.
	Email string
	// EmailVerified is the email_verified claim.
	EmailVerified bool
	// Name is the name claim, "" when the token had none.
	Name string
	// PreferredUsername is the preferred_username claim, "" when the token
	// had none.
	PreferredUsername string
	// LoginTime is when the user signed in (second precision); zero when
	// not authenticated.
	LoginTime time.Time
}

// Authenticated reports whether id is a signed-in user's identity.
func (id Identity) Authenticated() bool { return id.Subject != "" }

// Headers that carry an [Identity] to the upstream. Header names are
// case-insensitive; these are Go's canonical forms (a request may spell
// them Service-OIDC-Subject and so on). Values are UTF-8 without control
// characters, each at most [MaxClaimBytes].
const (
	// HeaderPrefix starts every identity header. [StripHeaders] removes
	// every request header with this prefix, known or not.
	HeaderPrefix = "Service-Oidc-"
	// HeaderSubject carries [Identity.Subject].
	HeaderSubject = "Service-Oidc-Subject"
	// HeaderIssuer carries [Identity.Issuer].
	HeaderIssuer = "Service-Oidc-Issuer"
	// HeaderEmail carries [Identity.Email]; absent when empty.
	HeaderEmail = "Service-Oidc-Email"
	// HeaderEmailVerified is "true" or "false" ([Identity.EmailVerified]);
	// absent when there is no email.
	HeaderEmailVerified = "Service-Oidc-Email-Verified"
	// HeaderName carries [Identity.Name]; absent when empty.
	HeaderName = "Service-Oidc-Name"
	// HeaderPreferredUsername carries [Identity.PreferredUsername]; absent
	// when empty.
	HeaderPreferredUsername = "Service-Oidc-Preferred-Username"
)

// StripHeaders deletes from h every header whose name starts with
// [HeaderPrefix], in any case: what a client sent under those names never
// reaches the upstream. A proxy calls it on every request of every route,
// with or without an OIDC module ([Gate.Check] calls it too).
func StripHeaders(h http.Header) {
	for k := range h {
		if len(k) >= len(HeaderPrefix) && strings.EqualFold(k[:len(HeaderPrefix)], HeaderPrefix) {
			delete(h, k)
		}
	}
}

// SetHeaders strips h ([StripHeaders]) and, when id is authenticated, sets
// the identity headers from it. Empty fields are not sent.
func SetHeaders(h http.Header, id Identity) {
	StripHeaders(h)
	if !id.Authenticated() {
		return
	}
	h[HeaderSubject] = []string{id.Subject}
	h[HeaderIssuer] = []string{id.Issuer}
	if id.Email != "" {
		h[HeaderEmail] = []string{id.Email}
		v := "false"
		if id.EmailVerified {
			v = "true"
		}
		h[HeaderEmailVerified] = []string{v}
	}
	if id.Name != "" {
		h[HeaderName] = []string{id.Name}
	}
	if id.PreferredUsername != "" {
		h[HeaderPreferredUsername] = []string{id.PreferredUsername}
	}
}

// contextKey is the type of this package's context keys.
type contextKey int

// identityKey is the context key of an Identity.
const identityKey contextKey = 0

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey, id)
}

// FromContext returns the Identity that [NewContext] (or [Gate.Wrap])
// stored in ctx, and whether there was one.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey).(Identity)
	return id, ok
}
