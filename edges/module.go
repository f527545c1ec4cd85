package edges

import (
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/resource"
)

// Module names, as they appear in paths (/edges/tls/{id}/ip_restriction),
// in edge and route responses and in messages.
const (
	ModuleOIDC            = "oidc"
	ModuleBackend         = "backend"
	ModuleResponseHeaders = "response_headers"
	ModuleCompression     = "compression"
	ModuleIPRestriction   = "ip_restriction"
	ModuleTrafficPolicy   = "traffic_policy"
	ModuleTLSTermination  = "tls_termination"
)

// Module limits.
const (
	// MaxIPPolicies is the most IP policies one IP restriction module may
	// name, as for an IP restriction ([ipaccess.MaxIPPolicies]).
	MaxIPPolicies = ipaccess.MaxIPPolicies
	// MaxScopes is the most scopes an OIDC module may request.
	MaxScopes = 100
	// MaxScopeBytes bounds one OIDC scope.
	MaxScopeBytes = 256
	// MaxURLBytes bounds the OIDC issuer.
	MaxURLBytes = 2048
	// MaxClientBytes bounds the OIDC client_id and client_secret.
	MaxClientBytes = 1024
	// MaxCookiePrefixBytes bounds the OIDC cookie_prefix.
	MaxCookiePrefixBytes = 64
	// MaxHeaders is the most entries of each of a response headers module's
	// add and remove.
	MaxHeaders = 100
	// MaxHeaderNameBytes bounds a header name.
	MaxHeaderNameBytes = 256
	// MaxHeaderValueBytes bounds a header value.
	MaxHeaderValueBytes = 4096
)

// DefaultCookiePrefix is the prefix of the OIDC session cookie when the
// module's cookie_prefix is empty.
const DefaultCookiePrefix = "service."

// TLS termination points.
const (
	// TerminateAtEdge: the service terminates TLS (the default).
	TerminateAtEdge = "edge"
	// TerminateAtUpstream: TLS passes through to the upstream.
	TerminateAtUpstream = "upstream"
)

// DefaultMinTLSVersion is the minimum TLS version of a TLS edge that
// terminates at the edge when its module's min_version is null, or when it
// has no TLS termination module.
const DefaultMinTLSVersion = "1.2"

// enabled returns *p, or true when p is nil: every module's default.
func enabled(p *bool) bool { return p == nil || *p }

// OIDC is the HTTPS route OIDC module: requests must carry a session
// established with the OIDC provider.
type OIDC struct {
	// Enabled is true when the module applies to traffic.
	Enabled bool `json:"enabled"`
	// OptionsPassthrough, when true, lets HTTP OPTIONS requests through
	// unauthenticated (for CORS preflight).
	OptionsPassthrough bool `json:"options_passthrough"`
	// CookiePrefix is the session cookie's prefix as stored: "" when not
	// supplied, which means [DefaultCookiePrefix]; see
	// [OIDC.EffectiveCookiePrefix].
	CookiePrefix string `json:"cookie_prefix"`
	// InactivityTimeout is the seconds of inactivity after which the
	// session ends; 0 when not supplied (no inactivity limit).
	InactivityTimeout uint32 `json:"inactivity_timeout"`
	// MaximumDuration is the longest a session lasts, in seconds; 0 when
	// not supplied (no limit).
	MaximumDuration uint32 `json:"maximum_duration"`
	// Issuer is the OIDC provider's URL, the base of discovery.
	Issuer string `json:"issuer"`
	// ClientID is the OIDC app's client ID and audience.
	ClientID string `json:"client_id"`
	// ClientSecret is the OIDC app's client secret; it is returned in
	// responses.
	ClientSecret string `json:"client_secret"`
	// Scopes are requested from the provider, as given; never nil in
	// responses.
	Scopes []string `json:"scopes"`
}

// EffectiveCookiePrefix returns the cookie prefix in force:
// [DefaultCookiePrefix] when CookiePrefix is empty.
func (m OIDC) EffectiveCookiePrefix() string {
	if m.CookiePrefix == "" {
		return DefaultCookiePrefix
	}
	return m.CookiePrefix
}

