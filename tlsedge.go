package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/store"
)

// presentTLSEdge fills the URIs of an edge and of its modules' Refs and
// clears what is stored but not shown.
func (s *Service) presentTLSEdge(v *edges.TLSEdge, _ store.Record) {
	v.URI = s.uri(tlsEdgeKind.Collection, v.ID)
	if v.Hostports == nil {
		v.Hostports = []string{}
	}
	s.presentIPRestrictionModule(v.IPRestriction)
	if m := v.TrafficPolicy; m != nil {
		m.IPPolicyIDs = nil
	}
	if m := v.Backend; m != nil {
		m.Backend = s.ref(backendKind.Collection, m.Backend.ID)
	}
}

// CreateTLSEdge creates a TLS edge, with the modules params gives set in
// the same write (validated as their replace operations validate them,
// violations under the module's name). hostports follow the rules of
// [Service.CreateHTTPSEdge]. A traffic policy module with a TLS
// termination module that terminates upstream is a conflict.
func (s *Service) CreateTLSEdge(ctx context.Context, p Principal, params edges.CreateTLSEdgeParams) (*edges.TLSEdge, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v := &edges.TLSEdge{ID: s.ids.New(edges.TLSEdgePrefix), CreatedAt: s.timestamp(),
		Description: params.Description, Metadata: params.Metadata, Hostports: edges.CanonicalHostports(params.Hostports, edges.EdgeTLS),
		IPRestriction:  moduleOf(params.IPRestriction, edges.IPRestrictionParams.Module),
		TLSTermination: moduleOf(params.TLSTermination, edges.TLSTerminationParams.Module),
		Backend:        moduleOf(params.Backend, edges.BackendParams.Module)}
	tp, err := s.inlinePolicy(ctx, p, policy.TargetConnection, v.ID, params.TrafficPolicy)
	if err != nil {
		return nil, err
	}
	v.TrafficPolicy = tp
	if err := v.CheckModules(); err != nil {
		return nil, err
	}
	domainIDs, err := s.resolveHostports(ctx, p, v.Hostports)
	if err != nil {
		return nil, err
	}
	if err := records.Create(ctx, s.db, p, tlsEdgeForm.Form, v.ID, "", v, edgeRefs(v.Refs(), domainIDs, nil), hostportKeys(v.Hostports, edges.EdgeTLS)...); err != nil {
		return nil, s.edgeWriteErr(err, tlsEdgeKind, v.ID, v.Hostports, tlsRefFields(v, domainIDs))
	}
	s.presentTLSEdge(v, store.Record{})
	return v, nil
}

func tlsRefFields(v *edges.TLSEdge, domainIDs []string) refFields {
	fields := refFields{}
	fields.hostports(domainIDs)
	fields.ipRestriction(v.IPRestriction)
	fields.trafficPolicy(v.TrafficPolicy)
	fields.backend(v.Backend)
	return fields
}

// GetTLSEdge returns a TLS edge of the account, with its modules.
func (s *Service) GetTLSEdge(ctx context.Context, p Principal, id string) (*edges.TLSEdge, error) {
	v, rec, err := records.Get(ctx, s.db, p, tlsEdgeForm.Form, id)
	if err != nil {
		return nil, err
	}
	s.presentTLSEdge(v, rec)
	return v, nil
}

// ListTLSEdges returns a page of the account's TLS edges, newest first.
func (s *Service) ListTLSEdges(ctx context.Context, p Principal, opts ListOptions) (*Page[edges.TLSEdge], error) {
	return list(ctx, s, p, tlsEdgeForm.Form, "", tlsEdgeKind.Collection, opts, s.presentTLSEdge)
}

// UpdateTLSEdge changes the fields present in params: hostports given
// replace the edge's, and a module given replaces that module, with the
// rules of [Service.CreateTLSEdge]; modules not given are left as they
// are.
func (s *Service) UpdateTLSEdge(ctx context.Context, p Principal, id string, params edges.UpdateTLSEdgeParams) (*edges.TLSEdge, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	tp, err := s.inlinePolicy(ctx, p, policy.TargetConnection, id, params.TrafficPolicy)
	if err != nil {
		return nil, err
	}
	hostports, domainIDs, err := s.newHostports(ctx, p, params.Hostports, edges.EdgeTLS)
	if err != nil {
		return nil, err
	}
	var (
		refused error // the callback's own error, which update would reword
		want    edges.TLSEdge
	)
	v, err := records.Update(ctx, s.db, p, tlsEdgeForm.Form, id, func(v *edges.TLSEdge, rec *store.Record) error {
		params.Apply(&v.Description, &v.Metadata)
		setModule(&v.IPRestriction, params.IPRestriction, edges.IPRestrictionParams.Module)
		setModule(&v.TLSTermination, params.TLSTermination, edges.TLSTerminationParams.Module)
		setModule(&v.Backend, params.Backend, edges.BackendParams.Module)
		if tp != nil {
			v.TrafficPolicy = tp
		}
		if refused = v.CheckModules(); refused != nil {
			return refused
		}
		setHostports(&v.Hostports, rec, hostports, domainIDs, v.Refs(), edges.EdgeTLS)
		want = *v
		return nil
	})
	switch {
	case refused != nil:
		return nil, refused
	case err != nil:
		return nil, s.edgeWriteErr(err, tlsEdgeKind, id, hostports, tlsRefFields(&want, domainIDs))
	}
	s.presentTLSEdge(v, store.Record{})
	return v, nil
}

// DeleteTLSEdge deletes a TLS edge with its modules.
func (s *Service) DeleteTLSEdge(ctx context.Context, p Principal, id string) error {
	return records.Remove(ctx, s.db, p, tlsEdgeKind, id)
}

var tlsEdgeKind = &records.Kind{StoreKind: KindTLSEdge, Prefix: edges.TLSEdgePrefix, Collection: "edges/tls", Noun: "TLS edge", Event: "tls_edge"}

var tlsEdgeForm = &kind[edges.TLSEdge]{Form: storedforms.TLSEdge(tlsEdgeKind), present: (*Service).presentTLSEdge}
