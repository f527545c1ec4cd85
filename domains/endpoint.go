package domains

import (
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/validate"
)

// Endpoint configuration types.
const (
	// EndpointTypeHTTP is an endpoint configuration for plain HTTP.
	EndpointTypeHTTP = "http"
	// EndpointTypeHTTPS is an endpoint configuration for HTTPS.
	EndpointTypeHTTPS = "https"
)

// EndpointConfiguration is the minimal record of an endpoint
// configuration: what a reserved domain attaches for its HTTP or HTTPS
// traffic. Its modules are not shown by the specification and are not
// modelled.
type EndpointConfiguration struct {
	// ID is the identifier, EndpointConfigurationPrefix followed by an
	// opaque string.
	ID string `json:"id"`
	// URI locates the endpoint configuration; filled by the Service.
	URI string `json:"uri"`
	// CreatedAt is when it was created.
	CreatedAt time.Time `json:"created_at"`
	// Description says what it is for.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
	// Type is [EndpointTypeHTTP] or [EndpointTypeHTTPS]; it never changes.
	Type string `json:"type" openapi:"oneof=http https"`
}

// CreateEndpointConfigurationParams are the parameters of creating an
// endpoint configuration.
type CreateEndpointConfigurationParams struct {
	// Type is required: http or https.
	Type string `json:"type" validate:"required,oneof=http https"`
	// Description is optional, at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is optional, at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p CreateEndpointConfigurationParams) Validate() error { return validate.Struct(p) }

// EndpointConfiguration returns the endpoint configuration p describes,
// without the fields the Service assigns (ID, URI, CreatedAt).
func (p CreateEndpointConfigurationParams) EndpointConfiguration() EndpointConfiguration {
	return EndpointConfiguration{Description: p.Description, Metadata: p.Metadata, Type: p.Type}
}

// UpdateEndpointConfigurationParams are the parameters of updating an
// endpoint configuration; nil fields are left unchanged.
type UpdateEndpointConfigurationParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
	// Type is never allowed: the type cannot change, because reserved
	// domains rely on it. It exists so that a request naming it is refused
	// rather than silently ignored.
	Type *string `json:"type" openapi:"absent"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateEndpointConfigurationParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.Type != nil {
		vs.Add("type", "cannot be changed by update")
	}
	return vs.Err()
}

// Apply sets the fields of c that p carries. Type is never applied.
func (p UpdateEndpointConfigurationParams) Apply(c *EndpointConfiguration) {
	setString(&c.Description, p.Description)
	setString(&c.Metadata, p.Metadata)
}
