package edgeplane

import (
	"context"
	"net/netip"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/ipaccess"
)

// IP restrictions of the types the Service's own surfaces serve: api
// (checked by the transport of the management API on every
// authenticated request, [Service.CheckIPRestrictions]), agent (checked
// when a tunnel server opens an agent's session, and again by the tunnel
// server for the sessions it holds whenever a restriction or an IP
// policy of the account changes, [hosting.TunnelHost.IPRestrictions]) and
// dashboard (for a web console; none is built in yet). The type
// endpoints is the edge proxy's ([hosting.DataPlaneHost.EndpointRestrictions]).
//
// Every check reads the account's restrictions of the type, each with
// the combined rules of its IP policies, through an access cache: an
// account's compiled restrictions are kept until one of its IP
// restrictions, IP policies or rules is written, by this Service (its
// store drops them before the write returns) or by another process (the
// cache's follower of the change feed drops them, and a request's fence
// waits for it: see package internal/fence). A check that cannot read
// the restrictions fails, and the traffic with it: restrictions fail
// closed. The checks, the access cache and the restrictions' compiled
// enforcers are package internal/dataplane's (the Service's dataplane).

// checkIPRestrictions is [Service.CheckIPRestrictions] (cached: true) and
// the check of an agent's session when it opens (cached: false):
// [dataplane.Compiler.Check].
func (s *Service) checkIPRestrictions(ctx context.Context, accountID, typ string, ip netip.Addr, cached bool) error {
	return s.dataplane.Check(ctx, accountID, typ, ip, cached)
}

// CheckIPRestrictions checks ip, the address a request of p comes from,
// against the IP restrictions of p's account of type typ:
// [ipaccess.TypeAPI] for the management API, [ipaccess.TypeDashboard]
// for a web console. It returns nil when they let the request through
// (logging a warning, at most once per restriction and address per
// [ipaccess.WarnInterval], for each restriction that is not enforced and
// would refuse it) and a PermissionDenied error naming the enforced
// restriction that refuses it otherwise; an error reading the
// restrictions refuses too. An invalid ip (unknown) is refused by any
// enforced restriction. Transports call it once per authenticated
// request, before acting on it.
func (s *Service) CheckIPRestrictions(ctx context.Context, p Principal, typ string, ip netip.Addr) error {
	if err := p.Check(); err != nil {
		return err
	}
	return s.checkIPRestrictions(ctx, p.AccountID, typ, ip, true)
}

// IPRestrictionCounts returns how many requests and sessions the
// Service's checks of IP restrictions refused, and let through with a
// warning, by type (for metrics).
func (s *Service) IPRestrictionCounts() []ipaccess.TypeCount {
	return s.dataplane.IPRestrictionCounts()
}

// checkSelfLockout refuses an enforced restriction of type api that
// would refuse the address of the request that writes it (p.ClientIP,
// when the transport knows it): an account cannot lock itself out of
// the API with one call.
func (s *Service) checkSelfLockout(ctx context.Context, p Principal, r *ipaccess.Restriction) error {
	if r.Type != ipaccess.TypeAPI || !r.Enforced || !p.ClientIP.IsValid() {
		return nil
	}
	set, err := s.dataplane.IPSet(ctx, p.AccountID, records.RefIDs(r.IPPolicies))
	if err != nil {
		return err
	}
	ip := p.ClientIP.Unmap()
	if set.Allowed(ip) {
		return nil
	}
	return apierr.Invalidf("enforced",
		"this restriction would refuse the address this request comes from (%s) and lock the account out of the API; "+
			"to restrict the API on purpose, write it with enforced: false, then set enforced: true from an address its IP policies allow", ip)
}
