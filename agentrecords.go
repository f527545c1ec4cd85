package edgeplane

import (
	"context"
	"net/netip"
	"strconv"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/internal/agentstate"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/store"
)

// agentRecords is what package internal/agentstate, which holds
// agents' sessions, tunnels and endpoints (the Service's agentState),
// needs of the root (its Records): authentication of authtokens, IP
// restrictions, traffic policies, reserved domains, the hostport keys
// edges share with endpoints, and the presentation of its kinds.
type agentRecords struct{ s *Service }

// Authenticate implements agentstate.Records.
func (r agentRecords) Authenticate(ctx context.Context, token string) (agentstate.Auth, error) {
	auth, err := r.s.authenticateTunnelToken(ctx, token)
	if err != nil {
		return agentstate.Auth{}, err
	}
	return agentstate.Auth{AccountID: auth.AccountID, CredentialID: auth.Credential.ID, ACL: auth.ACL}, nil
}

// CheckAgentIP implements agentstate.Records.
func (r agentRecords) CheckAgentIP(ctx context.Context, accountID string, ip netip.Addr) error {
	return r.s.checkIPRestrictions(ctx, accountID, ipaccess.TypeAgent, ip, false)
}

// CompilePolicy implements agentstate.Records.
func (r agentRecords) CompilePolicy(ctx context.Context, accountID string, target policy.Target, scope, field, value string) (string, []string, error) {
	return r.s.compilePolicy(ctx, accountID, target, scope, field, value)
}

// ReservedDomain implements agentstate.Records.
func (r agentRecords) ReservedDomain(ctx context.Context, accountID, host string) (string, bool, error) {
	return r.s.reservedDomainOf(ctx, accountID, host)
}

// EndpointKeys implements agentstate.Records: an endpoint's hostport's
// key, and for a tcp endpoint its port's, as a TCP edge's.
func (agentRecords) EndpointKeys(e *agents.Endpoint) []string {
	keys := []string{hostportKey(e.Hostport)}
	if e.Proto == agents.ProtoTCP {
		keys = append(keys, tcpPortKey(strconv.FormatInt(e.Port, 10)))
	}
	return keys
}

// HostportErr implements agentstate.Records.
func (r agentRecords) HostportErr(err error, id, hostport string) error {
	return r.s.edgeWriteErr(err, endpointKind, id, []string{hostport}, nil)
}

// PresentSession implements agentstate.Records.
func (r agentRecords) PresentSession(m *agentstate.SessionRecord) {
	r.s.presentTunnelSession(m, store.Record{})
}

// PresentTunnel implements agentstate.Records.
func (r agentRecords) PresentTunnel(t *backends.Tunnel) { r.s.presentTunnel(t, store.Record{}) }

// PresentEndpoint implements agentstate.Records.
func (r agentRecords) PresentEndpoint(m *agentstate.EndpointRecord) {
	r.s.presentEndpoint(m, store.Record{})
}
