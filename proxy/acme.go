package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mholt/acmez/v3"
	"github.com/mholt/acmez/v3/acme"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/ratelimit"
)

// ACME challenges (see the package doc's # Certificates from ACME): the
// certificate manager (package certmanager) stores each pending
// challenge in the store, and every proxy answers it, whichever the CA
// reaches.

// acmeChallengePath starts the path of HTTP-01 validation requests.
const acmeChallengePath = "/.well-known/acme-challenge/"

// acmeTimeout bounds the store read of a challenge.
const acmeTimeout = 5 * time.Second

// The bound of the store reads HTTP-01 requests cause: per client
// address, ACMEChallengeLimit requests in ACMEChallengeWindow (a CA
// validates a name with a few requests from each of its vantage points).
// Beyond it a client gets 429, without a store read.
const (
	ACMEChallengeLimit  = 60
	ACMEChallengeWindow = 10 * time.Second
)

// newACMELimiter returns the limiter of HTTP-01 requests.
func newACMELimiter() *ratelimit.Limiter {
	l, err := ratelimit.New(ratelimit.Options{Capacity: ACMEChallengeLimit, Window: ACMEChallengeWindow})
	if err != nil {
		panic(err) // constant options
	}
	return l
}

// serveACMEHTTP answers an HTTP-01 validation request for host from the
// store's challenge records, and reports true; a request that is not one,
// or names no pending challenge, is left to the edges (false): an
// upstream may answer its own ACME client's challenges.
func (h *Handler) serveACMEHTTP(w http.ResponseWriter, r *http.Request, host string, client netip.Addr) bool {
	token, ok := strings.CutPrefix(r.URL.Path, acmeChallengePath)
	if !ok || token == "" || len(token) > domains.MaxACMEToken || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	if d := h.acmeLimit.AllowAt(client.String(), h.clock()); !d.Allowed {
		w.Header().Set("Retry-After", strconv.FormatInt(d.RetryAfterSeconds(), 10))
		http.Error(w, "too many ACME challenge requests from this address", http.StatusTooManyRequests)
		return true
	}
	ctx, cancel := context.WithTimeout(r.Context(), acmeTimeout)
	defer cancel()
	c, err := h.configs.host.ACMEChallenge(ctx, domains.ChallengeHTTP01, host, token)
	switch {
	case noChallenge(err):
		return false
	case err != nil:
		h.log.Warn("cannot read an ACME challenge", "host", host, "err", err)
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return true
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(c.KeyAuthorization))
	return true
}

// offersACMETLS reports whether a ClientHello asks for a TLS-ALPN-01
// validation (RFC 8737: the acme-tls/1 protocol).
func offersACMETLS(protos []string) bool { return slices.Contains(protos, acmez.ACMETLS1Protocol) }

// acmeCertificate returns the TLS-ALPN-01 validation certificate of the
// pending challenge of name; nil and no error when there is none (the
// handshake then fails with unrecognized_name, see [Handler.TLSConfig]),
// or an error when the store cannot be read (internal_error).
func (h *Handler) acmeCertificate(ctx context.Context, name string) (*tls.Certificate, error) {
	ctx, cancel := context.WithTimeout(ctx, acmeTimeout)
	defer cancel()
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	c, err := h.configs.host.ACMEChallenge(ctx, domains.ChallengeTLSALPN01, name, "")
	switch {
	case noChallenge(err):
		return nil, nil
	case err != nil:
		h.log.Warn("cannot read an ACME challenge", "host", name, "err", err)
		return nil, errReadChallenge
	}
	return acmez.TLSALPN01ChallengeCert(acme.Challenge{Identifier: acme.Identifier{Type: "dns", Value: name}, KeyAuthorization: c.KeyAuthorization})
}

// noChallenge reports whether err of [Host.ACMEChallenge] says
// that there is no such challenge: none pending, or a name or token that
// no challenge can have.
func noChallenge(err error) bool {
	return errors.Is(err, apierr.ErrNotFound) || apierr.CodeOf(err) == apierr.InvalidArgument
}

// errReadChallenge fails an acme-tls/1 handshake whose challenge cannot
// be read (logged with its cause); the client sees internal_error, not
// this text.
var errReadChallenge = errors.New("proxy: cannot read the ACME challenge of the server name")
