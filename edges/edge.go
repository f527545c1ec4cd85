package edges

import (
	"slices"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/internal/validate"
	"github.com/edgeplane/edgeplane/resource"
)

// Identifier prefixes.
const (
	// HTTPSEdgePrefix starts every HTTPS edge identifier.
	HTTPSEdgePrefix = "edghts_"
	// HTTPSRoutePrefix starts every HTTPS edge route identifier.
	HTTPSRoutePrefix = "edghtsrt_"
	// TLSEdgePrefix starts every TLS edge identifier.
	TLSEdgePrefix = "edgtls_"
	// TCPEdgePrefix starts every TCP edge identifier.
	TCPEdgePrefix = "edgtcp_"
	// BackendPrefix starts every tunnel group backend identifier
	// ([backends.IDPrefix]): the only kind of backend a backend module may
	// name.
	BackendPrefix = backends.IDPrefix
)

// Route match types.
const (
	// MatchExactPath matches a request whose path equals the route's match.
	MatchExactPath = "exact_path"
	// MatchPathPrefix matches a request whose path starts with the route's
	// match.
	MatchPathPrefix = "path_prefix"
)

// Limits of edge and route fields.
const (
	// MaxDescriptionBytes bounds description fields.
	MaxDescriptionBytes = 255
	// MaxMetadataBytes bounds metadata fields.
	MaxMetadataBytes = 4096
	// MaxMatchBytes bounds a route's match.
	MaxMatchBytes = 1024
	// MaxRoutesPerEdge is the most routes one HTTPS edge may have. It
	// bounds what an edge proxy compiles for one edge: at most this many
	// traffic policies, each within the policy package's document budget.
	MaxRoutesPerEdge = 100
)

// HTTPSEdge is an HTTPS edge: the parent of [HTTPSRoute]s, which carry the
// HTTP modules.
type HTTPSEdge struct {
	// ID is the edge's identifier, HTTPSEdgePrefix followed by an opaque
	// string.
	ID string `json:"id"`
	// URI locates the edge; filled by the Service.
	URI string `json:"uri"`
	// CreatedAt is when the edge was created.
	CreatedAt time.Time `json:"created_at"`
	// Description says what the edge is for.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
	// Hostports are the host:port addresses the edge serves, in canonical
	// form (see [ParseHostport]); never nil in responses.
	Hostports []string `json:"hostports"`
}

// HTTPSRoute is a route of an HTTPS edge: the requests it matches and the
// modules applied to them. A nil module is not set.
type HTTPSRoute struct {
	// ID is the route's identifier, HTTPSRoutePrefix followed by an opaque
	// string.
	ID string `json:"id"`
	// URI locates the route, {base_url}/edges/https/<edge_id>/routes/<id>;
	// filled by the Service.
	URI string `json:"uri"`
	// EdgeID is the HTTPS edge the route belongs to.
	EdgeID string `json:"edge_id"`
	// CreatedAt is when the route was created.
	CreatedAt time.Time `json:"created_at"`
	// Description says what the route is for.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
	// MatchType is [MatchExactPath] or [MatchPathPrefix].
	MatchType string `json:"match_type" openapi:"oneof=exact_path path_prefix"`
	// Match is the path, or path prefix, the route matches.
	Match string `json:"match"`
	// OIDC is the OIDC module.
	OIDC *OIDC `json:"oidc"`
	// Backend is the backend module.
	Backend *Backend `json:"backend"`
	// ResponseHeaders is the response headers module.
	ResponseHeaders *ResponseHeaders `json:"response_headers"`
	// Compression is the compression module.
	Compression *Compression `json:"compression"`
	// TrafficPolicy is the traffic policy module, compiled for HTTP.
	TrafficPolicy *TrafficPolicy `json:"traffic_policy"`
}

// Refs returns the identifiers of the records the route's modules
// reference (its backend and the IP policies of its traffic policy),
// without duplicates; never nil.
func (r *HTTPSRoute) Refs() []string {
	out := []string{}
	if r.Backend != nil {
		out = appendNew(out, r.Backend.Backend.ID)
	}
	if r.TrafficPolicy != nil {
		for _, id := range r.TrafficPolicy.IPPolicyIDs {
			out = appendNew(out, id)
		}
	}
	return out
}