// OIDCParams replace an HTTPS route's OIDC module.
type OIDCParams struct {
	// Enabled defaults to true when nil.
	Enabled *bool `json:"enabled"`
	// OptionsPassthrough defaults to false.
	OptionsPassthrough bool `json:"options_passthrough"`
	// CookiePrefix is optional: at most 64 bytes of HTTP token characters
	// (a cookie name's characters). Empty means [DefaultCookiePrefix].
	CookiePrefix string `json:"cookie_prefix" openapi:"maxbytes=64"`
	// InactivityTimeout is optional, seconds.
	InactivityTimeout uint32 `json:"inactivity_timeout"`
	// MaximumDuration is optional, seconds.
	MaximumDuration uint32 `json:"maximum_duration"`
	// Issuer is required: an absolute https URL without user info, query
	// or fragment, at most 2048 bytes.
	Issuer string `json:"issuer" openapi:"required,maxbytes=2048,httpsurl"`
	// ClientID is required: at most 1024 bytes, no control characters.
	ClientID string `json:"client_id" openapi:"required,maxbytes=1024"`
	// ClientSecret is required: at most 1024 bytes, no control characters.
	ClientSecret string `json:"client_secret" openapi:"required,maxbytes=1024"`
	// Scopes are optional: at most 100 distinct OAuth scope tokens of 1 to
	// 256 printable ASCII characters other than space, '"' and '\'.
	Scopes []string `json:"scopes" openapi:"max=100,unique,dive,min=1,maxbytes=256"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p OIDCParams) Validate() error {
	var vs apierr.Violations
	if p.CookiePrefix != "" {
		switch {
		case len(p.CookiePrefix) > MaxCookiePrefixBytes:
			vs.Add("cookie_prefix", "must be at most %d bytes, got %d", MaxCookiePrefixBytes, len(p.CookiePrefix))
		case !IsToken(p.CookiePrefix):
			vs.Add("cookie_prefix", "must be made of cookie name characters (letters, digits and !#$%%&'*+-.^_`|~)")
		}
	}
	checkIssuer(&vs, p.Issuer)
	checkClientField(&vs, "client_id", p.ClientID)
	checkClientField(&vs, "client_secret", p.ClientSecret)
	if len(p.Scopes) > MaxScopes {
		vs.Add("scopes", "must list at most %d scopes, got %d", MaxScopes, len(p.Scopes))
	} else {
		for i, sc := range p.Scopes {
			field := "scopes[" + strconv.Itoa(i) + "]"
			switch {
			case sc == "":
				vs.Add(field, "must not be empty")
			case len(sc) > MaxScopeBytes:
				vs.Add(field, "must be at most %d bytes, got %d", MaxScopeBytes, len(sc))
			case !isScope(sc):
				vs.Add(field, `must be an OAuth scope: printable ASCII characters other than space, '"' and '\'`)
			default:
				if j := slices.Index(p.Scopes[:i], sc); j >= 0 {
					vs.Add(field, "duplicates scopes[%d]; each scope may be listed once", j)
				}
			}
		}
	}
	return vs.Err()
}

// Module returns the module p describes: enabled defaults to true, fields
// not supplied are "", 0 and false, and Scopes is never nil.
func (p OIDCParams) Module() OIDC {
	scopes := append([]string{}, p.Scopes...)
	return OIDC{
		Enabled:            enabled(p.Enabled),
		OptionsPassthrough: p.OptionsPassthrough,
		CookiePrefix:       p.CookiePrefix,
		InactivityTimeout:  p.InactivityTimeout,
		MaximumDuration:    p.MaximumDuration,
		Issuer:             p.Issuer,
		ClientID:           p.ClientID,
		ClientSecret:       p.ClientSecret,
		Scopes:             scopes,
	}
}

func checkIssuer(vs *apierr.Violations, s string) {
	const field = "issuer"
	if s == "" {
		vs.Add(field, "is required")
		return
	}
	if len(s) > MaxURLBytes {
		vs.Add(field, "must be at most %d bytes, got %d", MaxURLBytes, len(s))
		return
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Scheme != "https" || u.Host == "" || u.Opaque != "" || hasControl(s) || strings.ContainsRune(s, ' '):
		vs.Add(field, "must be an absolute https URL, such as https://accounts.example.com")
	case u.User != nil:
		vs.Add(field, "must not contain user information")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#"):
		vs.Add(field, "must not have a query or fragment (an OIDC issuer never has one)")
	}
}

