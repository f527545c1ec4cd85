package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"
	"github.com/edgeplane/edgeplane/store"
)

func (s *Service) presentHTTPSEdge(v *edges.HTTPSEdge, _ store.Record) {
	v.URI = s.uri(httpsEdgeKind.Collection, v.ID)
	if v.Hostports == nil {
		v.Hostports = []string{}
	}
}

// CreateHTTPSEdge creates an HTTPS edge. Its routes and their modules are
// added by their own operations. Each hostport's host must be a reserved
// domain of the account (or be covered by a wildcard one), and the
// hostport used by no other edge of any account (a conflict naming it).
func (s *Service) CreateHTTPSEdge(ctx context.Context, p Principal, params edges.CreateEdgeParams) (*edges.HTTPSEdge, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v := &edges.HTTPSEdge{ID: s.ids.New(edges.HTTPSEdgePrefix), CreatedAt: s.timestamp(),
		Description: params.Description, Metadata: params.Metadata, Hostports: edges.CanonicalHostports(params.Hostports, edges.EdgeHTTPS)}
	domainIDs, err := s.resolveHostports(ctx, p, v.Hostports)
	if err != nil {
		return nil, err
	}
	if err := records.Create(ctx, s.db, p, httpsEdgeForm.Form, v.ID, "", v, domainIDs, hostportKeys(v.Hostports, edges.EdgeHTTPS)...); err != nil {
		fields := refFields{}
		fields.hostports(domainIDs)
		return nil, s.edgeWriteErr(err, httpsEdgeKind, v.ID, v.Hostports, fields)
	}
	s.presentHTTPSEdge(v, store.Record{})
	return v, nil
}

// GetHTTPSEdge returns an HTTPS edge of the account.
func (s *Service) GetHTTPSEdge(ctx context.Context, p Principal, id string) (*edges.HTTPSEdge, error) {
	v, rec, err := records.Get(ctx, s.db, p, httpsEdgeForm.Form, id)
	if err != nil {
		return nil, err
	}
	s.presentHTTPSEdge(v, rec)
	return v, nil
}

// ListHTTPSEdges returns a page of the account's HTTPS edges, newest
// first.
func (s *Service) ListHTTPSEdges(ctx context.Context, p Principal, opts ListOptions) (*Page[edges.HTTPSEdge], error) {
	return list(ctx, s, p, httpsEdgeForm.Form, "", httpsEdgeKind.Collection, opts, s.presentHTTPSEdge)
}

// UpdateHTTPSEdge changes the fields present in params. hostports given
// replace the edge's, with the rules of [Service.CreateHTTPSEdge].
func (s *Service) UpdateHTTPSEdge(ctx context.Context, p Principal, id string, params edges.UpdateEdgeParams) (*edges.HTTPSEdge, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	hostports, domainIDs, err := s.newHostports(ctx, p, params.Hostports, edges.EdgeHTTPS)
	if err != nil {
		return nil, err
	}
	v, err := records.Update(ctx, s.db, p, httpsEdgeForm.Form, id, func(v *edges.HTTPSEdge, rec *store.Record) error {
		params.Apply(&v.Description, &v.Metadata)
		if hostports != nil {
			v.Hostports = hostports
			rec.Keys = hostportKeys(hostports, edges.EdgeHTTPS)
			rec.Refs = edgeRefs(nil, domainIDs, rec.Refs)
		}
		return nil
	})
	if err != nil {
		fields := refFields{}
		fields.hostports(domainIDs)
		return nil, s.edgeWriteErr(err, httpsEdgeKind, id, hostports, fields)
	}
	s.presentHTTPSEdge(v, store.Record{})
	return v, nil
}

// DeleteHTTPSEdge deletes an HTTPS edge with its routes and their modules,
// in one atomic step. Only the edge's deletion is reported as a change.
func (s *Service) DeleteHTTPSEdge(ctx context.Context, p Principal, id string) error {
	return records.Remove(ctx, s.db, p, httpsEdgeKind, id)
}

// The identity of the kinds this file declares (see kindList).
var httpsEdgeKind = &records.Kind{StoreKind: KindHTTPSEdge, Prefix: edges.HTTPSEdgePrefix, Collection: "edges/https", Noun: "HTTPS edge", Event: "https_edge"}

var httpsEdgeForm = &kind[edges.HTTPSEdge]{Form: storedforms.HTTPSEdge(httpsEdgeKind), present: (*Service).presentHTTPSEdge}