// TLSEdge is a TLS edge and its modules. A nil module is not set.
type TLSEdge struct {
	// ID is the edge's identifier, TLSEdgePrefix followed by an opaque
	// string.
	ID string `json:"id"`
	// URI locates the edge; filled by the Service.
	URI string `json:"uri"`
	// CreatedAt is when the edge was created.
	CreatedAt time.Time `json:"created_at"`
	// Description says what the edge is for.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
	// Hostports are the host:port addresses the edge serves, in canonical
	// form (see [ParseHostport]); never nil in responses.
	Hostports []string `json:"hostports"`
	// IPRestriction is the IP restriction module.
	IPRestriction *IPRestriction `json:"ip_restriction"`
	// TrafficPolicy is the traffic policy module.
	TrafficPolicy *TrafficPolicy `json:"traffic_policy"`
	// TLSTermination is the TLS termination module.
	TLSTermination *TLSTermination `json:"tls_termination"`
	// Backend is the backend module: the tunnel group backend whose
	// tunnels receive the edge's connections. SPEC 2.7 lists no backend
	// for TLS edges; an edge proxy needs one to send a TLS edge's traffic
	// anywhere (see the package doc).
	Backend *Backend `json:"backend"`
}

// Refs returns the identifiers of the records the edge's modules reference
// (IP policies of the IP restriction and of the traffic policy, and the
// backend), without duplicates; never nil.
func (e *TLSEdge) Refs() []string {
	out := []string{}
	if e.IPRestriction != nil {
		for _, r := range e.IPRestriction.IPPolicies {
			out = appendNew(out, r.ID)
		}
	}
	if e.TrafficPolicy != nil {
		for _, id := range e.TrafficPolicy.IPPolicyIDs {
			out = appendNew(out, id)
		}
	}
	if e.Backend != nil {
		out = appendNew(out, e.Backend.Backend.ID)
	}
	return out
}

// CheckModules reports a combination of modules the edge cannot hold: a
// traffic policy module on an edge whose TLS termination module
// terminates upstream (the policy needs the decrypted traffic). It returns
// nil or a Conflict [*apierr.Error]. Both modules count when set, enabled
// or not.
func (e *TLSEdge) CheckModules() error {
	if e.TrafficPolicy != nil && e.TLSTermination != nil && e.TLSTermination.TerminateAt == TerminateAtUpstream {
		return apierr.Conflictf("TLS edge %s cannot have both a traffic_policy module and a tls_termination module with terminate_at upstream: the traffic policy needs TLS terminated at the edge; delete one of them, or set terminate_at to edge", e.ID)
	}
	return nil
}

// TCPEdge is a TCP edge and its modules. A nil module is not set.
type TCPEdge struct {
	// ID is the edge's identifier, TCPEdgePrefix followed by an opaque
	// string.
	ID string `json:"id"`
	// URI locates the edge; filled by the Service.
	URI string `json:"uri"`
	// CreatedAt is when the edge was created.
	CreatedAt time.Time `json:"created_at"`
	// Description says what the edge is for.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
	// Hostports are the host:port addresses the edge serves, in canonical
	// form (see [ParseHostport]); never nil in responses.
	Hostports []string `json:"hostports"`
	// IPRestriction is the IP restriction module.
	IPRestriction *IPRestriction `json:"ip_restriction"`
	// Backend is the backend module.
	Backend *Backend `json:"backend"`
}

// Refs returns the identifiers of the records the edge's modules reference
// (IP policies and backend), without duplicates; never nil.
func (e *TCPEdge) Refs() []string {
	out := []string{}
	if e.IPRestriction != nil {
		for _, r := range e.IPRestriction.IPPolicies {
			out = appendNew(out, r.ID)
		}
	}
	if e.Backend != nil {
		out = appendNew(out, e.Backend.Backend.ID)
	}
	return out
}

// ModuleReferencing returns the name of the route's module that
// references id ("backend" or "traffic_policy"), or "" when none does; for
// messages.
func (r *HTTPSRoute) ModuleReferencing(id string) string {
	switch {
	case r.Backend != nil && r.Backend.Backend.ID == id:
		return "backend"
	case r.TrafficPolicy != nil && slices.Contains(r.TrafficPolicy.IPPolicyIDs, id):
		return "traffic_policy"
	}
	return ""
}

// ModuleReferencing returns the name of the edge's module that references
// id ("ip_restriction", "traffic_policy" or "backend"), or "" when none
// does; for messages.
func (e *TLSEdge) ModuleReferencing(id string) string {
	switch {
	case e.IPRestriction.names(id):
		return "ip_restriction"
	case e.TrafficPolicy != nil && slices.Contains(e.TrafficPolicy.IPPolicyIDs, id):
		return "traffic_policy"
	case e.Backend != nil && e.Backend.Backend.ID == id:
		return "backend"
	}
	return ""
}

