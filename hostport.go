package edgeplane

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/internal/dataplane"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/kinds"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/store"
)

// Hostports of edges. An edge's record holds one store key per hostport
// (hostportKey), so a hostport is used by one edge in the whole store,
// whatever its kind or account: the store refuses a second one atomically
// (a conflict naming the hostport). An agent's endpoint (endpoint.go)
// takes the same keys, so an edge and an endpoint never share one. The record also references the
// reserved domain that each host is (or that covers it, a wildcard), so
// the domain cannot be released while an edge serves it, and a domain
// released between the check and the write fails the write.

// hostportKey is the store key of a canonical hostport.
func hostportKey(hostport string) string { return dataplane.HostportKey(hostport) }

// tcpPortKey is the store key of a TCP edge's port: a TCP client names
// no host, so an edge proxy tells TCP edges apart by port alone, and a
// port serves one TCP edge in the whole store (a TCP edge may list
// several hosts on one port).
func tcpPortKey(port string) string { return kinds.TCPPortKey(port) }

// hostportKeys returns the store keys of the canonical hostports of an
// edge of type t: one per hostport, and for a TCP edge one per port.
func hostportKeys(hostports []string, t edges.EdgeType) []string {
	keys := make([]string, 0, len(hostports))
	for _, hp := range hostports {
		keys = append(keys, hostportKey(hp))
	}
	if t == edges.EdgeTCP {
		for _, hp := range hostports {
			if k := tcpPortKey(hostportPort(hp)); !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// hostportPort returns the port of a canonical hostport.
func hostportPort(hostport string) string {
	return hostport[strings.LastIndexByte(hostport, ':')+1:]
}

// reservedDomainOf returns the ID of the reserved domain of the account
// that serves host: the domain named host, else the wildcard domain that
// covers it ([domains.Covers]). A name reserved by another account is
// never served through a wildcard of this one. ok is false when there is
// none.
func (s *Service) reservedDomainOf(ctx context.Context, accountID, host string) (id string, ok bool, err error) {
	rec, err := s.store.Lookup(ctx, KindReservedDomain, domainKey(host))
	switch {
	case err == nil:
		return rec.ID, rec.AccountID == accountID, nil
	case !errors.Is(err, apierr.ErrNotFound):
		return "", false, s.db.StoreErr(err, reservedDomainKind, "")
	case domains.IsWildcard(host):
		return "", false, nil
	}
	_, parent, found := strings.Cut(host, ".")
	wildcard := "*." + parent
	if !found || !domains.Covers([]string{wildcard}, host) {
		return "", false, nil
	}
	rec, err = s.store.Lookup(ctx, KindReservedDomain, domainKey(wildcard))
	switch {
	case err == nil:
		return rec.ID, rec.AccountID == accountID, nil
	case errors.Is(err, apierr.ErrNotFound):
		return "", false, nil
	}
	return "", false, s.db.StoreErr(err, reservedDomainKind, "")
}

// resolveHostports returns, for each canonical hostport, the reserved
// domain of p's account that serves its host, or a violation of
// hostports[i] for each host that is not one.
func (s *Service) resolveHostports(ctx context.Context, p Principal, hostports []string) ([]string, error) {
	var vs apierr.Violations
	out := make([]string, len(hostports))
	for i, hp := range hostports {
		host := edges.HostportHost(hp)
		id, ok, err := s.reservedDomainOf(ctx, p.AccountID, host)
		if err != nil {
			return nil, err
		}
		if !ok {
			vs.Add("hostports["+strconv.Itoa(i)+"]", "host %s is not a reserved domain of this account; reserve it, or a wildcard domain that covers it, first", host)
			continue
		}
		out[i] = id
	}
	if err := vs.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// edgeRefs returns the Refs of an edge record: those of its modules and
// the reserved domains of its hostports. domainIDs nil keeps the domains
// of old, the record's current Refs (the hostports did not change).
func edgeRefs(modules, domainIDs, old []string) []string {
	if domainIDs == nil {
		for _, id := range old {
			if strings.HasPrefix(id, domains.ReservedDomainPrefix) {
				domainIDs = append(domainIDs, id)
			}
		}
	}
	return store.UniqueRefs(append(slices.Clip(modules), domainIDs...))
}

// refFields names the request field that made an edge or route record
// reference each ID, so that a reference found missing at the write is a
// violation of that field.
type refFields map[string]string

func (f refFields) add(id, field string) {
	if _, ok := f[id]; !ok && id != "" {
		f[id] = field
	}
}

func (f refFields) hostports(domainIDs []string) {
	for i, id := range domainIDs {
		f.add(id, "hostports["+strconv.Itoa(i)+"]")
	}
}

func (f refFields) ipRestriction(m *edges.IPRestriction) {
	if m != nil {
		for i, r := range m.IPPolicies {
			f.add(r.ID, edges.ModuleIPRestriction+".ip_policy_ids["+strconv.Itoa(i)+"]")
		}
	}
}

func (f refFields) backend(m *edges.Backend) {
	if m != nil {
		f.add(m.Backend.ID, edges.ModuleBackend+".backend_id")
	}
}

func (f refFields) trafficPolicy(m *edges.TrafficPolicy) {
	if m != nil {
		for _, id := range m.IPPolicyIDs {
			f.add(id, edges.ModuleTrafficPolicy+".value")
		}
	}
}

// edgeWriteErr turns the store error of writing an edge or route into
// the caller's: a hostport's key taken is a conflict naming the hostport;
// a missing reference is a violation of the field that named it.
func (s *Service) edgeWriteErr(err error, k *records.Kind, id string, hostports []string, fields refFields) error {
	var (
		dup  *store.DuplicateError
		miss *store.MissingRefError
	)
	switch {
	case errors.As(err, &dup):
		for _, hp := range hostports {
			if dup.Key == hostportKey(hp) {
				return &apierr.Error{Code: apierr.Conflict, Err: err,
					Msg: "the hostport " + hp + " is already used by another edge or an agent's endpoint; a hostport serves one of them"}
			}
			if (k == tcpEdgeKind || k == endpointKind) && dup.Key == tcpPortKey(hostportPort(hp)) {
				return &apierr.Error{Code: apierr.Conflict, Err: err,
					Msg: "the port of hostport " + hp + " is already used by another TCP edge or tcp endpoint; a TCP client names no host, so a port serves one of them"}
			}
		}
	case errors.As(err, &miss):
		if field, ok := fields[miss.ID]; ok {
			if strings.HasPrefix(field, "hostports[") {
				return apierr.Invalidf(field, "%s is no longer reserved by this account", describeID(miss.ID))
			}
			return apierr.Invalidf(field, "%s not found in this account", describeID(miss.ID))
		}
	}
	return s.db.StoreErr(err, k, id)
}

// inlinePolicy validates and compiles a traffic policy module given
// inline in an edge or route request, as its replace operation does, and
// returns the module to store; violations are under traffic_policy.
func (s *Service) inlinePolicy(ctx context.Context, p Principal, target policy.Target, scope string, params *edges.TrafficPolicyParams) (*edges.TrafficPolicy, error) {
	if params == nil {
		return nil, nil
	}
	value, policyIDs, err := s.checkPolicy(ctx, p, target, scope, params.Value)
	if err != nil {
		if apierr.CodeOf(err) == apierr.InvalidArgument {
			var vs apierr.Violations
			vs.AddError(edges.ModuleTrafficPolicy, err)
			return nil, vs.Err()
		}
		return nil, err
	}
	return &edges.TrafficPolicy{Enabled: params.Enabled == nil || *params.Enabled, Value: value, IPPolicyIDs: policyIDs}, nil
}

// newHostports returns the canonical hostports of an update and the
// reserved domains that serve them; both nil when list is (the hostports
// do not change), never nil otherwise.
func (s *Service) newHostports(ctx context.Context, p Principal, list *[]string, t edges.EdgeType) ([]string, []string, error) {
	if list == nil {
		return nil, nil, nil
	}
	hostports := edges.CanonicalHostports(*list, t)
	domainIDs, err := s.resolveHostports(ctx, p, hostports)
	return hostports, domainIDs, err
}

// setHostports sets an edge's hostports, its record's keys and its Refs
// (those of its modules, and the reserved domains of its hostports):
// hostports nil leaves the hostports as they are.
func setHostports(field *[]string, rec *store.Record, hostports, domainIDs, moduleRefs []string, t edges.EdgeType) {
	if hostports != nil {
		*field = hostports
		rec.Keys = hostportKeys(hostports, t)
	}
	rec.Refs = edgeRefs(moduleRefs, domainIDs, rec.Refs)
}