func checkClientField(vs *apierr.Violations, field, s string) {
	switch {
	case s == "":
		vs.Add(field, "is required")
	case len(s) > MaxClientBytes:
		vs.Add(field, "must be at most %d bytes, got %d", MaxClientBytes, len(s))
	case hasControl(s):
		vs.Add(field, "must not contain control characters")
	}
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// isScope reports whether s is made of RFC 6749 scope-token characters.
func isScope(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Backend is the backend module of an HTTPS route or a TCP edge: the
// tunnel group backend that serves the traffic.
type Backend struct {
	// Enabled is true when the module applies to traffic.
	Enabled bool `json:"enabled"`
	// Backend is the tunnel group backend; its URI (under
	// /backends/tunnel_group/) is filled by the Service.
	Backend resource.Ref `json:"backend"`
}

// BackendParams replace a backend module.
type BackendParams struct {
	// Enabled defaults to true when nil.
	Enabled *bool `json:"enabled"`
	// BackendID is required: a tunnel group backend (bkdtg_) of the
	// account.
	BackendID string `json:"backend_id" openapi:"required,id=bkdtg_"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error]. Whether the backend exists is the
// Service's check.
func (p BackendParams) Validate() error {
	var vs apierr.Violations
	switch {
	case p.BackendID == "":
		vs.Add("backend_id", "is required")
	case !ids.Valid(p.BackendID, BackendPrefix):
		vs.Add("backend_id", "must be a tunnel group backend ID (%s followed by %d base62 characters)", BackendPrefix, ids.Len)
	}
	return vs.Err()
}

// Module returns the module p describes, its Backend a Ref with the ID
// only.
func (p BackendParams) Module() Backend {
	return Backend{Enabled: enabled(p.Enabled), Backend: resource.Ref{ID: p.BackendID}}
}

// ResponseHeaders is the HTTPS route response headers module: headers
// added to and removed from responses to the HTTP client.
type ResponseHeaders struct {
	// Enabled is true when the module applies to traffic.
	Enabled bool `json:"enabled"`
	// Add maps header names, lower-cased, to the values set on responses;
	// never nil in responses.
	Add map[string]string `json:"add"`
	// Remove lists header names, lower-cased, removed from responses;
	// never nil in responses.
	Remove []string `json:"remove"`
}

// ResponseHeadersParams replace an HTTPS route's response headers module.
type ResponseHeadersParams struct {
	// Enabled defaults to true when nil.
	Enabled *bool `json:"enabled"`
	// Add maps header names to values: at most 100 entries; names are HTTP
	// tokens of at most 256 bytes, and two names may not differ only in
	// case; values are at most 4096 bytes without CR, LF or NUL.
	Add map[string]string `json:"add" openapi:"max=100"`
	// Remove lists header names: at most 100 distinct (ignoring case) HTTP
	// tokens, none also in Add.
	Remove []string `json:"remove" openapi:"max=100,unique,dive,min=1,maxbytes=256"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error]. Fields of Add are named add["<name>"]
// with the name as given.
func (p ResponseHeadersParams) Validate() error {
	var vs apierr.Violations
	added := map[string]string{} // lower-cased name -> name as given
	if len(p.Add) > MaxHeaders {
		vs.Add("add", "must have at most %d headers, got %d", MaxHeaders, len(p.Add))
	} else {
		names := make([]string, 0, len(p.Add))
		for name := range p.Add {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			field := "add[" + strconv.Quote(name) + "]"
			if reason := CheckHeaderName(name); reason != "" {
				vs.Add(field, "%s", reason)
				continue
			}
			if reason := CheckHeaderValue(p.Add[name]); reason != "" {
				vs.Add(field, "%s", reason)
			}
			lower := strings.ToLower(name)
			if first, dup := added[lower]; dup {
				vs.Add(field, "duplicates header %q (header names are case-insensitive); give each header once", first)
				continue
			}
			added[lower] = name
		}
	}
	if len(p.Remove) > MaxHeaders {
		vs.Add("remove", "must list at most %d headers, got %d", MaxHeaders, len(p.Remove))
	} else {
		for i, name := range p.Remove {
			field := "remove[" + strconv.Itoa(i) + "]"
			if reason := CheckHeaderName(name); reason != "" {
				vs.Add(field, "%s", reason)
				continue
			}
			lower := strings.ToLower(name)
			if j := slices.IndexFunc(p.Remove[:i], func(o string) bool { return strings.EqualFold(o, name) }); j >= 0 {
				vs.Add(field, "duplicates remove[%d] (header names are case-insensitive)", j)
				continue
			}
			if first, ok := added[lower]; ok {
				vs.Add(field, "is also in add (as %q); a header may be added or removed, not both", first)
			}
		}
	}
	return vs.Err()
}

// Module returns the module p describes: header names lower-cased, Add and
// Remove never nil. Call it after [ResponseHeadersParams.Validate].
func (p ResponseHeadersParams) Module() ResponseHeaders {
	m := ResponseHeaders{Enabled: enabled(p.Enabled), Add: make(map[string]string, len(p.Add)), Remove: make([]string, 0, len(p.Remove))}
	for name, value := range p.Add {
		m.Add[strings.ToLower(name)] = value
	}
	for _, name := range p.Remove {
		m.Remove = append(m.Remove, strings.ToLower(name))
	}
	return m
}

// CheckHeaderName returns why s is not a valid header name, or "": a name
// is an HTTP token (RFC 9110: letters, digits and !#$%&'*+-.^_`|~) of 1 to
// [MaxHeaderNameBytes] bytes.
func CheckHeaderName(s string) string {
	switch {
	case s == "":
		return "header name must not be empty"
	case len(s) > MaxHeaderNameBytes:
		return "header name must be at most 256 bytes"
	case !IsToken(s):
		return "header name must be an HTTP token: letters, digits and !#$%&'*+-.^_`|~"
	}
	return ""
}

// CheckHeaderValue returns why s is not a valid header value, or "": a
// value is at most [MaxHeaderValueBytes] bytes and holds no CR, LF or NUL
// (which would split or truncate the header). It may be empty.
func CheckHeaderValue(s string) string {
	switch {
	case len(s) > MaxHeaderValueBytes:
		return "header value must be at most 4096 bytes"
	case strings.ContainsAny(s, "\r\n\x00"):
		return "header value must not contain CR, LF or NUL characters"
	}
	return ""
}

// IsToken reports whether s is a non-empty HTTP token (RFC 9110 section
// 5.6.2).
func IsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTchar(s[i]) {
			return false
		}
	}
	return true
}