// ModuleReferencing returns the name of the edge's module that references
// id ("ip_restriction" or "backend"), or "" when none does; for messages.
func (e *TCPEdge) ModuleReferencing(id string) string {
	switch {
	case e.IPRestriction.names(id):
		return "ip_restriction"
	case e.Backend != nil && e.Backend.Backend.ID == id:
		return "backend"
	}
	return ""
}

func appendNew(list []string, id string) []string {
	for _, x := range list {
		if x == id {
			return list
		}
	}
	return append(list, id)
}

// CreateEdgeParams are the parameters of creating an HTTPS edge. Every
// field is optional. An HTTPS edge has no modules of its own: its routes
// carry them.
type CreateEdgeParams struct {
	// Description is at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
	// Hostports are at most [MaxHostports] distinct host:port addresses
	// on port 443 (see [ParseHostport]), each host a reserved domain of
	// the account and each hostport used by no other edge.
	Hostports []string `json:"hostports"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error]. Whether the hosts are reserved domains
// of the account, and the hostports free, is the Service's check.
func (p CreateEdgeParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	checkHostports(&vs, p.Hostports, EdgeHTTPS)
	return vs.Err()
}

// UpdateEdgeParams are the parameters of updating an HTTPS edge; nil
// fields are left unchanged.
type UpdateEdgeParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
	// Hostports replace the hostports, as at create; an empty list
	// removes them all.
	Hostports *[]string `json:"hostports"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateEdgeParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.Hostports != nil {
		checkHostports(&vs, *p.Hostports, EdgeHTTPS)
	}
	return vs.Err()
}

// Apply sets the description and metadata that p carries. Hostports are
// set by the Service, which checks them against the store.
func (p UpdateEdgeParams) Apply(description, metadata *string) {
	setString(description, p.Description)
	setString(metadata, p.Metadata)
}

// CreateTLSEdgeParams are the parameters of creating a TLS edge. Every
// field is optional; a module given here is set as its replace operation
// would set it, with the same validation, and the edge is created with it
// in one write.
type CreateTLSEdgeParams struct {
	// Description is at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
	// Hostports are as for an HTTPS edge: port 443 only.
	Hostports []string `json:"hostports"`
	// IPRestriction sets the IP restriction module.
	IPRestriction *IPRestrictionParams `json:"ip_restriction"`
	// TrafficPolicy sets the traffic policy module.
	TrafficPolicy *TrafficPolicyParams `json:"traffic_policy"`
	// TLSTermination sets the TLS termination module.
	TLSTermination *TLSTerminationParams `json:"tls_termination"`
	// Backend sets the backend module.
	Backend *BackendParams `json:"backend"`
}

// Validate reports every broken rule of p, the modules' violations under
// their module's name (ip_restriction.ip_policy_ids[0]). It returns nil or
// an InvalidArgument [*apierr.Error].
func (p CreateTLSEdgeParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	checkHostports(&vs, p.Hostports, EdgeTLS)
	checkModule(&vs, ModuleIPRestriction, p.IPRestriction)
	checkModule(&vs, ModuleTrafficPolicy, p.TrafficPolicy)
	checkModule(&vs, ModuleTLSTermination, p.TLSTermination)
	checkModule(&vs, ModuleBackend, p.Backend)
	return vs.Err()
}

// UpdateTLSEdgeParams are the parameters of updating a TLS edge; nil
// fields are left unchanged. A module given replaces the module whole; a
// module cannot be removed here (its delete operation does that).
type UpdateTLSEdgeParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
	// Hostports replace the hostports; an empty list removes them all.
	Hostports *[]string `json:"hostports"`
	// IPRestriction replaces the IP restriction module.
	IPRestriction *IPRestrictionParams `json:"ip_restriction"`
	// TrafficPolicy replaces the traffic policy module.
	TrafficPolicy *TrafficPolicyParams `json:"traffic_policy"`
	// TLSTermination replaces the TLS termination module.
	TLSTermination *TLSTerminationParams `json:"tls_termination"`
	// Backend replaces the backend module.
	Backend *BackendParams `json:"backend"`
}

