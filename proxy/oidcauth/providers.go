package oidcauth

import (
	"container/list"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// Defaults of [ProvidersOptions].
const (
	// DefaultMaxIssuers is how many issuers' discovery documents a
	// [Providers] keeps when MaxIssuers is 0.
	DefaultMaxIssuers = 256
	// DefaultProviderTTL is how long a discovered provider is used before
	// discovery runs again, when TTL is 0.
	DefaultProviderTTL = time.Hour
	// DefaultFailureTTL is how long a failed discovery is remembered (and
	// answered without contacting the issuer again) when FailureTTL is 0.
	DefaultFailureTTL = 5 * time.Second
	// DefaultTimeout bounds each call to a provider (discovery, token
	// exchange, key set fetch) when Timeout is 0.
	DefaultTimeout = 10 * time.Second
)

// MaxProviderResponseBytes bounds the body of every response read from a
// provider (discovery document, key set, token response); a longer body
// fails the call.
const MaxProviderResponseBytes = 1 << 20

// MaxProviderHeaderBytes bounds the status line and headers of every
// response read from a provider through the default transport (net/http's
// own bound is 10 MiB); longer ones fail the call.
const MaxProviderHeaderBytes = 64 << 10

// errProviderTooLarge is the error of reading past MaxProviderResponseBytes.
var errProviderTooLarge = errors.New("provider response too large")

// ProvidersOptions configure [NewProviders]. The zero value means the
// documented defaults.
type ProvidersOptions struct {
	// Client reaches the providers. Nil means a client of the package's
	// own. The client is copied: its Transport is wrapped to bound response
	// bodies to [MaxProviderResponseBytes], its Timeout, when 0, is set to
	// Timeout, and its redirects are limited (see [MaxProviderRedirects];
	// its own CheckRedirect, if any, runs after that).
	//
	// When the client's Transport is nil, the Providers uses a transport
	// of its own, like http.DefaultTransport but without an HTTP proxy,
	// that enforces AllowPrivateNetworks and Networks. A Transport of the
	// caller's is used as is: it connects wherever it does, and
	// AllowPrivateNetworks, Networks and RootCAs do not apply to it (the
	// caller answers for where it connects, as with
	// proxy.HandlerOptions.Transport).
	Client *http.Client
	// AllowPrivateNetworks lets the default transport connect to any
	// address. When false (the default), it connects only to public
	// unicast addresses: not loopback, private (RFC 1918, fc00::/7),
	// link-local (169.254.0.0/16, where cloud metadata services live,
	// fe80::/10), unspecified, multicast, carrier-grade NAT
	// (100.64.0.0/10) or another special-purpose range. The issuer is
	// chosen by whoever configures a route, and the discovery document
	// names further URLs (key set, token endpoint) that are fetched too;
	// without the restriction they could make the proxy call its own
	// network. The check is on the address dialled, after name
	// resolution, for every connection (redirects, key set and token
	// endpoint included); a refused call fails with
	// [ErrAddressNotAllowed] in its chain. Ignored when Networks is set.
	AllowPrivateNetworks bool
	// Networks, when not empty, are the only networks the default
	// transport connects to, private or not (an IPv4-mapped prefix counts
	// as its IPv4 network); it replaces the public-only rule, so list
	// only what is meant (an IdP inside the operator's network, say).
	// Invalid prefixes are ignored.
	Networks []netip.Prefix
	// RootCAs, when not nil, are the certificate authorities the default
	// transport trusts instead of the system's (a provider with a private
	// CA keeps the network restriction this way, where a Client with its
	// own Transport would lose it).
	RootCAs *x509.CertPool
	// MaxIssuers bounds the cache; the least recently used issuer is
	// dropped beyond it. 0 means [DefaultMaxIssuers].
	MaxIssuers int
	// TTL is how long a discovered provider is used; 0 means
	// [DefaultProviderTTL].
	TTL time.Duration
	// FailureTTL is how long a failed discovery is remembered; 0 means
	// [DefaultFailureTTL].
	FailureTTL time.Duration
	// Timeout bounds each call to a provider; 0 means [DefaultTimeout].
	Timeout time.Duration
	// Now is the clock for TTLs; nil means time.Now. (Timeouts of calls in
	// flight use real time.)
	Now func() time.Time
}

// Providers caches OIDC discovery per issuer URL, for every [Gate] that
// shares it (a proxy makes one). A lookup that finds nothing starts one
// discovery for that issuer, bounded by the timeout, which concurrent
// lookups of the same issuer wait for; a lookup never waits longer than
// its own context allows. The discovered provider also caches the
// issuer's key set (refetched when a token names an unknown key). Unless
// its options say otherwise, it connects to public addresses only (see
// [ProvidersOptions.AllowPrivateNetworks] and the package doc's
// # Provider networks). Providers is safe for concurrent use.
type Providers struct {
	client     *http.Client
	max        int
	ttl        time.Duration
	failureTTL time.Duration
	timeout    time.Duration
	now        func() time.Time

	mu      sync.Mutex
	entries map[string]*providerEntry
	lru     list.List // of *providerEntry, most recently used first
}

// providerEntry is one issuer's discovery, done or in flight.
type providerEntry struct {
	issuer string
	elem   *list.Element
	done   chan struct{} // closed when p, err and at are set
	p      *oidc.Provider
	err    error
	at     time.Time
}

// NewProviders returns an empty cache configured by opts.
func NewProviders(opts ProvidersOptions) *Providers {
	ps := &Providers{
		max:        opts.MaxIssuers,
		ttl:        opts.TTL,
		failureTTL: opts.FailureTTL,
		timeout:    opts.Timeout,
		now:        opts.Now,
		entries:    make(map[string]*providerEntry),
	}
	if ps.max <= 0 {
		ps.max = DefaultMaxIssuers
	}
	if ps.ttl <= 0 {
		ps.ttl = DefaultProviderTTL
	}
	if ps.failureTTL <= 0 {
		ps.failureTTL = DefaultFailureTTL
	}
	if ps.timeout <= 0 {
		ps.timeout = DefaultTimeout
	}
	if ps.now == nil {
		ps.now = time.Now
	}
	c := &http.Client{}
	if opts.Client != nil {
		*c = *opts.Client
	}
	base := c.Transport
	if base == nil {
		base = defaultTransport(newAddressPolicy(opts), opts)
	}
	c.Transport = limitTransport{base: base}
	c.CheckRedirect = limitRedirects(c.CheckRedirect)
	if c.Timeout == 0 {
		c.Timeout = ps.timeout
	}
	ps.client = c
	return ps
}

// Len returns the number of issuers cached, done or in flight.
func (ps *Providers) Len() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.entries)
}

