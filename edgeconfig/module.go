package edgeconfig

import (
	"net/http"
	"net/netip"
	"slices"
	"time"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/ipaccess"
)

// IPRestriction is an enabled IP restriction module, ready to answer
// whether a source address may connect.
type IPRestriction struct {
	// PolicyIDs are the module's IP policies, in order.
	PolicyIDs []string
	set       *ipaccess.Set
}

// NewIPRestriction returns the runtime form of an IP restriction naming
// policyIDs, whose combined rules are set.
func NewIPRestriction(policyIDs []string, set *ipaccess.Set) *IPRestriction {
	return &IPRestriction{PolicyIDs: append([]string(nil), policyIDs...), set: set}
}

// Allowed reports whether a connection from ip may proceed: deny rules of
// the policies win; when they have any allow rule, an address no rule
// matches is refused (see [ipaccess.Set.Allowed]). A nil IPRestriction
// (no module, or a disabled one) allows every valid address; the zero
// Addr is never allowed.
func (c *IPRestriction) Allowed(ip netip.Addr) bool {
	if c == nil {
		return ip.IsValid()
	}
	return c.set.Allowed(ip)
}

// policyIDs returns extra and the restriction's policies, sorted and
// without repeats; a nil c has none.
func (c *IPRestriction) policyIDs(extra []string) []string {
	ids := slices.Clone(extra)
	if c != nil {
		ids = append(ids, c.PolicyIDs...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// OIDC is an enabled OIDC module with its defaults resolved.
type OIDC struct {
	// Issuer is the provider's URL, the base of discovery.
	Issuer string
	// ClientID and ClientSecret identify the OIDC app.
	ClientID, ClientSecret string
	// Scopes are requested from the provider.
	Scopes []string
	// CookiePrefix is the session cookie prefix in force
	// ([edges.DefaultCookiePrefix] unless the module sets one).
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

// NewOIDC returns the runtime form of m, or nil when m is nil or
// disabled.
func NewOIDC(m *edges.OIDC) *OIDC {
	if m == nil || !m.Enabled {
		return nil
	}
	return &OIDC{
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

// Backend is an enabled backend module.
type Backend struct {
	// BackendID is the tunnel group backend that serves the traffic.
	BackendID string
}

// NewBackend returns the runtime form of m, or nil when m is nil or
// disabled.
func NewBackend(m *edges.Backend) *Backend {
	if m == nil || !m.Enabled {
		return nil
	}
	return &Backend{BackendID: m.Backend.ID}
}

// ResponseHeaders is an enabled response headers module.
type ResponseHeaders struct {
	// Add maps lower-cased header names to the values set on responses.
	Add map[string]string
	// Remove lists lower-cased header names removed from responses.
	Remove []string
}

// NewResponseHeaders returns the runtime form of m, or nil when m is nil
// or disabled.
func NewResponseHeaders(m *edges.ResponseHeaders) *ResponseHeaders {
	if m == nil || !m.Enabled {
		return nil
	}
	c := &ResponseHeaders{Add: make(map[string]string, len(m.Add)), Remove: append([]string{}, m.Remove...)}
	for k, v := range m.Add {
		c.Add[k] = v
	}
	return c
}

// Apply edits the header of a response to the HTTP client: it deletes
// every header of Remove, then sets each header of Add, replacing any
// value the upstream sent. A nil c changes nothing.
func (c *ResponseHeaders) Apply(h http.Header) {
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
