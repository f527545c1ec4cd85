package storedforms

import (
	"slices"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// TLSEdge returns the stored form of TLS edges, of kind k.
func TLSEdge(k *records.Kind) records.Form[edges.TLSEdge] {
	return records.PlainForm(k,
		func(e *edges.TLSEdge) *tlsEdgeDoc {
			return &tlsEdgeDoc{Common: records.Common{CreatedAt: e.CreatedAt, Description: e.Description, Metadata: e.Metadata}, Hostports: e.Hostports, IPRestriction: saveIPRestrictionModule(e.IPRestriction),
				TrafficPolicy: saveTrafficPolicy(e.TrafficPolicy), TLSTermination: saveTLSTermination(e.TLSTermination), Backend: saveBackendModule(e.Backend)}
		},
		func(d *tlsEdgeDoc, rec store.Record) *edges.TLSEdge {
			return &edges.TLSEdge{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata,
				Hostports: slices.Clone(d.Hostports), IPRestriction: loadIPRestrictionModule(d.IPRestriction), TrafficPolicy: loadTrafficPolicy(d.TrafficPolicy),
				TLSTermination: loadTLSTermination(d.TLSTermination), Backend: loadBackendModule(d.Backend)}
		})
}

type tlsEdgeDoc struct {
	records.Common
	Hostports      []string                `json:"hostports,omitempty"`
	IPRestriction  *ipRestrictionModuleDoc `json:"ip_restriction,omitempty"`
	TrafficPolicy  *trafficPolicyDoc       `json:"traffic_policy,omitempty"`
	TLSTermination *tlsTerminationDoc      `json:"tls_termination,omitempty"`
	Backend        *backendModuleDoc       `json:"backend,omitempty"`
}

type tlsTerminationDoc struct {
	Enabled     bool    `json:"enabled"`
	TerminateAt string  `json:"terminate_at"`
	MinVersion  *string `json:"min_version,omitempty"`
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
	return &edges.TLSTermination{Enabled: d.Enabled, TerminateAt: d.TerminateAt, MinVersion: records.ClonePtr(d.MinVersion)}
}
