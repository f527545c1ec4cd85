package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"

	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/store"
)

// The identity of the kind this file declares (see kindList).
var (
	endpointConfigKind = &records.Kind{StoreKind: KindEndpointConfiguration, Prefix: domains.EndpointConfigurationPrefix, Collection: "endpoint_configurations", Noun: "endpoint configuration", Event: "endpoint_configuration"}
)

var endpointConfigForm = &kind[domains.EndpointConfiguration]{Form: storedforms.EndpointConfiguration(endpointConfigKind), present: (*Service).presentEndpointConfiguration}

func (s *Service) presentEndpointConfiguration(c *domains.EndpointConfiguration, _ store.Record) {
	c.URI = s.uri(endpointConfigKind.Collection, c.ID)
}

// CreateEndpointConfiguration creates an endpoint configuration of type
// http or https (POST /endpoint_configurations), for reserved domains to
// attach.
func (s *Service) CreateEndpointConfiguration(ctx context.Context, p Principal, params domains.CreateEndpointConfigurationParams) (*domains.EndpointConfiguration, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	c := params.EndpointConfiguration()
	c.ID, c.CreatedAt = s.ids.New(domains.EndpointConfigurationPrefix), s.timestamp()
	if err := records.Create(ctx, s.db, p, endpointConfigForm.Form, c.ID, "", &c, nil); err != nil {
		return nil, err
	}
	s.presentEndpointConfiguration(&c, store.Record{})
	return &c, nil
}

// GetEndpointConfiguration returns an endpoint configuration (GET
// /endpoint_configurations/{id}).
func (s *Service) GetEndpointConfiguration(ctx context.Context, p Principal, id string) (*domains.EndpointConfiguration, error) {
	c, rec, err := records.Get(ctx, s.db, p, endpointConfigForm.Form, id)
	if err != nil {
		return nil, err
	}
	s.presentEndpointConfiguration(c, rec)
	return c, nil
}

// ListEndpointConfigurations returns a page of the account's endpoint
// configurations, newest first (GET /endpoint_configurations).
func (s *Service) ListEndpointConfigurations(ctx context.Context, p Principal, opts ListOptions) (*Page[domains.EndpointConfiguration], error) {
	return list(ctx, s, p, endpointConfigForm.Form, "", endpointConfigKind.Collection, opts, s.presentEndpointConfiguration)
}

// UpdateEndpointConfiguration changes the description and metadata present
// in params (PATCH /endpoint_configurations/{id}); the type cannot change.
func (s *Service) UpdateEndpointConfiguration(ctx context.Context, p Principal, id string, params domains.UpdateEndpointConfigurationParams) (*domains.EndpointConfiguration, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	c, err := records.Update(ctx, s.db, p, endpointConfigForm.Form, id, func(c *domains.EndpointConfiguration, _ *store.Record) error {
		params.Apply(c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.presentEndpointConfiguration(c, store.Record{})
	return c, nil
}

// DeleteEndpointConfiguration deletes an endpoint configuration (DELETE
// /endpoint_configurations/{id}). While a reserved domain uses it, it
// cannot be deleted: the error is a conflict naming the domain.
func (s *Service) DeleteEndpointConfiguration(ctx context.Context, p Principal, id string) error {
	return s.inUseByDomains(ctx, p, records.Remove(ctx, s.db, p, endpointConfigKind, id))
}
