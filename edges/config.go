package edges

import (
	"crypto/tls"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/policy"
)

// This file holds the runtime configuration an edge proxy applies: each
// module that is set and enabled, typed, with defaults resolved. A module
// that is not set, or is disabled, is nil (Compression: false).

// IPRestrictionConfig is an enabled IP restriction module, ready to answer
// whether a source address may connect.
type IPRestrictionConfig struct {
	// PolicyIDs are the module's IP policies, in order.
	PolicyIDs []string
	set       *ipaccess.Set
}

// NewIPRestrictionConfig returns the runtime form of an IP restriction
// naming policyIDs, whose combined rules are set.
func NewIPRestrictionConfig(policyIDs []string, set *ipaccess.Set) *IPRestrictionConfig {
	return &IPRestrictionConfig{PolicyIDs: append([]string(nil), policyIDs...), set: set}
}

// Allowed reports whether a connection from ip may proceed: deny rules of
// the policies win; when they have any allow rule, an address no rule
// matches is refused (see [ipaccess.Set.Allowed]). A nil
// IPRestrictionConfig (no module, or a disabled one) allows every valid
// address; the zero Addr is never allowed.
func (c *IPRestrictionConfig) Allowed(ip netip.Addr) bool {
	if c == nil {
		return ip.IsValid()
	}
	return c.set.Allowed(ip)
}

// OIDCConfig is an enabled OIDC module with its defaults resolved.
type OIDCConfig struct {
	// Issuer is the provider's URL, the base of discovery.
	Issuer string
	// ClientID and ClientSecret identify the OIDC app.
	ClientID, ClientSecret string
	// Scopes are requested from the provider.
	Scopes []string
	// CookiePrefix is the session cookie prefix in force
	// ([DefaultCookiePrefix] unless the module sets one).
	CookiePrefix string
	// OptionsPassthrough lets OPTIONS requests through unauthenticated.
	OptionsPassthrough bool
	// InactivityTimeout ends a session after this much inactivity; 0 means
	// no limit.
	InactivityTimeout time.Duration
	// MaximumDuration ends a session this long after it began; 0 means no
	// limit.
	MaximumDuration time.Duration
}

// Config returns the runtime form of m, or nil when m is nil or disabled.
func (m *OIDC) Config() *OIDCConfig {
	if m == nil || !m.Enabled {
		return nil
	}
	return &OIDCConfig{
		Issuer:             m.Issuer,
		ClientID:           m.ClientID,
		ClientSecret:       m.ClientSecret,
		Scopes:             append([]string{}, m.Scopes...),
		CookiePrefix:       m.EffectiveCookiePrefix(),
		OptionsPassthrough: m.OptionsPassthrough,
		InactivityTimeout:  time.Duration(m.InactivityTimeout) * time.Second,
		MaximumDuration:    time.Duration(m.MaximumDuration) * time.Second,
	}
}

// BackendConfig is an enabled backend module.
type BackendConfig struct {
	// BackendID is the tunnel group backend that serves the traffic.
	BackendID string
}

// Config returns the runtime form of m, or nil when m is nil or disabled.
func (m *Backend) Config() *BackendConfig {
	if m == nil || !m.Enabled {
		return nil
	}
	return &BackendConfig{BackendID: m.Backend.ID}
}

// ResponseHeadersConfig is an enabled response headers module.
type ResponseHeadersConfig struct {
	// Add maps lower-cased header names to the values set on responses.
	Add map[string]string
	// Remove lists lower-cased header names removed from responses.
	Remove []string
}

// Config returns the runtime form of m, or nil when m is nil or disabled.
func (m *ResponseHeaders) Config() *ResponseHeadersConfig {
	if m == nil || !m.Enabled {
		return nil
	}
	c := &ResponseHeadersConfig{Add: make(map[string]string, len(m.Add)), Remove: append([]string{}, m.Remove...)}
	for k, v := range m.Add {
		c.Add[k] = v
	}
	return c
}

// Apply edits the header of a response to the HTTP client: it deletes
// every header of Remove, then sets each header of Add, replacing any
// value the upstream sent. A nil c changes nothing.
func (c *ResponseHeadersConfig) Apply(h http.Header) {
	if c == nil {
		return
	}
	for _, name := range c.Remove {
		h.Del(name)
	}
	for name, value := range c.Add {
		h.Set(name, value)
	}
}