// Apply sets the description and metadata that p carries. Hostports and
// modules are set by the Service, which checks them against the store.
func (p UpdateTLSEdgeParams) Apply(description, metadata *string) {
	setString(description, p.Description)
	setString(metadata, p.Metadata)
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateTLSEdgeParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.Hostports != nil {
		checkHostports(&vs, *p.Hostports, EdgeTLS)
	}
	checkModule(&vs, ModuleIPRestriction, p.IPRestriction)
	checkModule(&vs, ModuleTrafficPolicy, p.TrafficPolicy)
	checkModule(&vs, ModuleTLSTermination, p.TLSTermination)
	checkModule(&vs, ModuleBackend, p.Backend)
	return vs.Err()
}

// CreateTCPEdgeParams are the parameters of creating a TCP edge: those of
// creating a TLS edge ([CreateTLSEdgeParams]) but the TLS termination and
// traffic policy modules, which a TCP edge does not have.
type CreateTCPEdgeParams struct {
	// Description is at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
	// Hostports are at most [MaxHostports] distinct host:port addresses on
	// any port from 1 to 65535, each host a reserved domain of the account
	// and each hostport used by no other edge.
	Hostports []string `json:"hostports"`
	// IPRestriction sets the IP restriction module.
	IPRestriction *IPRestrictionParams `json:"ip_restriction"`
	// Backend sets the backend module.
	Backend *BackendParams `json:"backend"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p CreateTCPEdgeParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	checkHostports(&vs, p.Hostports, EdgeTCP)
	checkModule(&vs, ModuleIPRestriction, p.IPRestriction)
	checkModule(&vs, ModuleBackend, p.Backend)
	return vs.Err()
}

// UpdateTCPEdgeParams are the parameters of updating a TCP edge: those of
// updating a TLS edge ([UpdateTLSEdgeParams]) but the TLS termination and
// traffic policy modules, which a TCP edge does not have.
type UpdateTCPEdgeParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
	// Hostports replace the hostports; an empty list removes them all.
	Hostports *[]string `json:"hostports"`
	// IPRestriction replaces the IP restriction module.
	IPRestriction *IPRestrictionParams `json:"ip_restriction"`
	// Backend replaces the backend module.
	Backend *BackendParams `json:"backend"`
}

// Apply sets the description and metadata that p carries. Hostports and
// modules are set by the Service, which checks them against the store.
func (p UpdateTCPEdgeParams) Apply(description, metadata *string) {
	setString(description, p.Description)
	setString(metadata, p.Metadata)
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateTCPEdgeParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.Hostports != nil {
		checkHostports(&vs, *p.Hostports, EdgeTCP)
	}
	checkModule(&vs, ModuleIPRestriction, p.IPRestriction)
	checkModule(&vs, ModuleBackend, p.Backend)
	return vs.Err()
}

// checkModule adds the violations of a module's params, when given, under
// the module's name: backend.backend_id. The per-module operations
// validate the same params, so both paths share one set of rules.
func checkModule[P interface{ Validate() error }](vs *apierr.Violations, name string, p *P) {
	if p != nil {
		vs.AddError(name, (*p).Validate())
	}
}

// CreateRouteParams are the parameters of creating a route of an HTTPS
// edge. A module given here is set as its replace operation would set it,
// with the same validation, and the route is created with it in one
// write.
type CreateRouteParams struct {
	// Description is at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
	// MatchType is required: exact_path or path_prefix.
	MatchType string `json:"match_type" validate:"required,oneof=exact_path path_prefix"`
	// Match is required: a path starting with "/" (see [CheckMatch]).
	Match string `json:"match" openapi:"required,maxbytes=1024"`
	// OIDC sets the OIDC module.
	OIDC *OIDCParams `json:"oidc"`
	// Backend sets the backend module.
	Backend *BackendParams `json:"backend"`
	// ResponseHeaders sets the response headers module.
	ResponseHeaders *ResponseHeadersParams `json:"response_headers"`
	// Compression sets the compression module.
	Compression *CompressionParams `json:"compression"`
	// TrafficPolicy sets the traffic policy module (compiled for HTTP).
	TrafficPolicy *TrafficPolicyParams `json:"traffic_policy"`
}

// Validate reports every broken rule of p, the modules' violations under
// their module's name (backend.backend_id). It returns nil or an
// InvalidArgument [*apierr.Error].
func (p CreateRouteParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if reason := CheckMatch(p.Match); reason != "" {
		vs.Add("match", "%s", reason)
	}
	p.routeModules().check(&vs)
	return vs.Err()
}

// Route returns the route p describes, without the fields the Service
// assigns (ID, URI, EdgeID, CreatedAt), with the modules p gives except
// the traffic policy (which the Service compiles).
func (p CreateRouteParams) Route() HTTPSRoute {
	r := HTTPSRoute{Description: p.Description, Metadata: p.Metadata, MatchType: p.MatchType, Match: p.Match}
	p.routeModules().apply(&r)
	return r
}

func (p CreateRouteParams) routeModules() routeModules {
	return routeModules{p.OIDC, p.Backend, p.ResponseHeaders, p.Compression, p.TrafficPolicy}
}

// UpdateRouteParams are the parameters of updating a route; nil fields are
// left unchanged. A module given replaces the module whole; a module
// cannot be removed here (its delete operation does that).
type UpdateRouteParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
	// MatchType replaces the match type: exact_path or path_prefix.
	MatchType *string `json:"match_type" validate:"omitnil,oneof=exact_path path_prefix"`
	// Match replaces the match (see [CheckMatch]).
	Match *string `json:"match" openapi:"min=1,maxbytes=1024"`
	// OIDC replaces the OIDC module.
	OIDC *OIDCParams `json:"oidc"`
	// Backend replaces the backend module.
	Backend *BackendParams `json:"backend"`
	// ResponseHeaders replaces the response headers module.
	ResponseHeaders *ResponseHeadersParams `json:"response_headers"`
	// Compression replaces the compression module.
	Compression *CompressionParams `json:"compression"`
	// TrafficPolicy replaces the traffic policy module (compiled for
	// HTTP).
	TrafficPolicy *TrafficPolicyParams `json:"traffic_policy"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateRouteParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.Match != nil {
		if reason := CheckMatch(*p.Match); reason != "" {
			vs.Add("match", "%s", reason)
		}
	}
	p.routeModules().check(&vs)
	return vs.Err()
}

