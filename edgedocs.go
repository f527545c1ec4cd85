package edgeplane

import (
	"errors"
	"maps"
	"slices"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// The stored forms of edges, routes and their modules (see forms.go). An
// edge's hostports are stored canonical; the reserved domains that serve
// them are only its record's Refs (and each hostport one of its Keys). A
// route's edge is its record's parent; modules reference backends and IP
// policies by bare ID; an OIDC module's client secret is sealed under
// [Options.SealingKey], bound to its route.
type (
	httpsEdgeDoc struct {
		common
		Hostports []string `json:"hostports,omitempty"`
	}
	routeDoc struct {
		common
		MatchType       string              `json:"match_type"`
		Match           string              `json:"match"`
		OIDC            *oidcDoc            `json:"oidc,omitempty"`
		Backend         *backendModuleDoc   `json:"backend,omitempty"`
		ResponseHeaders *responseHeadersDoc `json:"response_headers,omitempty"`
		Compression     *compressionDoc     `json:"compression,omitempty"`
		TrafficPolicy   *trafficPolicyDoc   `json:"traffic_policy,omitempty"`
	}
	tlsEdgeDoc struct {
		common
		Hostports      []string                `json:"hostports,omitempty"`
		IPRestriction  *ipRestrictionModuleDoc `json:"ip_restriction,omitempty"`
		TrafficPolicy  *trafficPolicyDoc       `json:"traffic_policy,omitempty"`
		TLSTermination *tlsTerminationDoc      `json:"tls_termination,omitempty"`
		Backend        *backendModuleDoc       `json:"backend,omitempty"`
	}
	tcpEdgeDoc struct {
		common
		Hostports     []string                `json:"hostports,omitempty"`
		IPRestriction *ipRestrictionModuleDoc `json:"ip_restriction,omitempty"`
		Backend       *backendModuleDoc       `json:"backend,omitempty"`
	}

	oidcDoc struct {
		Enabled            bool     `json:"enabled"`
		OptionsPassthrough bool     `json:"options_passthrough,omitempty"`
		CookiePrefix       string   `json:"cookie_prefix,omitempty"`
		InactivityTimeout  uint32   `json:"inactivity_timeout,omitempty"`
		MaximumDuration    uint32   `json:"maximum_duration,omitempty"`
		Issuer             string   `json:"issuer"`
		ClientID           string   `json:"client_id"`
		SealedClientSecret []byte   `json:"sealed_client_secret"`
		Scopes             []string `json:"scopes,omitempty"`
	}
	backendModuleDoc struct {
		Enabled   bool   `json:"enabled"`
		BackendID string `json:"backend_id"`
	}
	responseHeadersDoc struct {
		Enabled bool              `json:"enabled"`
		Add     map[string]string `json:"add,omitempty"`
		Remove  []string          `json:"remove,omitempty"`
	}
	compressionDoc struct {
		Enabled bool `json:"enabled"`
	}
	ipRestrictionModuleDoc struct {
		Enabled     bool     `json:"enabled"`
		IPPolicyIDs []string `json:"ip_policy_ids"`
	}
	trafficPolicyDoc struct {
		Enabled     bool     `json:"enabled"`
		Value       string   `json:"value"`
		IPPolicyIDs []string `json:"ip_policy_ids,omitempty"`
	}
	tlsTerminationDoc struct {
		Enabled     bool    `json:"enabled"`
		TerminateAt string  `json:"terminate_at"`
		MinVersion  *string `json:"min_version,omitempty"`
	}
)

var (
	httpsEdgeForm = plainForm(&httpsEdgeKind,
		func(e *edges.HTTPSEdge) *httpsEdgeDoc {
			return &httpsEdgeDoc{common{e.CreatedAt, e.Description, e.Metadata}, e.Hostports}
		},
		func(d *httpsEdgeDoc, rec store.Record) *edges.HTTPSEdge {
			return &edges.HTTPSEdge{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata,
				Hostports: slices.Clone(d.Hostports)}
		})
	httpsRouteForm = docForm(&httpsRouteKind, saveRoute, loadRoute)
	tlsEdgeForm    = plainForm(&tlsEdgeKind,
		func(e *edges.TLSEdge) *tlsEdgeDoc {
			return &tlsEdgeDoc{common: common{e.CreatedAt, e.Description, e.Metadata}, Hostports: e.Hostports, IPRestriction: saveIPRestrictionModule(e.IPRestriction),
				TrafficPolicy: saveTrafficPolicy(e.TrafficPolicy), TLSTermination: saveTLSTermination(e.TLSTermination), Backend: saveBackendModule(e.Backend)}
		},
		func(d *tlsEdgeDoc, rec store.Record) *edges.TLSEdge {
			return &edges.TLSEdge{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata,
				Hostports: slices.Clone(d.Hostports), IPRestriction: loadIPRestrictionModule(d.IPRestriction), TrafficPolicy: loadTrafficPolicy(d.TrafficPolicy),
				TLSTermination: loadTLSTermination(d.TLSTermination), Backend: loadBackendModule(d.Backend)}
		})
	tcpEdgeForm = plainForm(&tcpEdgeKind,
		func(e *edges.TCPEdge) *tcpEdgeDoc {
			return &tcpEdgeDoc{common: common{e.CreatedAt, e.Description, e.Metadata}, Hostports: e.Hostports, IPRestriction: saveIPRestrictionModule(e.IPRestriction),
				Backend: saveBackendModule(e.Backend)}
		},
		func(d *tcpEdgeDoc, rec store.Record) *edges.TCPEdge {
			return &edges.TCPEdge{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata,
				Hostports: slices.Clone(d.Hostports), IPRestriction: loadIPRestrictionModule(d.IPRestriction), Backend: loadBackendModule(d.Backend)}
		})
)

// oidcSecretAAD binds a sealed OIDC client secret to its route: one
// copied to another route or account does not open.
func oidcSecretAAD(rec store.Record) []byte {
	return []byte(rec.AccountID + "/" + rec.ID + "/oidc")
}

func saveRoute(s *Service, r *edges.HTTPSRoute, rec *store.Record) (*routeDoc, error) {
	d := &routeDoc{common: common{r.CreatedAt, r.Description, r.Metadata}, MatchType: r.MatchType, Match: r.Match,
		Backend: saveBackendModule(r.Backend), TrafficPolicy: saveTrafficPolicy(r.TrafficPolicy)}
	if m := r.OIDC; m != nil {
		d.OIDC = &oidcDoc{Enabled: m.Enabled, OptionsPassthrough: m.OptionsPassthrough, CookiePrefix: m.CookiePrefix,
			InactivityTimeout: m.InactivityTimeout, MaximumDuration: m.MaximumDuration, Issuer: m.Issuer, ClientID: m.ClientID,
			SealedClientSecret: s.sealer.Seal([]byte(m.ClientSecret), oidcSecretAAD(*rec)), Scopes: m.Scopes}
	}
	if m := r.ResponseHeaders; m != nil {
		d.ResponseHeaders = &responseHeadersDoc{Enabled: m.Enabled, Add: m.Add, Remove: m.Remove}
	}
	if m := r.Compression; m != nil {
		d.Compression = &compressionDoc{Enabled: m.Enabled}
	}
	return d, nil
}

func loadRoute(s *Service, d *routeDoc, rec store.Record) (*edges.HTTPSRoute, error) {
	r := &edges.HTTPSRoute{ID: rec.ID, EdgeID: rec.ParentID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata,
		MatchType: d.MatchType, Match: d.Match, Backend: loadBackendModule(d.Backend), TrafficPolicy: loadTrafficPolicy(d.TrafficPolicy)}
	if m := d.OIDC; m != nil {
		secret, err := s.sealer.Open(m.SealedClientSecret, oidcSecretAAD(rec))
		if err != nil {
			return nil, errors.New("the OIDC client secret does not open under this Service's sealing key")
		}
		r.OIDC = &edges.OIDC{Enabled: m.Enabled, OptionsPassthrough: m.OptionsPassthrough, CookiePrefix: m.CookiePrefix,
			InactivityTimeout: m.InactivityTimeout, MaximumDuration: m.MaximumDuration, Issuer: m.Issuer, ClientID: m.ClientID,
			ClientSecret: string(secret), Scopes: slices.Clone(m.Scopes)}
	}
	if m := d.ResponseHeaders; m != nil {
		r.ResponseHeaders = &edges.ResponseHeaders{Enabled: m.Enabled, Add: maps.Clone(m.Add), Remove: slices.Clone(m.Remove)}
	}
	if m := d.Compression; m != nil {
		r.Compression = &edges.Compression{Enabled: m.Enabled}
	}
	return r, nil
}

func saveBackendModule(m *edges.Backend) *backendModuleDoc {
	if m == nil {
		return nil
	}
	return &backendModuleDoc{Enabled: m.Enabled, BackendID: m.Backend.ID}
}

func loadBackendModule(d *backendModuleDoc) *edges.Backend {
	if d == nil {
		return nil
	}
	return &edges.Backend{Enabled: d.Enabled, Backend: resource.Ref{ID: d.BackendID}}
}

func saveIPRestrictionModule(m *edges.IPRestriction) *ipRestrictionModuleDoc {
	if m == nil {
		return nil
	}
	return &ipRestrictionModuleDoc{Enabled: m.Enabled, IPPolicyIDs: refIDs(m.IPPolicies)}
}

func loadIPRestrictionModule(d *ipRestrictionModuleDoc) *edges.IPRestriction {
	if d == nil {
		return nil
	}
	return &edges.IPRestriction{Enabled: d.Enabled, IPPolicies: idRefs(d.IPPolicyIDs)}
}

func saveTrafficPolicy(m *edges.TrafficPolicy) *trafficPolicyDoc {
	if m == nil {
		return nil
	}
	return &trafficPolicyDoc{Enabled: m.Enabled, Value: m.Value, IPPolicyIDs: m.IPPolicyIDs}
}

func loadTrafficPolicy(d *trafficPolicyDoc) *edges.TrafficPolicy {
	if d == nil {
		return nil
	}
	return &edges.TrafficPolicy{Enabled: d.Enabled, Value: d.Value, IPPolicyIDs: slices.Clone(d.IPPolicyIDs)}
}

func saveTLSTermination(m *edges.TLSTermination) *tlsTerminationDoc {
	if m == nil {
		return nil
	}
	return &tlsTerminationDoc{Enabled: m.Enabled, TerminateAt: m.TerminateAt, MinVersion: m.MinVersion}
}

func loadTLSTermination(d *tlsTerminationDoc) *edges.TLSTermination {
	if d == nil {
		return nil
	}
	return &edges.TLSTermination{Enabled: d.Enabled, TerminateAt: d.TerminateAt, MinVersion: clonePtr(d.MinVersion)}
}
