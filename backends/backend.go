package backends

import (
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/validate"
	"github.com/edgeplane/edgeplane/resource"
)

// Identifier prefixes.
const (
	// IDPrefix starts every tunnel group backend identifier.
	IDPrefix = "bkdtg_"
	// TunnelPrefix starts every tunnel identifier.
	TunnelPrefix = "tn_"
)

// TunnelGroupBackend is a tunnel group backend: it routes traffic to the
// account's online tunnels whose labels include all of its labels.
type TunnelGroupBackend struct {
	// ID is the backend's identifier, IDPrefix followed by an opaque string.
	ID string `json:"id"`
	// URI locates the backend, {base_url}/backends/tunnel_group/<id>;
	// filled by the Service.
	URI string `json:"uri"`
	// CreatedAt is when the backend was created.
	CreatedAt time.Time `json:"created_at"`
	// Description says what the backend is for.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
	// Labels are the labels to watch for tunnels on; never nil in a
	// response.
	Labels map[string]string `json:"labels"`
	// Tunnels are the online tunnels the backend selects ([Selects]),
	// computed by the Service when it returns the backend; never nil in a
	// response (empty when none). They are not stored.
	Tunnels []resource.Ref `json:"tunnels"`
}

// CreateParams are the parameters of creating a tunnel group backend.
type CreateParams struct {
	// Description is optional, at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is optional, at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
	// Labels are required: 1 to [MaxLabels] labels (see [ValidateLabels]).
	Labels map[string]string `json:"labels" openapi:"required,min=1,max=32"`
}

// Validate reports every broken rule of p at once: the byte limits and the
// label rules; labels must hold at least one label. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p CreateParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	checkBackendLabels(&vs, p.Labels)
	return vs.Err()
}

func checkBackendLabels(vs *apierr.Violations, labels map[string]string) {
	if len(labels) == 0 {
		vs.Add("labels", "must have at least one label; a backend selects the tunnels that carry all of its labels")
		return
	}
	checkLabels(vs, "labels", labels)
}

// Backend returns the backend p describes, without the fields the Service
// assigns (ID, URI, CreatedAt, Tunnels). Its Labels are a copy of p.Labels.
// Call it after [CreateParams.Validate].
func (p CreateParams) Backend() TunnelGroupBackend {
	return TunnelGroupBackend{Description: p.Description, Metadata: p.Metadata, Labels: cloneLabels(p.Labels)}
}

// UpdateParams are the parameters of updating a tunnel group backend. A nil
// field is absent and leaves the value unchanged.
type UpdateParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
	// Labels replaces the whole label set; when present it must hold at
	// least one label.
	Labels *map[string]string `json:"labels" openapi:"min=1,max=32"`
}

// Validate reports every broken rule of p at once. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.Labels != nil {
		checkBackendLabels(&vs, *p.Labels)
	}
	return vs.Err()
}

// Apply sets the fields of b that p carries (labels copied). Call it after
// [UpdateParams.Validate].
func (p UpdateParams) Apply(b *TunnelGroupBackend) {
	if p.Description != nil {
		b.Description = *p.Description
	}
	if p.Metadata != nil {
		b.Metadata = *p.Metadata
	}
	if p.Labels != nil {
		b.Labels = cloneLabels(*p.Labels)
	}
}

// MaxTunnels bounds the tunnels one backend selects: its Tunnels field
// and the tunnels a data plane reads for it show at most this many, the
// newest. Beyond it older tunnels are left out.
const MaxTunnels = 1000

// Tunnel is an online tunnel: registered by a tunnel server when an agent
// opens it, removed when it closes. The specification shows only its
// identifier and URI; the other fields are this library's.
type Tunnel struct {
	// ID is the tunnel's identifier, TunnelPrefix followed by an opaque
	// string.
	ID string `json:"id"`
	// URI locates the tunnel, {base_url}/tunnels/<id>; filled by the
	// Service.
	URI string `json:"uri"`
	// AccountID is the account the tunnel belongs to: its credential's.
	AccountID string `json:"account_id"`
	// StartedAt is when the tunnel was registered.
	StartedAt time.Time `json:"started_at"`
	// Labels are the tunnel's labels; never nil in a response.
	Labels map[string]string `json:"labels"`
	// Credential is the credential whose authtoken registered the tunnel;
	// its URI is filled by the Service.
	Credential resource.Ref `json:"credential"`
	// ForwardsTo is the upstream server the agent forwards the tunnel's
	// traffic to, as the agent reported it (http://127.0.0.1:3000), or ""
	// when it did not say.
	ForwardsTo string `json:"forwards_to"`
	// ExpiresAt is when the lease of a registered tunnel
	// (Host.RegisterTunnel) ends: unless its tunnel server renews the
	// lease before then, the tunnel is offline from that moment (no
	// backend selects it) and is removed. Zero (and not shown) for an
	// agent's tunnel, which is online while its node's lease is (Node).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// TunnelSession is the agent session that holds the tunnel, when an
	// agent bound it through a tunnel server (package tunnel): the proxy
	// then hands the tunnel's connections to that session and never dials
	// ForwardsTo, which is informational. Nil for a tunnel registered by
	// a host that forwards itself (Host.RegisterTunnel).
	TunnelSession *resource.Ref `json:"tunnel_session,omitempty"`
	// Node is the ID of the edge node whose tunnel server holds the
	// agent's session ("" and not shown for a registered tunnel).
	Node string `json:"node,omitempty"`
	// Metadata is what the agent set for the tunnel; "" otherwise.
	Metadata string `json:"metadata,omitempty"`
}

// Expired reports whether t's lease has ended at time now. An agent's
// tunnel has no lease of its own (its node's holds it) and never
// expires.
func (t *Tunnel) Expired(now time.Time) bool {
	return !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt)
}

// RegisterTunnelParams are what a tunnel server knows about a tunnel an
// agent opens.
type RegisterTunnelParams struct {
	// Labels are the tunnel's labels, 0 to [MaxLabels] of them (see
	// [ValidateLabels]). A tunnel without labels is online but no backend
	// selects it.
	Labels map[string]string `json:"labels"`
	// ForwardsTo is optional: the upstream server the agent forwards to,
	// an absolute http, https, tcp or tls URL with a host and no path
	// beyond "/" (see [CheckForwardsTo]).
	ForwardsTo string `json:"forwards_to"`
}

// Validate reports every broken rule at once: the label rules and
// forwards_to. It returns nil or an InvalidArgument [*apierr.Error].
func (p RegisterTunnelParams) Validate() error {
	var vs apierr.Violations
	checkLabels(&vs, "labels", p.Labels)
	if reason := CheckForwardsTo(p.ForwardsTo); reason != "" {
		vs.Add("forwards_to", "%s", reason)
	}
	return vs.Err()
}

// Tunnel returns the tunnel p describes, without the fields the Service
// assigns. Its Labels are a copy of p.Labels, never nil; ForwardsTo is
// kept as given.
func (p RegisterTunnelParams) Tunnel() Tunnel {
	return Tunnel{Labels: cloneLabels(p.Labels), ForwardsTo: p.ForwardsTo}
}