// Apply sets the fields of r that p carries, and the modules it gives
// except the traffic policy (which the Service compiles).
func (p UpdateRouteParams) Apply(r *HTTPSRoute) {
	setString(&r.Description, p.Description)
	setString(&r.Metadata, p.Metadata)
	setString(&r.MatchType, p.MatchType)
	setString(&r.Match, p.Match)
	p.routeModules().apply(r)
}

func (p UpdateRouteParams) routeModules() routeModules {
	return routeModules{p.OIDC, p.Backend, p.ResponseHeaders, p.Compression, p.TrafficPolicy}
}

// routeModules are the modules a route create or update gives inline.
type routeModules struct {
	oidc            *OIDCParams
	backend         *BackendParams
	responseHeaders *ResponseHeadersParams
	compression     *CompressionParams
	trafficPolicy   *TrafficPolicyParams
}

func (m routeModules) check(vs *apierr.Violations) {
	checkModule(vs, ModuleOIDC, m.oidc)
	checkModule(vs, ModuleBackend, m.backend)
	checkModule(vs, ModuleResponseHeaders, m.responseHeaders)
	checkModule(vs, ModuleCompression, m.compression)
	checkModule(vs, ModuleTrafficPolicy, m.trafficPolicy)
}

func (m routeModules) apply(r *HTTPSRoute) {
	if m.oidc != nil {
		v := m.oidc.Module()
		r.OIDC = &v
	}
	if m.backend != nil {
		v := m.backend.Module()
		r.Backend = &v
	}
	if m.responseHeaders != nil {
		v := m.responseHeaders.Module()
		r.ResponseHeaders = &v
	}
	if m.compression != nil {
		v := m.compression.Module()
		r.Compression = &v
	}
}

// CheckMatch returns why s is not a valid route match, or "": a match is
// an absolute URL path, 1 to [MaxMatchBytes] bytes, starting with "/",
// without spaces, control characters, "?" or "#" (it matches the path
// only, never the query). Other characters are compared as written
// (percent-encoding is not decoded).
func CheckMatch(s string) string {
	switch {
	case s == "":
		return "is required"
	case len(s) > MaxMatchBytes:
		return "must be at most 1024 bytes"
	case s[0] != '/':
		return `must be a path starting with "/"`
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c <= ' ' || c == 0x7f:
			return "must not contain spaces or control characters"
		case c == '?' || c == '#':
			return `must be a path only, without "?" or "#"`
		}
	}
	return ""
}

func setString(dst *string, src *string) {
	if src != nil {
		*dst = *src
	}
}

// refIDs returns the IDs of refs.
func refIDs(refs []resource.Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}