func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// Compression is the HTTPS route compression module: responses are
// compressed for clients that accept it.
type Compression struct {
	// Enabled is true when the module applies to traffic.
	Enabled bool `json:"enabled"`
}

// CompressionParams replace an HTTPS route's compression module.
type CompressionParams struct {
	// Enabled defaults to true when nil.
	Enabled *bool `json:"enabled"`
}

// Validate returns nil: every CompressionParams is valid. It exists so
// that every module's params have the same methods.
func (p CompressionParams) Validate() error { return nil }

// Module returns the module p describes.
func (p CompressionParams) Module() Compression { return Compression{Enabled: enabled(p.Enabled)} }

// IPRestriction is the IP restriction module of a TLS or TCP edge: only
// source addresses its IP policies allow may connect.
type IPRestriction struct {
	// Enabled is true when the module applies to traffic.
	Enabled bool `json:"enabled"`
	// IPPolicies are the IP policies, in the order given; their URIs are
	// filled by the Service.
	IPPolicies []resource.Ref `json:"ip_policies"`
}

// names reports whether m is set and names the IP policy id.
func (m *IPRestriction) names(id string) bool {
	return m != nil && slices.ContainsFunc(m.IPPolicies, func(r resource.Ref) bool { return r.ID == id })
}

// PolicyIDs returns the IDs of the module's IP policies.
func (m IPRestriction) PolicyIDs() []string { return refIDs(m.IPPolicies) }

