package agentstate

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"strings"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/store"
)

// internalKeyPrefix begins the store key of an internal endpoint's
// hostport: its name is the account's own, so the key holds the account
// (two accounts may each bind api.internal), and it is not the key
// edges and public endpoints share (an internal name is never served by
// a listener, so it takes no public hostport).
const internalKeyPrefix = "internal_endpoint_hostport:"

// internalKey returns the store key of the internal endpoint of account
// at hostport.
func internalKey(accountID, hostport string) string {
	return internalKeyPrefix + accountID + "/" + hostport
}

// endpointKeys returns the store keys endpoint e holds: an internal
// endpoint's own key, or the keys edges share with public endpoints.
func (s *State) endpointKeys(e *agents.Endpoint) []string {
	if e.IsInternal() {
		return []string{internalKey(e.AccountID, e.Hostport)}
	}
	return s.recs.EndpointKeys(e)
}

// internalTarget resolves and checks where params ask an internal
// endpoint to be: an http or https endpoint whose Domain ends in
// .internal, which the credential's ACL permits (bind:<name>,
// bind:*.<parent>.internal, or an ACL that permits everything); no reserved
// domain serves it, since no listener does.
func internalTarget(acl *credentials.ACL, params agents.EndpointParams) (bindTarget, error) {
	if params.Proto != agents.ProtoHTTP && params.Proto != agents.ProtoHTTPS {
		return bindTarget{}, apierr.Invalidf("Binding", "internal endpoints are http or https here (the forward-internal action forwards HTTP requests); bind a %s endpoint public", params.Proto)
	}
	if params.Domain == "" {
		return bindTarget{}, apierr.Invalidf("Domain", "is required for an internal endpoint: a name that ends in .internal, such as api.internal")
	}
	domain, err := domains.ParseName(params.Domain)
	if err != nil {
		return bindTarget{}, apierr.Invalidf("Domain", "%s", err.Error())
	}
	if !strings.HasSuffix(domain, agents.InternalSuffix) || domains.IsWildcard(domain) {
		return bindTarget{}, apierr.Invalidf("Domain", "an internal endpoint's name must end in .internal and not be a wildcard, got %s", domain)
	}
	if !acl.AllowsDomain(domain) {
		return bindTarget{}, apierr.New(apierr.PermissionDenied, "the credential's ACL does not permit binding the domain %s; it needs the rule %s",
			domain, strings.Join(domainRules(domain), " or "))
	}
	port := int64(params.Port)
	if port == 0 {
		port = endpointPort(params.Proto)
	}
	return bindTarget{host: domain, port: port}, nil
}

// publicInternal refuses a public endpoint whose domain is an internal
// name: internal names are reached through forward-internal only.
func publicInternal(params agents.EndpointParams) error {
	if strings.HasSuffix(strings.ToLower(strings.TrimSuffix(params.Domain, ".")), agents.InternalSuffix) {
		return apierr.Invalidf("Domain", "%s ends in .internal, a name only internal endpoints have; bind it with the binding internal, or bind a public domain", params.Domain)
	}
	return nil
}

// generatedLabelLen is the length of the label of a generated domain:
// 16 base32 characters, 80 bits of the endpoint ID's hash.
const generatedLabelLen = 16

// generatedLabel returns the label of the domain given to the endpoint
// id when it names none: lower-case base32 of the hash of its ID, so
// that a rebind under the ID (after a reconnect, or once its record
// was reaped) is given the same name, and nobody can choose one.
func generatedLabel(id string) string {
	sum := sha256.Sum256([]byte("edgeplane endpoint domain\x00" + id))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:10]))[:generatedLabelLen]
}

// generatedTarget returns where a public http or https endpoint that
// names no domain goes: <label>.<params.DomainBase>, its label derived
// from the endpoint's ID. The credential's ACL must permit the name
// (bind:*.<base>, or an ACL that permits everything). Without a base it
// is refused, saying that a domain is needed.
func generatedTarget(acl *credentials.ACL, params agents.EndpointParams, id string) (bindTarget, error) {
	if params.DomainBase == "" {
		return bindTarget{}, apierr.Invalidf("Domain", "is required for an %s endpoint: this tunnel server gives no domain to endpoints that name none (its operator sets none with -agent-domain-base); name a reserved domain of the account, or a name its wildcard domain covers", params.Proto)
	}
	domain := generatedLabel(id) + "." + strings.ToLower(params.DomainBase)
	if !acl.AllowsDomain(domain) {
		return bindTarget{}, apierr.New(apierr.PermissionDenied, "the credential's ACL does not permit binding a domain the server picks under %s; it needs the rule bind:*.%s, or name a domain it permits",
			params.DomainBase, params.DomainBase)
	}
	return bindTarget{host: domain, port: endpointPort(params.Proto)}, nil
}

// internalWriteErr returns the conflict of an internal endpoint whose
// name the account's other internal endpoint holds; ok is false for
// any other error.
func internalWriteErr(err error, r *EndpointRecord) (error, bool) {
	var dup *store.DuplicateError
	if !errors.As(err, &dup) || !r.IsInternal() || dup.Key != internalKey(r.AccountID, r.Hostport) {
		return nil, false
	}
	return &apierr.Error{Code: apierr.Conflict, Err: err,
		Msg: "the internal endpoint " + r.URL + " is already bound by another agent of this account; an internal name serves one endpoint"}, true
}

// bindTargetOf resolves and checks where params ask endpoint id to be:
// an internal endpoint's name ([internalTarget]); for a public http or
// https endpoint that names no domain, the name the server picks
// ([generatedTarget]); else, a public endpoint whose name is not an
// internal one, as [State.resolveTarget] checks it.
func (s *State) bindTargetOf(ctx context.Context, accountID string, acl *credentials.ACL, params agents.EndpointParams, id string) (bindTarget, error) {
	switch {
	case params.Binding == agents.BindingInternal:
		return internalTarget(acl, params)
	case params.Domain == "" && params.Addr == "" && (params.Proto == agents.ProtoHTTP || params.Proto == agents.ProtoHTTPS):
		return generatedTarget(acl, params, id)
	}
	if err := publicInternal(params); err != nil {
		return bindTarget{}, err
	}
	switch own, err := underBase(params, id); {
	case err != nil:
		return bindTarget{}, err
	case own:
		return generatedTarget(acl, params, id)
	}
	return s.resolveTarget(ctx, accountID, acl, params)
}

// underBase refuses a public endpoint that names a domain under the
// tunnel server's domain base other than the one it would be given:
// names under the base are the server's to give (derived from endpoint
// IDs), so no agent takes another's, even through an account that
// reserved the base or a wildcard of it. own says that the domain is
// the endpoint's own name (asked for again), which is bound as if none
// were named.
func underBase(params agents.EndpointParams, id string) (own bool, err error) {
	if params.DomainBase == "" || params.Domain == "" {
		return false, nil
	}
	name := strings.ToLower(strings.TrimSuffix(params.Domain, "."))
	base := strings.ToLower(params.DomainBase)
	switch {
	case name != base && !strings.HasSuffix(name, "."+base):
		return false, nil
	case name == generatedLabel(id)+"."+base:
		return true, nil
	}
	return false, apierr.New(apierr.PermissionDenied, "the names under %s are given by this tunnel server; bind without a domain to be given one, or name a reserved domain of the account", params.DomainBase)
}

// bindingsOf returns the Bindings of an endpoint of binding.
func bindingsOf(binding string) []string {
	if binding == agents.BindingInternal {
		return []string{agents.BindingInternal}
	}
	return []string{agents.BindingPublic}
}
