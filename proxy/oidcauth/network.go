package oidcauth

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/edgeplane/edgeplane/internal/netguard"
)

// MaxProviderRedirects is how many redirects a call to a provider
// (discovery, key set, token) follows; one more fails the call.
const MaxProviderRedirects = 3

// ErrAddressNotAllowed is the cause (under errors.Is) of a provider call
// that the network restriction of [ProvidersOptions] refused: the address
// the default transport was about to connect to, after name resolution,
// is not a public one (or is outside [ProvidersOptions.Networks]). The
// full error names the address and why; it goes to the Gate's logger,
// never to the browser.
var ErrAddressNotAllowed = errors.New("oidcauth: provider address not allowed")

// errRedirectLimit and errRedirectDowngrade stop a provider's redirects.
var (
	errRedirectLimit     = fmt.Errorf("oidcauth: provider redirected more than %d times", MaxProviderRedirects)
	errRedirectDowngrade = errors.New("oidcauth: provider redirected from https to http")
)

// addressPolicy decides which addresses the default transport connects
// to: package internal/netguard's policy (shared with event delivery),
// with errors that name this package's options.
type addressPolicy struct {
	guard      *netguard.Policy
	restricted bool // Networks are set: only they are allowed
}

// newAddressPolicy returns the policy of opts, or nil when opts allow every
// address (AllowPrivateNetworks without Networks).
func newAddressPolicy(opts ProvidersOptions) *addressPolicy {
	if len(opts.Networks) == 0 && opts.AllowPrivateNetworks {
		return nil
	}
	return &addressPolicy{guard: netguard.New(opts.Networks), restricted: len(opts.Networks) > 0}
}

// check returns nil when a may be dialled, else an error wrapping
// ErrAddressNotAllowed that says why.
func (p *addressPolicy) check(a netip.Addr) error {
	switch reason := p.guard.Check(a); {
	case reason == "":
		return nil
	case p.restricted:
		return fmt.Errorf("%w: %s is outside ProvidersOptions.Networks", ErrAddressNotAllowed, a.Unmap().WithZone(""))
	default:
		return fmt.Errorf("%w: %s (see ProvidersOptions.AllowPrivateNetworks and Networks)", ErrAddressNotAllowed, reason)
	}
}

// control is the net.Dialer Control function of the default transport:
// it runs on every address actually dialled (each address a name resolves
// to, each redirect's target, the key set's and the token endpoint's
// hosts), before the connection is attempted.
func (p *addressPolicy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q is not an IP address and port", ErrAddressNotAllowed, address)
	}
	return p.check(ap.Addr())
}

// defaultTransport returns the transport of a Providers whose client has
// none: http.DefaultTransport's settings, without an HTTP proxy (the
// proxy's address would be the only one checked), reading at most
// MaxProviderHeaderBytes of a response's headers, trusting rootCAs when
// set, and dialling through policy when it is not nil.
func defaultTransport(policy *addressPolicy, opts ProvidersOptions) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if policy != nil {
		d.Control = policy.control
	}
	t := &http.Transport{
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		MaxResponseHeaderBytes: MaxProviderHeaderBytes,
	}
	if opts.RootCAs != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: opts.RootCAs}
	}
	return t
}

// limitRedirects returns the CheckRedirect of a Providers' client: at most
// MaxProviderRedirects redirects, never from https to http, then next
// (the caller's own check) when not nil.
func limitRedirects(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > MaxProviderRedirects {
			return errRedirectLimit
		}
		if len(via) > 0 && via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
			return errRedirectDowngrade
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
}

// nonPublic returns why a is not a public unicast address, or "" when it
// is one (package internal/netguard's table, shared with event delivery).
func nonPublic(a netip.Addr) string { return netguard.NonPublic(a) }
