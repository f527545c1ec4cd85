package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"
	"github.com/edgeplane/edgeplane/store"
)

// presentTCPEdge fills the URIs of an edge and of its modules' Refs.
func (s *Service) presentTCPEdge(v *edges.TCPEdge, _ store.Record) {
	v.URI = s.uri(tcpEdgeKind.Collection, v.ID)
	if v.Hostports == nil {
		v.Hostports = []string{}
	}
	s.presentIPRestrictionModule(v.IPRestriction)
	if m := v.Backend; m != nil {
		m.Backend = s.ref(backendKind.Collection, m.Backend.ID)
	}
}

// CreateTCPEdge creates a TCP edge, with the modules params gives set in
// the same write, as [Service.CreateTLSEdge] does. Its hostports may use
// any port; their hosts are reserved domains of the account.
func (s *Service) CreateTCPEdge(ctx context.Context, p Principal, params edges.CreateTCPEdgeParams) (*edges.TCPEdge, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v := &edges.TCPEdge{ID: s.ids.New(edges.TCPEdgePrefix), CreatedAt: s.timestamp(),
		Description: params.Description, Metadata: params.Metadata, Hostports: edges.CanonicalHostports(params.Hostports, edges.EdgeTCP),
		IPRestriction: moduleOf(params.IPRestriction, edges.IPRestrictionParams.Module),
		Backend:       moduleOf(params.Backend, edges.BackendParams.Module)}
	domainIDs, err := s.resolveHostports(ctx, p, v.Hostports)
	if err != nil {
		return nil, err
	}
	if err := records.Create(ctx, s.db, p, tcpEdgeForm.Form, v.ID, "", v, edgeRefs(v.Refs(), domainIDs, nil), hostportKeys(v.Hostports, edges.EdgeTCP)...); err != nil {
		return nil, s.edgeWriteErr(err, tcpEdgeKind, v.ID, v.Hostports, tcpRefFields(v, domainIDs))
	}
	s.presentTCPEdge(v, store.Record{})
	return v, nil
}

func tcpRefFields(v *edges.TCPEdge, domainIDs []string) refFields {
	fields := refFields{}
	fields.hostports(domainIDs)
	fields.ipRestriction(v.IPRestriction)
	fields.backend(v.Backend)
	return fields
}

// GetTCPEdge returns a TCP edge of the account, with its modules.
func (s *Service) GetTCPEdge(ctx context.Context, p Principal, id string) (*edges.TCPEdge, error) {
	v, rec, err := records.Get(ctx, s.db, p, tcpEdgeForm.Form, id)
	if err != nil {
		return nil, err
	}
	s.presentTCPEdge(v, rec)
	return v, nil
}

// ListTCPEdges returns a page of the account's TCP edges, newest first.
func (s *Service) ListTCPEdges(ctx context.Context, p Principal, opts ListOptions) (*Page[edges.TCPEdge], error) {
	return list(ctx, s, p, tcpEdgeForm.Form, "", tcpEdgeKind.Collection, opts, s.presentTCPEdge)
}

// UpdateTCPEdge changes the fields present in params, as
// [Service.UpdateTLSEdge] does.
func (s *Service) UpdateTCPEdge(ctx context.Context, p Principal, id string, params edges.UpdateTCPEdgeParams) (*edges.TCPEdge, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	hostports, domainIDs, err := s.newHostports(ctx, p, params.Hostports, edges.EdgeTCP)
	if err != nil {
		return nil, err
	}
	var want edges.TCPEdge
	v, err := records.Update(ctx, s.db, p, tcpEdgeForm.Form, id, func(v *edges.TCPEdge, rec *store.Record) error {
		params.Apply(&v.Description, &v.Metadata)
		setModule(&v.IPRestriction, params.IPRestriction, edges.IPRestrictionParams.Module)
		setModule(&v.Backend, params.Backend, edges.BackendParams.Module)
		setHostports(&v.Hostports, rec, hostports, domainIDs, v.Refs(), edges.EdgeTCP)
		want = *v
		return nil
	})
	if err != nil {
		return nil, s.edgeWriteErr(err, tcpEdgeKind, id, hostports, tcpRefFields(&want, domainIDs))
	}
	s.presentTCPEdge(v, store.Record{})
	return v, nil
}

// DeleteTCPEdge deletes a TCP edge with its modules.
func (s *Service) DeleteTCPEdge(ctx context.Context, p Principal, id string) error {
	return records.Remove(ctx, s.db, p, tcpEdgeKind, id)
}

var tcpEdgeKind = &records.Kind{StoreKind: KindTCPEdge, Prefix: edges.TCPEdgePrefix, Collection: "edges/tcp", Noun: "TCP edge", Event: "tcp_edge"}

var tcpEdgeForm = &kind[edges.TCPEdge]{Form: storedforms.TCPEdge(tcpEdgeKind), present: (*Service).presentTCPEdge}