// HTTPSRouteConfig is what an edge proxy applies to the requests a route
// of an HTTPS edge matches.
type HTTPSRouteConfig struct {
	// AccountID owns the edge.
	AccountID string
	// EdgeID and RouteID identify the route.
	EdgeID, RouteID string
	// MatchType and Match say which requests the route takes.
	MatchType, Match string
	// OIDC is nil unless the OIDC module is set and enabled.
	OIDC *OIDCConfig
	// Backend is nil unless the backend module is set and enabled.
	Backend *BackendConfig
	// ResponseHeaders is nil unless the module is set and enabled.
	ResponseHeaders *ResponseHeadersConfig
	// Compression is true when the compression module is set and enabled.
	Compression bool
	// TrafficPolicy is the route's traffic policy compiled for HTTP, nil
	// unless the module is set and enabled. Run it on each request with
	// [policy.Policy.Inbound] (and [policy.Policy.Outbound] on the
	// upstream's response), or wrap a handler with [policy.Policy.Handler].
	// [NewHTTPSRouteConfig] leaves it nil: compiling needs the Service's
	// policy engine, and the Service's configs fill it.
	TrafficPolicy *policy.Policy
	// IPPolicyIDs are the IP policies whose rules TrafficPolicy was
	// compiled with (named by its restrict-ips actions),
	// sorted and without repeats; empty when TrafficPolicy is nil. A proxy
	// that caches the config rebuilds it when one of them, or one of their
	// rules, changes. [NewHTTPSRouteConfig] leaves it nil, as it leaves
	// TrafficPolicy.
	IPPolicyIDs []string
}

// NewHTTPSRouteConfig returns the runtime form of a stored route.
func NewHTTPSRouteConfig(accountID string, r *HTTPSRoute) *HTTPSRouteConfig {
	return &HTTPSRouteConfig{
		AccountID:       accountID,
		EdgeID:          r.EdgeID,
		RouteID:         r.ID,
		MatchType:       r.MatchType,
		Match:           r.Match,
		OIDC:            r.OIDC.Config(),
		Backend:         r.Backend.Config(),
		ResponseHeaders: r.ResponseHeaders.Config(),
		Compression:     r.Compression != nil && r.Compression.Enabled,
	}
}

// Matches reports whether the route takes a request for path: equal to
// Match for exact_path, starting with Match for path_prefix (a plain
// string prefix: /api matches /api, /api/v1 and /apis).
func (c *HTTPSRouteConfig) Matches(path string) bool {
	if c.MatchType == MatchExactPath {
		return path == c.Match
	}
	return strings.HasPrefix(path, c.Match)
}

// HTTPSEdgeConfig is what an edge proxy applies to an HTTPS edge: its
// routes, in the order they are tried.
type HTTPSEdgeConfig struct {
	// AccountID owns the edge.
	AccountID string
	// EdgeID identifies the edge.
	EdgeID string
	// Hostports are the host:port addresses the edge serves, in canonical
	// form ([ParseHostport]); an edge proxy routes a request to the edge
	// by the hostport it was addressed to. [NewHTTPSEdgeConfig] leaves it
	// nil; the Service's configs fill it.
	Hostports []string
	// Routes are tried in order: exact_path routes first, then path_prefix
	// routes from the longest match to the shortest (ties by route ID).
	// Treat it as read-only: [HTTPSEdgeConfig.Route] uses an index built
	// from it by [NewHTTPSEdgeConfig].
	Routes []*HTTPSRouteConfig

	exact    map[string]*HTTPSRouteConfig // exact_path routes by match
	prefixes []*HTTPSRouteConfig          // path_prefix routes, longest first
}

// NewHTTPSEdgeConfig returns the runtime form of an edge and its routes,
// the routes sorted into matching order.
func NewHTTPSEdgeConfig(accountID, edgeID string, routes []*HTTPSRouteConfig) *HTTPSEdgeConfig {
	rs := append([]*HTTPSRouteConfig{}, routes...)
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if (a.MatchType == MatchExactPath) != (b.MatchType == MatchExactPath) {
			return a.MatchType == MatchExactPath
		}
		if len(a.Match) != len(b.Match) {
			return len(a.Match) > len(b.Match)
		}
		return a.RouteID < b.RouteID
	})
	c := &HTTPSEdgeConfig{AccountID: accountID, EdgeID: edgeID, Routes: rs, exact: map[string]*HTTPSRouteConfig{}}
	for _, r := range rs {
		if r.MatchType == MatchExactPath {
			if _, dup := c.exact[r.Match]; !dup {
				c.exact[r.Match] = r
			}
			continue
		}
		c.prefixes = append(c.prefixes, r)
	}
	return c
}

// Route returns the route that takes a request for path (the first that
// [HTTPSRouteConfig.Matches] it, in [HTTPSEdgeConfig.Routes] order), or nil
// when none does.
// A lookup is one map probe and a scan of the prefix routes; it does not
// allocate.
func (c *HTTPSEdgeConfig) Route(path string) *HTTPSRouteConfig {
	if c.exact == nil { // built by hand, not by NewHTTPSEdgeConfig
		for _, r := range c.Routes {
			if r.Matches(path) {
				return r
			}
		}
		return nil
	}
	if r, ok := c.exact[path]; ok {
		return r
	}
	for _, r := range c.prefixes {
		if strings.HasPrefix(path, r.Match) {
			return r
		}
	}
	return nil
}

