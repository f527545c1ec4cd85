package storedforms

import (
	"slices"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// TCPEdge returns the stored form of TCP edges, of kind k.
func TCPEdge(k *records.Kind) records.Form[edges.TCPEdge] {
	return records.PlainForm(k,
		func(e *edges.TCPEdge) *tcpEdgeDoc {
			return &tcpEdgeDoc{Common: records.Common{CreatedAt: e.CreatedAt, Description: e.Description, Metadata: e.Metadata}, Hostports: e.Hostports, IPRestriction: saveIPRestrictionModule(e.IPRestriction),
				Backend: saveBackendModule(e.Backend)}
		},
		func(d *tcpEdgeDoc, rec store.Record) *edges.TCPEdge {
			return &edges.TCPEdge{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata,
				Hostports: slices.Clone(d.Hostports), IPRestriction: loadIPRestrictionModule(d.IPRestriction), Backend: loadBackendModule(d.Backend)}
		})
}

type tcpEdgeDoc struct {
	records.Common
	Hostports     []string                `json:"hostports,omitempty"`
	IPRestriction *ipRestrictionModuleDoc `json:"ip_restriction,omitempty"`
	Backend       *backendModuleDoc       `json:"backend,omitempty"`
}
