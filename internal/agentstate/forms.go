package agentstate

import (
	"maps"
	"net"
	"strconv"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/internal/nodes"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// SessionRecord is a tunnel session as the Service holds it: the API
// model and what only its tunnel server knows of the agent, which the
// API does not show.
type SessionRecord struct {
	agents.TunnelSession
	ClientType    string
	StopSupported bool
}

// EndpointRecord is an endpoint as the Service holds it: the model and
// the credential of the session that bound it, which a rebind checks
// and the API does not show.
type EndpointRecord struct {
	agents.Endpoint
	CredentialID string
}

// sessionDoc is the stored form of a tunnel session (see package
// internal/records). Its account is its record's and its credential the
// record's parent; its transport is always agents.Transport.
type sessionDoc struct {
	StartedAt     time.Time `json:"started_at"`
	Node          string    `json:"node"`
	AgentVersion  string    `json:"agent_version,omitempty"`
	OS            string    `json:"os,omitempty"`
	IP            string    `json:"ip,omitempty"`
	Metadata      string    `json:"metadata,omitempty"`
	Region        string    `json:"region,omitempty"`
	ClientType    string    `json:"client_type,omitempty"`
	StopSupported bool      `json:"stop_supported,omitempty"`
	StopRequested bool      `json:"stop_requested,omitempty"`
}

// SessionForm returns the stored form of tunnel sessions, of kind k.
func SessionForm(k *records.Kind) records.Form[SessionRecord] {
	return records.PlainForm(k,
		func(r *SessionRecord) *sessionDoc {
			return &sessionDoc{StartedAt: r.StartedAt, Node: r.Node, AgentVersion: r.AgentVersion, OS: r.OS, IP: r.IP,
				Metadata: r.Metadata, Region: r.Region, ClientType: r.ClientType, StopSupported: r.StopSupported, StopRequested: r.StopRequested}
		},
		func(d *sessionDoc, rec store.Record) *SessionRecord {
			return &SessionRecord{TunnelSession: agents.TunnelSession{ID: rec.ID, AccountID: rec.AccountID, AgentVersion: d.AgentVersion,
				Credential: resource.Ref{ID: rec.ParentID}, IP: d.IP, Metadata: d.Metadata, OS: d.OS, Region: d.Region,
				StartedAt: d.StartedAt, Node: d.Node, StopRequested: d.StopRequested},
				ClientType: d.ClientType, StopSupported: d.StopSupported}
		})
}

// sessionIndexes returns a session record's index entries: its node,
// read when the node is removed or reaped.
func sessionIndexes(node string) []store.IndexEntry {
	return []store.IndexEntry{{Name: nodes.SessionIndex, Value: node}}
}

// tunnelDoc is the stored form of a tunnel (see package
// internal/records). Its account is its record's. The record's parent
// is the credential that registered it ([State.RegisterTunnel]), or,
// for a tunnel an agent started in its session ([State.StartTunnel]),
// the session: then CredentialID holds the session's credential.
type tunnelDoc struct {
	StartedAt    time.Time         `json:"started_at"`
	Labels       map[string]string `json:"labels,omitempty"`
	ForwardsTo   string            `json:"forwards_to,omitempty"`
	ExpiresAt    time.Time         `json:"expires_at,omitzero"`
	CredentialID string            `json:"credential_id,omitempty"`
	Node         string            `json:"node,omitempty"`
	Metadata     string            `json:"metadata,omitempty"`
}

// TunnelForm returns the stored form of tunnels, of kind k.
func TunnelForm(k *records.Kind) records.Form[backends.Tunnel] {
	return records.PlainForm(k,
		func(t *backends.Tunnel) *tunnelDoc {
			d := &tunnelDoc{StartedAt: t.StartedAt, Labels: t.Labels, ForwardsTo: t.ForwardsTo, ExpiresAt: t.ExpiresAt, Metadata: t.Metadata, Node: t.Node}
			if t.TunnelSession != nil {
				d.CredentialID = t.Credential.ID // the record's parent is the session
			}
			return d
		},
		func(d *tunnelDoc, rec store.Record) *backends.Tunnel {
			t := &backends.Tunnel{ID: rec.ID, AccountID: rec.AccountID, StartedAt: d.StartedAt, Labels: maps.Clone(d.Labels),
				Credential: resource.Ref{ID: rec.ParentID}, ForwardsTo: d.ForwardsTo, ExpiresAt: d.ExpiresAt, Metadata: d.Metadata, Node: d.Node}
			if d.CredentialID != "" {
				t.Credential = resource.Ref{ID: d.CredentialID}
				t.TunnelSession = &resource.Ref{ID: rec.ParentID}
			}
			return t
		})
}

// onlineTunnel is what selecting a backend's tunnels, and holding them
// to an ACL, need of a tunnel record (fields of tunnelDoc, under its
// names): decoding only these fields costs a fraction of a full decode.
type onlineTunnel struct {
	Labels    map[string]string `json:"labels"`
	ExpiresAt time.Time         `json:"expires_at,omitzero"`
	Node      string            `json:"node,omitempty"`
}

const (
	// indexLabel is the secondary index of tunnels by label
	// ("key=value").
	indexLabel = "label"
	// indexLeaseEnd is the secondary index of tunnels by the end of
	// their lease, read by [State.Reap].
	indexLeaseEnd = "lease_end"
)

// tunnelIndexes returns a tunnel record's index entries: its labels and
// the end of its lease (a registered tunnel's; an agent's has none).
func tunnelIndexes(t *backends.Tunnel) []store.IndexEntry {
	out := make([]store.IndexEntry, 0, len(t.Labels)+1)
	for k, v := range t.Labels {
		out = append(out, store.IndexEntry{Name: indexLabel, Value: k + "=" + v})
	}
	if t.ExpiresAt.IsZero() {
		return out
	}
	return append(out, store.IndexEntry{Name: indexLeaseEnd, Value: store.IndexTime(t.ExpiresAt)})
}

// endpointDoc is the stored form of an endpoint (see package
// internal/records). Its account is its record's and its session the
// record's parent. URL, PublicURL, Scheme, Hostport and Type are
// computed from Proto, Host and Port.
type endpointDoc struct {
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	Proto          string    `json:"proto"`
	Host           string    `json:"host"`
	Port           int64     `json:"port"`
	CredentialID   string    `json:"credential_id"`
	DomainID       string    `json:"domain_id,omitempty"`
	Region         string    `json:"region,omitempty"`
	Metadata       string    `json:"metadata,omitempty"`
	Description    string    `json:"description,omitempty"`
	UpstreamURL    string    `json:"upstream_url,omitempty"`
	TrafficPolicy  string    `json:"traffic_policy,omitempty"`
	PassthroughTLS bool      `json:"passthrough_tls,omitempty"`
	Node           string    `json:"node,omitempty"`
	PoolingEnabled bool      `json:"pooling_enabled,omitempty"`
	// Binding is "internal" for an internal endpoint; omitted for a
	// public one (every endpoint stored before bindings existed).
	Binding string `json:"binding,omitempty"`
}

// EndpointForm returns the stored form of endpoints, of kind k.
func EndpointForm(k *records.Kind) records.Form[EndpointRecord] {
	return records.PlainForm(k,
		func(r *EndpointRecord) *endpointDoc {
			d := &endpointDoc{CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Proto: r.Proto, Host: r.Host, Port: r.Port,
				CredentialID: r.CredentialID, DomainID: records.RefID(r.Domain), Region: r.Region, Metadata: r.Metadata,
				Description: r.Description, UpstreamURL: r.UpstreamURL, TrafficPolicy: r.TrafficPolicy, PassthroughTLS: r.PassthroughTLS, Node: r.Node,
				PoolingEnabled: r.PoolingEnabled}
			if r.IsInternal() {
				d.Binding = agents.BindingInternal
			}
			return d
		},
		func(d *endpointDoc, rec store.Record) *EndpointRecord {
			r := &EndpointRecord{Endpoint: agents.Endpoint{ID: rec.ID, AccountID: rec.AccountID, Region: d.Region,
				CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, Proto: d.Proto, Host: d.Host, Port: d.Port,
				Metadata: d.Metadata, Description: d.Description, Domain: records.IDRef(d.DomainID), UpstreamURL: d.UpstreamURL,
				TrafficPolicy: d.TrafficPolicy, TunnelSession: &resource.Ref{ID: rec.ParentID}, PassthroughTLS: d.PassthroughTLS, Node: d.Node,
				PoolingEnabled: d.PoolingEnabled},
				CredentialID: d.CredentialID}
			r.Bindings = bindingsOf(d.Binding)
			setEndpointAddress(&r.Endpoint)
			return r
		})
}

// setEndpointAddress sets the fields computed from e's Proto, Host and
// Port: https://host and http://host for HTTP (their ports are the
// defaults), tls://host:443 and tcp://host:port otherwise.
func setEndpointAddress(e *agents.Endpoint) {
	e.Type = agents.EndpointType
	e.Scheme = e.Proto
	e.Hostport = net.JoinHostPort(e.Host, strconv.FormatInt(e.Port, 10))
	switch e.Proto {
	case agents.ProtoHTTP, agents.ProtoHTTPS:
		e.URL = e.Proto + "://" + e.Host
		if e.Port != endpointPort(e.Proto) { // an internal endpoint's own port
			e.URL = e.Proto + "://" + e.Hostport
		}
	default:
		e.URL = e.Proto + "://" + e.Hostport
	}
	e.PublicURL = e.URL
}