// provider returns the discovered provider of issuer, discovering it when
// it is not cached or its entry is stale.
func (ps *Providers) provider(ctx context.Context, issuer string) (*oidc.Provider, error) {
	ps.mu.Lock()
	e := ps.entries[issuer]
	if e != nil {
		select {
		case <-e.done:
			ttl := ps.ttl
			if e.err != nil {
				ttl = ps.failureTTL
			}
			if age := ps.now().Sub(e.at); age < 0 || age >= ttl {
				ps.remove(e)
				e = nil
			}
		default:
		}
	}
	if e == nil {
		e = &providerEntry{issuer: issuer, done: make(chan struct{})}
		e.elem = ps.lru.PushFront(e)
		ps.entries[issuer] = e
		for len(ps.entries) > ps.max {
			ps.remove(ps.lru.Back().Value.(*providerEntry))
		}
		go ps.discover(e)
	} else {
		ps.lru.MoveToFront(e.elem)
	}
	ps.mu.Unlock()

	select {
	case <-e.done:
		return e.p, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// remove drops e from the cache; ps.mu is held. Waiters holding e still
// get its result.
func (ps *Providers) remove(e *providerEntry) {
	ps.lru.Remove(e.elem)
	if ps.entries[e.issuer] == e {
		delete(ps.entries, e.issuer)
	}
}

// discover runs e's discovery, detached from any request so that one
// client going away does not fail the others waiting, and bounded by the
// timeout.
func (ps *Providers) discover(e *providerEntry) {
	ctx, cancel := context.WithTimeout(ps.clientContext(context.Background()), ps.timeout)
	defer cancel()
	p, err := oidc.NewProvider(ctx, e.issuer)
	e.p, e.err, e.at = p, err, ps.now()
	close(e.done)
}

// clientContext returns ctx carrying the client for go-oidc and oauth2.
func (ps *Providers) clientContext(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, ps.client)
}

// limitTransport bounds every response body to MaxProviderResponseBytes.
type limitTransport struct{ base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if res.ContentLength > MaxProviderResponseBytes {
		res.Body.Close()
		return nil, errProviderTooLarge
	}
	res.Body = &limitedBody{rc: res.Body, n: MaxProviderResponseBytes}
	return res, nil
}

// limitedBody fails a read past n bytes.
type limitedBody struct {
	rc io.ReadCloser
	n  int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.n < 0 {
		return 0, errProviderTooLarge
	}
	if int64(len(p)) > b.n+1 {
		p = p[:b.n+1]
	}
	n, err := b.rc.Read(p)
	b.n -= int64(n)
	if b.n < 0 {
		return 0, errProviderTooLarge
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
