// Package oidcauth applies an HTTPS route's OIDC module ([edgeconfig.OIDC])
// to HTTP requests: a [Gate] lets through requests that carry a valid
// session cookie and sends the others to the OpenID Connect provider to
// sign in. It is the OIDC part of the edge proxy (package proxy wires a
// Gate into each route that has the module).
//
// # Flow
//
// A request without a valid session is redirected (302) to the provider's
// authorization endpoint, found by discovery at the module's issuer
// (authorization-code flow, PKCE with S256, a random state and nonce, the
// scopes "openid" and the module's scopes). The pending sign-in (state,
// nonce, PKCE verifier, and the same-host URL the request was for) is kept
// in a short-lived login cookie. The provider sends the browser back to the
// callback path on the edge's host, [DefaultCallbackPath]
// ("/.service/oidc/callback") unless [Options.CallbackPath] says otherwise;
// register https://<edge host>/.service/oidc/callback as the app's
// redirect URI. [Gate.ServeCallback] checks the state against the login
// cookie (and deletes it: a sign-in completes once), exchanges the code
// with the PKCE verifier, verifies the ID token (signature against the
// issuer's JWKS, issuer, audience = client ID, expiry, nonce), sets the
// session cookie and redirects (303) back to the original URL. That URL is
// only ever a relative path on the same host (no open redirect).
//
// A proxy calls [Gate.Check] on each request of the route (or wraps the
// route's handler with [Gate.Wrap]). When an edge has several OIDC routes,
// the proxy hands a request for the callback path to the Gate whose
// [Gate.IsCallback] is true, whichever route the path would match:
//
//	providers := oidcauth.NewProviders(oidcauth.ProvidersOptions{}) // one per proxy: public providers only
//	gate, err := oidcauth.New(routeConfig.OIDC, oidcauth.Options{
//		Key:       sealingKey, // the proxy's 32-byte sealing key
//		Scope:     edgeID + "/" + routeID,
//		Providers: providers,
//	})
//	...
//	oidcauth.StripHeaders(r.Header) // every request, every route
//	for _, g := range edgeGates {   // before route matching
//		if g.IsCallback(r) {
//			g.ServeCallback(w, r)
//			return
//		}
//	}
//	id, ok := gate.Check(w, r) // the matched route's Gate
//	if !ok {
//		return // Check answered: redirect, callback or error
//	}
//	// id (possibly zero: OPTIONS passthrough) goes to the traffic policy;
//	// r carries the identity headers; keep any Set-Cookie Check added.
//
// # Sessions
//
// The session cookie is named cookie_prefix + "session." + a tag derived
// from [Options.Scope] ([Gate.SessionCookieName]), with Path=/, HttpOnly,
// SameSite=Lax, and Secure when the request came over TLS (always for the
// prefixes __Secure- and __Host-). It holds the identity, the sign-in time
// and the last-seen time, encrypted and authenticated with
// XChaCha20-Poly1305 (golang.org/x/crypto/chacha20poly1305; 192-bit random
// nonces, so cookies can be minted under one key for years without nonce
// reuse) under a key derived with HKDF-SHA256 from [Options.Key], the
// route's scope, the issuer and the client ID. A cookie of another route,
// edge, issuer or client ID does not open, and neither does a login cookie
// read as a session or the reverse. A value that does not open or parse is
// ignored: the request is treated as having no session.
//
// inactivity_timeout ends a session when no request used it for that long:
// the last-seen time slides, rewritten (a new Set-Cookie) at most every
// tenth of the timeout, between 1 second and [MaxRefreshInterval], so a
// session may end up to that interval early. maximum_duration ends a
// session that long after sign-in, however active. An ended session is
// sent back to the provider like a missing one. With neither limit the
// cookie has no Max-Age (it lasts the browser session) and the session
// does not expire.
//
// options_passthrough lets OPTIONS requests (CORS preflight) through
// without a session; they get no identity.
//
// # Identity
//
// [Gate.Check] returns the [Identity] (issuer, subject, email,
// email_verified, name, preferred_username, sign-in time); [Gate.Wrap]
// puts it in the request's context ([FromContext]). Both set it on the
// request in these headers, for the upstream:
//
//	Service-OIDC-Subject              sub claim (never empty)
//	Service-OIDC-Issuer               the route's issuer URL
//	Service-OIDC-Email                email claim (absent when none)
//	Service-OIDC-Email-Verified       "true" or "false" (absent without email)
//	Service-OIDC-Name                 name claim (absent when none)
//	Service-OIDC-Preferred-Username   preferred_username claim (absent when none)
//
// A client can never forge them: [StripHeaders] deletes every request
// header whose name starts with "Service-OIDC-" (any case), and Check
// calls it on every request before anything else. A proxy calls
// StripHeaders on the requests of routes without the module too. The
// Gate's own cookies are removed from the Cookie header of a request it
// lets through, so the upstream never sees them.
//
// # Failures
//
// The Gate fails closed: a request it cannot authenticate never reaches
// the upstream. When the provider cannot be discovered the answer is 503;
// when the token endpoint cannot be reached during a callback, 502; a
// malformed, unknown or expired callback is 400; a sign-in the provider
// refused, a code it would not exchange (a replayed code), or an ID token
// that does not verify (signature, issuer, audience, expiry, nonce; also
// when the issuer's key set cannot be fetched) is 403. Bodies are short fixed texts; causes go to
// [Options.Logger] only.
//
// Discovery is cached per issuer by [Providers], shared by the Gates of a
// proxy: one discovery per issuer in flight, whose result is kept for
// [DefaultProviderTTL] (a failure for [DefaultFailureTTL]), each call to a
// provider bounded by [DefaultTimeout]. An authenticated request never
// contacts the provider.
//
// # Provider networks
//
// Whoever configures a route chooses its issuer, and the proxy fetches
// the discovery document from it, then the key set and the token endpoint
// that document names, following redirects: left alone, a route could
// make the proxy call its own network (127.0.0.1, the cloud metadata
// service at 169.254.169.254, 10.0.0.0/8 ...) — server-side request
// forgery. So by default [Providers] connects only to public unicast
// addresses: loopback, private (RFC 1918, fc00::/7), link-local
// (169.254.0.0/16, fe80::/10), unspecified, multicast, carrier-grade NAT
// (100.64.0.0/10) and the other special-purpose ranges are refused, as are
// IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) forms of
// refused IPv4 addresses, and IPv6 outside 2000::/3. The check runs in the
// dialer, on the address actually dialled after name resolution, for
// every connection: a name that resolves to a private address (DNS
// rebinding), a redirect, the key set's and the token endpoint's hosts
// are all covered. [ProvidersOptions.AllowPrivateNetworks] lifts the
// restriction; [ProvidersOptions.Networks] replaces it with a list of the
// only networks allowed (for an IdP inside the operator's network).
//
// The restriction belongs to the transport the Providers makes: a
// [ProvidersOptions.Client] with a Transport of its own is used as is (its
// owner answers for where it connects). That default transport uses no
// HTTP proxy (HTTPS_PROXY is ignored: the dialer would only see the
// proxy's address); [ProvidersOptions.RootCAs] lets it trust a private CA.
//
// A refused connection fails the call like an unreachable provider: the
// browser gets the Gate's fixed 503 (discovery) or 502 (token endpoint)
// text, or 403 when the key set cannot be fetched, and [Options.Logger]
// gets the cause, which wraps [ErrAddressNotAllowed] and names the address
// and why ("127.0.0.1 is loopback", "10.1.2.3 is outside
// ProvidersOptions.Networks").
//
// # Limits
//
//   - Cookie values written or read: at most [MaxCookieBytes] (4096)
//     bytes; a session cookie is at most about 1.5 KB (four claims of at
//     most [MaxClaimBytes], 255, bytes each).
//   - Claims: sub must be 1 to 255 bytes of UTF-8 without control
//     characters or the sign-in is refused; email, name and
//     preferred_username that are not are dropped.
//   - Pending sign-ins: at most [MaxPendingLogins] (8) per browser and
//     route, each a cookie scoped to the callback path that expires after
//     [LoginTimeout] (10 minutes); the URL to return to is at most
//     [MaxReturnPathBytes] (2048) bytes (else its path alone, else "/").
//   - Callback: query at most [MaxCallbackQueryBytes] (8192) bytes, code at
//     most [MaxCodeBytes] (2048) bytes; Host at most [MaxHostBytes].
//   - Provider responses (discovery, JWKS, token): at most
//     [MaxProviderResponseBytes] (1 MiB) of body and, through the default
//     transport, [MaxProviderHeaderBytes] (64 KiB) of headers each, each
//     call within [ProvidersOptions.Timeout] (default 10s).
//   - Discovery cache: at most [ProvidersOptions.MaxIssuers] issuers
//     (default 256), least recently used dropped first.
//   - Provider addresses: public unicast only, unless
//     [ProvidersOptions.AllowPrivateNetworks] or
//     [ProvidersOptions.Networks] say otherwise (see # Provider networks);
//     not enforced on a Client with its own Transport.
//   - Provider redirects: at most [MaxProviderRedirects] (3) per call, never
//     from https to http; each target is dialled through the same check.
//   - The redirect URI's scheme is https when the request reached the
//     proxy over TLS (r.TLS set) and http otherwise; a proxy behind
//     another TLS terminator must present requests accordingly.
//   - There is no server-side session store: a session cookie copied from
//     a browser is valid until it ends (inactivity or maximum duration);
//     a route with neither limit has sessions that never end. Signing out
//     at the provider does not end the session here.
package oidcauth