// IPRestrictionParams replace an IP restriction module.
type IPRestrictionParams struct {
	// Enabled defaults to true when nil.
	Enabled *bool `json:"enabled"`
	// IPPolicyIDs is required: 1 to [MaxIPPolicies] distinct IP policies
	// (ipp_) of the account.
	IPPolicyIDs []string `json:"ip_policy_ids" openapi:"required,min=1,max=100,unique,dive,id=ipp_"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error]. Whether the policies exist is the
// Service's check.
func (p IPRestrictionParams) Validate() error {
	var vs apierr.Violations
	switch {
	case len(p.IPPolicyIDs) == 0:
		vs.Add("ip_policy_ids", "must list at least one IP policy ID")
	case len(p.IPPolicyIDs) > MaxIPPolicies:
		vs.Add("ip_policy_ids", "must list at most %d IP policy IDs, got %d", MaxIPPolicies, len(p.IPPolicyIDs))
	default:
		for i, id := range p.IPPolicyIDs {
			field := "ip_policy_ids[" + strconv.Itoa(i) + "]"
			if !ids.Valid(id, ipPolicyPrefix) {
				vs.Add(field, "must be an IP policy ID (%s followed by %d base62 characters)", ipPolicyPrefix, ids.Len)
				continue
			}
			if j := slices.Index(p.IPPolicyIDs[:i], id); j >= 0 {
				vs.Add(field, "duplicates ip_policy_ids[%d]; each policy may be listed once", j)
			}
		}
	}
	return vs.Err()
}

// Module returns the module p describes, its IPPolicies Refs with the ID
// only.
func (p IPRestrictionParams) Module() IPRestriction {
	refs := make([]resource.Ref, len(p.IPPolicyIDs))
	for i, id := range p.IPPolicyIDs {
		refs[i] = resource.Ref{ID: id}
	}
	return IPRestriction{Enabled: enabled(p.Enabled), IPPolicies: refs}
}

const ipPolicyPrefix = ipaccess.PolicyPrefix

// TrafficPolicy is the traffic policy module of a TLS edge (compiled for
// connection traffic) or of an HTTPS route (compiled for HTTP).
type TrafficPolicy struct {
	// Enabled is true when the module applies to traffic.
	Enabled bool `json:"enabled"`
	// Value is the traffic policy document, JSON in a string, as stored:
	// re-serialized compactly (see the package documentation).
	Value string `json:"value"`
	// IPPolicyIDs are the IP policies the document names (in restrict-ips
	// actions), which the edge or route record references so that they
	// cannot be deleted while the policy uses them. The Service keeps it in
	// storage and clears it in every response; it is not part of the API.
	IPPolicyIDs []string `json:"ip_policy_ids,omitempty" openapi:"-"`
}

// TrafficPolicyParams replace the traffic policy module of a TLS edge or
// of an HTTPS route.
type TrafficPolicyParams struct {
	// Enabled defaults to true when nil.
	Enabled *bool `json:"enabled"`
	// Value is required: a traffic policy document as a JSON string.
	Value string `json:"value" openapi:"required,maxbytes=131072"`
}

// TLSTermination is the TLS edge TLS termination module.
type TLSTermination struct {
	// Enabled is true when the module applies to traffic.
	Enabled bool `json:"enabled"`
	// TerminateAt is [TerminateAtEdge] or [TerminateAtUpstream].
	TerminateAt string `json:"terminate_at" openapi:"oneof=edge upstream"`
	// MinVersion is "1.0", "1.1", "1.2" or "1.3", or nil for the service
	// default ([DefaultMinTLSVersion]); always nil when TerminateAt is
	// upstream. See [TLSTermination.EffectiveMinVersion].
	MinVersion *string `json:"min_version" openapi:"oneof=1.0 1.1 1.2 1.3"`
}

// EffectiveMinVersion returns the minimum TLS version in force: MinVersion,
// or [DefaultMinTLSVersion] when it is nil; "" when TLS terminates
// upstream (the service negotiates no TLS).
func (m TLSTermination) EffectiveMinVersion() string {
	switch {
	case m.TerminateAt == TerminateAtUpstream:
		return ""
	case m.MinVersion == nil:
		return DefaultMinTLSVersion
	}
	return *m.MinVersion
}

// TLSTerminationParams replace a TLS edge's TLS termination module.
type TLSTerminationParams struct {
	// Enabled defaults to true when nil.
	Enabled *bool `json:"enabled"`
	// TerminateAt is edge (the default, when empty) or upstream.
	TerminateAt string `json:"terminate_at" openapi:"omitempty,oneof=edge upstream"`
	// MinVersion is nil (the service default) or one of 1.0, 1.1, 1.2,
	// 1.3; it must be nil when TerminateAt is upstream.
	MinVersion *string `json:"min_version" openapi:"oneof=1.0 1.1 1.2 1.3"`
}

// TLSVersions lists the allowed min_version values, oldest first.
var TLSVersions = []string{"1.0", "1.1", "1.2", "1.3"}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p TLSTerminationParams) Validate() error {
	var vs apierr.Violations
	switch p.TerminateAt {
	case "", TerminateAtEdge:
		if p.MinVersion != nil && !slices.Contains(TLSVersions, *p.MinVersion) {
			vs.Add("min_version", "must be one of: 1.0, 1.1, 1.2, 1.3, or null for the default (%s)", DefaultMinTLSVersion)
		}
	case TerminateAtUpstream:
		if p.MinVersion != nil {
			vs.Add("min_version", "must be null when terminate_at is upstream: TLS is not terminated by the service")
		}
	default:
		vs.Add("terminate_at", "must be one of: edge, upstream")
	}
	return vs.Err()
}

// Module returns the module p describes: terminate_at defaults to edge.
func (p TLSTerminationParams) Module() TLSTermination {
	m := TLSTermination{Enabled: enabled(p.Enabled), TerminateAt: p.TerminateAt}
	if m.TerminateAt == "" {
		m.TerminateAt = TerminateAtEdge
	}
	if p.MinVersion != nil {
		v := *p.MinVersion
		m.MinVersion = &v
	}
	return m
}
