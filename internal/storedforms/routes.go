package storedforms

import (
	"errors"
	"maps"
	"slices"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// HTTPSRoute returns the stored form of the routes of HTTPS edges, of kind k.
func HTTPSRoute(k *records.Kind) records.Form[edges.HTTPSRoute] {
	return records.DocForm(k, saveRoute, loadRoute)
}

type routeDoc struct {
	records.Common
	MatchType       string              `json:"match_type"`
	Match           string              `json:"match"`
	OIDC            *oidcDoc            `json:"oidc,omitempty"`
	Backend         *backendModuleDoc   `json:"backend,omitempty"`
	ResponseHeaders *responseHeadersDoc `json:"response_headers,omitempty"`
	Compression     *compressionDoc     `json:"compression,omitempty"`
	TrafficPolicy   *trafficPolicyDoc   `json:"traffic_policy,omitempty"`
}

type oidcDoc struct {
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

type responseHeadersDoc struct {
	Enabled bool              `json:"enabled"`
	Add     map[string]string `json:"add,omitempty"`
	Remove  []string          `json:"remove,omitempty"`
}

type compressionDoc struct {
	Enabled bool `json:"enabled"`
}

// oidcSecretAAD binds a sealed OIDC client secret to its route: one
// copied to another route or account does not open.
func oidcSecretAAD(rec store.Record) []byte {
	return []byte(rec.AccountID + "/" + rec.ID + "/oidc")
}

func saveRoute(db *records.DB, r *edges.HTTPSRoute, rec *store.Record) (*routeDoc, error) {
	d := &routeDoc{Common: records.Common{CreatedAt: r.CreatedAt, Description: r.Description, Metadata: r.Metadata}, MatchType: r.MatchType, Match: r.Match,
		Backend: saveBackendModule(r.Backend), TrafficPolicy: saveTrafficPolicy(r.TrafficPolicy)}
	if m := r.OIDC; m != nil {
		d.OIDC = &oidcDoc{Enabled: m.Enabled, OptionsPassthrough: m.OptionsPassthrough, CookiePrefix: m.CookiePrefix,
			InactivityTimeout: m.InactivityTimeout, MaximumDuration: m.MaximumDuration, Issuer: m.Issuer, ClientID: m.ClientID,
			SealedClientSecret: db.Sealer.Seal([]byte(m.ClientSecret), oidcSecretAAD(*rec)), Scopes: m.Scopes}
	}
	if m := r.ResponseHeaders; m != nil {
		d.ResponseHeaders = &responseHeadersDoc{Enabled: m.Enabled, Add: m.Add, Remove: m.Remove}
	}
	if m := r.Compression; m != nil {
		d.Compression = &compressionDoc{Enabled: m.Enabled}
	}
	return d, nil
}

func loadRoute(db *records.DB, d *routeDoc, rec store.Record) (*edges.HTTPSRoute, error) {
	r := &edges.HTTPSRoute{ID: rec.ID, EdgeID: rec.ParentID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata,
		MatchType: d.MatchType, Match: d.Match, Backend: loadBackendModule(d.Backend), TrafficPolicy: loadTrafficPolicy(d.TrafficPolicy)}
	if m := d.OIDC; m != nil {
		secret, err := db.Sealer.Open(m.SealedClientSecret, oidcSecretAAD(rec))
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
