package storedforms

import (
	"slices"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// HTTPSEdge returns the stored form of HTTPS edges, of kind k.
func HTTPSEdge(k *records.Kind) records.Form[edges.HTTPSEdge] {
	return records.PlainForm(k,
		func(e *edges.HTTPSEdge) *httpsEdgeDoc {
			return &httpsEdgeDoc{records.Common{CreatedAt: e.CreatedAt, Description: e.Description, Metadata: e.Metadata}, e.Hostports}
		},
		func(d *httpsEdgeDoc, rec store.Record) *edges.HTTPSEdge {
			return &edges.HTTPSEdge{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata,
				Hostports: slices.Clone(d.Hostports)}
		})
}

// The stored forms of edges, routes and their modules (see package internal/records). An
// edge's hostports are stored canonical; the reserved domains that serve
// them are only its record's Refs (and each hostport one of its Keys). A
// route's edge is its record's parent; modules reference backends and IP
// policies by bare ID; an OIDC module's client secret is sealed under
// [github.com/edgeplane/edgeplane.Options.SealingKey], bound to its route.
type httpsEdgeDoc struct {
	records.Common
	Hostports []string `json:"hostports,omitempty"`
}