// TCPEdgeConfig is what an edge proxy applies to a TCP edge.
type TCPEdgeConfig struct {
	// AccountID owns the edge.
	AccountID string
	// EdgeID identifies the edge.
	EdgeID string
	// Hostports are the host:port addresses the edge serves, in canonical
	// form; an edge proxy serves the edge on their ports (a TCP port
	// serves one TCP edge in the store).
	Hostports []string
	// IPRestriction is nil unless the module is set and enabled; its
	// Allowed method works on nil too.
	IPRestriction *IPRestrictionConfig
	// Backend is nil unless the backend module is set and enabled.
	Backend *BackendConfig
}

// IPPolicyIDs returns the IP policies whose rules the config was built
// with, sorted and without repeats: a proxy that caches the config
// rebuilds it when one of them, or one of their rules, changes.
func (c *TCPEdgeConfig) IPPolicyIDs() []string { return c.IPRestriction.policyIDs(nil) }

// policyIDs returns extra and the restriction's policies, sorted and
// without repeats; a nil c has none.
func (c *IPRestrictionConfig) policyIDs(extra []string) []string {
	ids := slices.Clone(extra)
	if c != nil {
		ids = append(ids, c.PolicyIDs...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// TLSVersion returns the crypto/tls constant of a min_version value
// ("1.0" to "1.3"), or 0 for anything else.
func TLSVersion(v string) uint16 {
	switch v {
	case "1.0":
		return tls.VersionTLS10
	case "1.1":
		return tls.VersionTLS11
	case "1.2":
		return tls.VersionTLS12
	case "1.3":
		return tls.VersionTLS13
	}
	return 0
}

// TLSEdgeConfig is what an edge proxy applies to a TLS edge.
type TLSEdgeConfig struct {
	// AccountID owns the edge.
	AccountID string
	// EdgeID identifies the edge.
	EdgeID string
	// Hostports are the host:port addresses the edge serves, in canonical
	// form; an edge proxy picks the edge by a ClientHello's server name.
	// [NewTLSEdgeConfig] leaves it nil; the Service's configs fill it.
	Hostports []string
	// IPRestriction is nil unless the module is set and enabled; its
	// Allowed method works on nil too.
	IPRestriction *IPRestrictionConfig
	// TrafficPolicy is the compiled traffic policy, nil unless the module
	// is set and enabled. Run it on each new connection with
	// [policy.Policy.Connect].
	TrafficPolicy *policy.Policy
	// PolicyIPPolicyIDs are the IP policies TrafficPolicy was compiled
	// with (named by its restrict-ips actions). [NewTLSEdgeConfig] leaves
	// it nil, as it leaves Hostports.
	PolicyIPPolicyIDs []string
	// TerminateAt is [TerminateAtEdge] or [TerminateAtUpstream]: edge
	// unless an enabled TLS termination module says upstream.
	TerminateAt string
	// MinVersion is the minimum TLS version as a crypto/tls constant
	// (tls.VersionTLS12 by default); 0 when TLS terminates upstream.
	MinVersion uint16
	// Backend is nil unless the backend module is set and enabled.
	Backend *BackendConfig
}

// IPPolicyIDs returns the IP policies whose rules the config was built
// with (the IP restriction's and the traffic policy's), sorted and
// without repeats: a proxy that caches the config rebuilds it when one of
// them, or one of their rules, changes.
func (c *TLSEdgeConfig) IPPolicyIDs() []string {
	return c.IPRestriction.policyIDs(c.PolicyIPPolicyIDs)
}

// NewTLSEdgeConfig returns the runtime form of a stored TLS edge, given
// the runtime forms of its IP restriction and traffic policy modules
// (which need the Service: IP policy rules and the policy engine).
func NewTLSEdgeConfig(accountID string, e *TLSEdge, ipr *IPRestrictionConfig, pol *policy.Policy) *TLSEdgeConfig {
	c := &TLSEdgeConfig{AccountID: accountID, EdgeID: e.ID, IPRestriction: ipr, TrafficPolicy: pol,
		TerminateAt: TerminateAtEdge, MinVersion: TLSVersion(DefaultMinTLSVersion), Backend: e.Backend.Config()}
	if m := e.TLSTermination; m != nil && m.Enabled {
		c.TerminateAt = m.TerminateAt
		c.MinVersion = TLSVersion(m.EffectiveMinVersion())
	}
	return c
}
