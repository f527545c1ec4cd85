package proxy

import (
	"net/http"

	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/proxy/oidcauth"
)

// The OIDC module. A route with the module enabled lets a request through
// only with a session of its own ([oidcauth.Gate]); others are sent to
// the provider to sign in. The identity headers (Service-OIDC-*) are
// removed from every request of every route, so that a client never
// forges them, and set from the session on the requests the Gate lets
// through. The Gate runs before the route's traffic policy, which reads
// the session's identity as the oidc.* variables (policy.OIDCIdentity),
// never from headers.

// gateEntry is the Gate of one route for one Handler.
type gateEntry struct {
	h    *Handler
	gate *oidcauth.Gate // nil when it cannot be built: the route fails closed
}

// gate returns the route's Gate for h, building it at the route's first
// OIDC request: its session keys derive from h's key and the route's
// scope (edge ID/route ID). It is kept with what derives from the route's
// config, so snapshots that only change tunnels or certificates keep it.
func (h *Handler) gate(e *Edge, rt *route) *oidcauth.Gate {
	if g := rt.static.gate.Load(); g != nil && g.h == h {
		return g.gate
	}
	g := &gateEntry{h: h}
	if len(h.oidcKey) > 0 {
		gate, err := oidcauth.New(rt.cfg.OIDC, oidcauth.Options{
			Key: h.oidcKey, Scope: e.Config.EdgeID + "/" + rt.cfg.RouteID, Providers: h.providers, Now: h.clock, Logger: h.log,
		})
		if err != nil {
			h.log.Error("the OIDC module of a route cannot be applied; its requests are refused", "edge", e.Config.EdgeID, "route", rt.cfg.RouteID, "err", err)
		}
		g.gate = gate
	}
	rt.static.gate.Store(g)
	return g.gate
}

// oidcCallback serves a request for the OIDC callback path of one of the
// edge's OIDC routes (the route whose sign-in it completes, whatever
// route its path would match) and reports whether it did.
func (h *Handler) oidcCallback(w http.ResponseWriter, r *http.Request, e *Edge) bool {
	for _, rt := range e.oidcRoutes {
		if g := h.gate(e, rt); g != nil && g.IsCallback(r) {
			g.ServeCallback(w, r)
			return true
		}
	}
	return false
}

// authenticate applies the route's OIDC module: it reports whether the
// request may go on (it carries a session, or it is an OPTIONS request
// the module lets through), with the session's identity for the route's
// traffic policy (the oidc.* variables; not authenticated for such an
// OPTIONS request); when not, it has answered (a redirect to the
// provider, or an error).
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request, e *Edge, rt *route) (policy.OIDCIdentity, bool) {
	g := h.gate(e, rt)
	if g == nil {
		http.Error(w, "this route requires OIDC authentication, which is not available", http.StatusServiceUnavailable)
		return policy.OIDCIdentity{}, false
	}
	id, ok := g.Check(w, r)
	return policyIdentity(id), ok
}

// policyIdentity is id as a traffic policy reads it (both count an
// identity without a subject as not authenticated). The sizes the
// policy cost model assumes (limits.MaxOIDCClaimBytes and
// MaxOIDCIssuerBytes) are oidcauth's and edges' bounds: TestOIDCBounds
// checks that they agree.
func policyIdentity(id oidcauth.Identity) policy.OIDCIdentity {
	return policy.OIDCIdentity{Issuer: id.Issuer, Subject: id.Subject, Email: id.Email, EmailVerified: id.EmailVerified,
		Name: id.Name, PreferredUsername: id.PreferredUsername}
}
