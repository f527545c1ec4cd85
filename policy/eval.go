package policy

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/edgeplane/edgeplane/policy/limits"
)

// Request is the input of an inbound HTTP evaluation. The policy never
// modifies it; effects come back in the [Result]. [RequestFromHTTP] fills one
// from a net/http request.
type Request struct {
	// Method is the HTTP method, for example "GET".
	Method string
	// Scheme is "http" or "https"; empty means "https" when Conn.TLS is set
	// and "http" otherwise.
	Scheme string
	// Host is the Host header (or :authority), possibly with a port.
	Host string
	// Path is the decoded URL path, as url.URL.Path.
	Path string
	// RawPath is the encoded path hint, as url.URL.RawPath; usually empty.
	RawPath string
	// RawQuery is the encoded query without '?'.
	RawQuery string
	// Header holds the request headers. Keys should be in canonical form,
	// as net/http produces; other spellings are found too, more slowly.
	Header http.Header
	// ContentLength is the body length, or -1 when unknown.
	ContentLength int64
	// Proto is the protocol version, for example "HTTP/1.1".
	Proto string
	// Conn is the connection the request arrived on.
	Conn Conn
	// RouteID identifies the route the request matched (endpoint.route_id),
	// for example an HTTPS edge route's ID; empty when unknown.
	RouteID string
	// Time is the evaluation time (time.now); zero means the Engine's
	// clock.
	Time time.Time
	// OIDC is the identity the route's OIDC module authenticated (the
	// oidc.* variables); the zero value, on a route without the module or
	// a request it let through unauthenticated, is not authenticated.
	OIDC OIDCIdentity
	// Internal says which internal endpoints of the request's account
	// are online, for the forward-internal action; nil: none is (the
	// action then fails, as for an offline endpoint).
	Internal InternalEndpoints
}

// OIDCIdentity is the signed-in user an HTTPS route's OIDC module
// authenticated, as the host (the edge proxy) passes it to the route's
// traffic policy. The zero value is "not authenticated". It is
// authenticated when Subject is set; otherwise every oidc.* variable reads
// "" or false, whatever the other fields hold. The cost model assumes
// Issuer is at most [limits.MaxOIDCIssuerBytes] and the other strings at most
// [limits.MaxOIDCClaimBytes]; longer values are evaluated as given, at their
// cost (see the package doc, section Limits).
type OIDCIdentity struct {
	// Issuer is the provider's issuer URL (oidc.issuer).
	Issuer string
	// Subject is the ID token's sub claim (oidc.subject): the user's
	// stable identifier at the issuer.
	Subject string
	// Email is the email claim (oidc.email), "" when absent.
	Email string
	// EmailVerified is the email_verified claim (oidc.email_verified).
	EmailVerified bool
	// Name is the name claim (oidc.name), "" when absent.
	Name string
	// PreferredUsername is the preferred_username claim
	// (oidc.preferred_username), "" when absent.
	PreferredUsername string
}

// Authenticated reports whether id is a signed-in user's identity: whether
// Subject is set (oidc.authenticated).
func (id *OIDCIdentity) Authenticated() bool { return id.Subject != "" }

// claim returns the string the oidc.* variable of the given ID reads: ""
// when id is not authenticated.
func (id *OIDCIdentity) claim(v varID) string {
	if !id.Authenticated() {
		return ""
	}
	switch v {
	case vOIDCSubject:
		return id.Subject
	case vOIDCIssuer:
		return id.Issuer
	case vOIDCEmail:
		return id.Email
	case vOIDCName:
		return id.Name
	case vOIDCPreferredUsername:
		return id.PreferredUsername
	}
	return ""
}

// Response is the input of an outbound HTTP evaluation: the upstream's
// response.
type Response struct {
	// StatusCode is the upstream's status code.
	StatusCode int
	// Header holds the response headers.
	Header http.Header
}

// Conn describes a client connection.
type Conn struct {
	// ClientAddr is the client's address as the proxy saw it on the socket.
	// It is never taken from X-Forwarded-For or similar headers.
	ClientAddr netip.AddrPort
	// ServerAddr is the local address that accepted the connection.
	ServerAddr netip.AddrPort
	// Start is when the connection was accepted.
	Start time.Time
	// TLS describes the TLS session, or nil for plain text.
	TLS *TLSInfo
	// EdgeID identifies the edge the connection arrived on
	// (endpoint.edge_id); empty when unknown.
	EdgeID string
}

// TLSInfo describes a TLS session.
type TLSInfo struct {
	// ServerName is the SNI the client sent.
	ServerName string
	// Version is the negotiated version, for example tls.VersionTLS13.
	Version uint16
	// CipherSuite is the negotiated cipher suite, for example
	// tls.TLS_AES_128_GCM_SHA256; 0 when unknown.
	CipherSuite uint16
	// NegotiatedProtocol is the protocol ALPN selected, for example "h2".
	NegotiatedProtocol string
	// ClientCertificate is the leaf certificate the client presented
	// (mutual TLS), tls.ConnectionState.PeerCertificates[0]; nil without
	// one. The policy never modifies it.
	ClientCertificate *x509.Certificate
}

// Verdict is what the host must do after an evaluation.
type Verdict uint8

const (
	// Continue: forward the request (inbound) or response (outbound) after
	// applying the result's header edits and URL rewrite.
	Continue Verdict = iota
	// Respond: do not forward; send the result's StatusCode, Header and
	// Body to the client instead (replacing the upstream's response in the
	// outbound phase).
	Respond
	// Close: close the client connection without a response (a refused
	// TLS/TCP connection, or an action that asked for it).
	Close
	// Forward: send the request, after the result's header edits and
	// URL rewrite, to the internal endpoint of Result.ForwardURL (the
	// forward-internal action), instead of the upstream; the client
	// gets that endpoint's answer. Only a host that sets
	// [Request.Internal] gets it.
	Forward
)

// String returns "continue", "respond", "close" or "forward".
func (v Verdict) String() string {
	switch v {
	case Respond:
		return "respond"
	case Close:
		return "close"
	case Forward:
		return "forward"
	default:
		return "continue"
	}
}

// HeaderEdit is one header change of add-headers or remove-headers: to the
// request inbound, to the response outbound. Apply them in order.
type HeaderEdit struct {
	// Remove is true to delete every value of Name, false to append Value.
	Remove bool
	// Name is the header name.
	Name string
	// Value is the value to append.
	Value string
}

// Result is the outcome of an evaluation. Its zero value means Continue
// with no effects.
type Result struct {
	// Verdict says what the host must do.
	Verdict Verdict
	// StatusCode, Header and Body are the response to send when Verdict is
	// Respond. Header may be nil.
	StatusCode int
	Header     http.Header
	Body       string
	// HeaderEdits are the header changes of the rules that ran, in order.
	// With Verdict Respond or Close they no longer matter.
	HeaderEdits []HeaderEdit
	// RewriteURI, when not empty, is the new request path and query in
	// request-URI form ("/path?query") from url-rewrite (inbound only).
	RewriteURI string
	// ForwardURL is the internal endpoint to forward to when Verdict is
	// Forward, as [ParseInternalURL] writes it
	// ("https://api.internal:443").
	ForwardURL string
	// Location names the action that ended evaluation, for example
	// "inbound[1].actions[0]"; empty with Verdict Continue.
	Location string
	// ResponseHeader holds headers for the response the client gets,
	// whatever answers it: with Continue, the upstream's response; with
	// Respond, the policy's own (Header, set later, wins for a name in
	// both). Inbound rate-limit actions with a headers config set their
	// rate-limit headers here. nil when there are none; ApplyHTTP sets
	// them.
	ResponseHeader http.Header

	vars     []resultValue     // action result variables carried to outbound: vars[i] is slot varSlots[i]
	varSlots []int             // the producing Policy's carrySlots
	userVars map[string]string // vars.*, carried to outbound
}

// Policy is a compiled traffic policy. It is immutable and safe for
// concurrent use.
type Policy struct {
	e      *Engine
	target Target
	doc    []byte
	in     phaseProg
	out    phaseProg

	// Action result variables are materialised lazily: reads[slot] says
	// whether an expression or template of the policy can read the
	// variable of that engine slot, and carry whether the outbound rules
	// read any, so that Inbound must hand them over in its Result. Setting
	// a variable no one reads does nothing, and built-in actions skip
	// computing its value.
	reads []bool
	carry bool
	// carrySlots are the slots the policy reads, in order: the only ones
	// an inbound result carries (no other can be set).
	carrySlots []int
	// carryVars says whether the outbound rules read vars, so that
	// Inbound must hand them over.
	carryVars bool

	// regexProg maps every pattern of the document to its RE2 program
	// size, for the cost of matches() in the cel-go programs.
	regexProg map[string]int
}

// readsResult reports whether an expression or template of p can read the
// action result variable of slot.
func (p *Policy) readsResult(slot int) bool {
	return slot >= 0 && slot < len(p.reads) && p.reads[slot]
}

type phaseProg struct {
	key   string
	rules []compiledRule
}

type compiledRule struct {
	loc     string // e.g. "inbound[2]"
	name    string
	conds   []condition
	actions []compiledAction
}

type condition struct {
	loc    string
	native bnode       // nil when the expression is not reduced to native code
	prog   cel.Program // always set: the reference semantics
}

type compiledAction struct {
	loc    string
	rule   string
	typ    string
	action Action
}

// Target returns the target the policy was compiled for.
func (p *Policy) Target() Target { return p.target }

// MarshalJSON returns the policy document in compact form, with the phase
// names and action configs as written.
func (p *Policy) MarshalJSON() ([]byte, error) {
	return append([]byte(nil), p.doc...), nil
}

// Inbound evaluates the inbound rules of an HTTP policy on req (nil means
// an empty request). It never panics; see the package doc for runtime
// errors. On a connection policy it returns a Continue result (use
// [Policy.Connect]).
func (p *Policy) Inbound(req *Request) (out Result) {
	if p.target != TargetHTTP || len(p.in.rules) == 0 {
		return Result{}
	}
	if p.e.observer != nil {
		defer p.observe(time.Now(), Inbound, &out)
	}
	st := p.e.states.Get().(*evalState)
	st.begin(p, Inbound, req, nil, nil)
	p.run(st, &p.in)
	st.finish(&out)
	p.e.states.Put(st)
	return out
}

// observe tells the Observer of an evaluation that started at start.
func (p *Policy) observe(start time.Time, ph Phase, out *Result) {
	p.e.observer.Evaluated(EvaluationEvent{Target: p.target, Phase: ph, Verdict: out.Verdict, Duration: time.Since(start)})
}

// Outbound evaluates the outbound rules of an HTTP policy on the upstream's
// response res to req. in is the result of p.Inbound for the same request,
// whose action result variables (such as
// actions.service.rate_limit.limited) the outbound rules can read; it may
// be nil. (A Result carries the variables only when the outbound rules of
// the Policy that produced it read some, so the result of another Policy's
// Inbound may carry none.)
func (p *Policy) Outbound(req *Request, res *Response, in *Result) (out Result) {
	if p.target != TargetHTTP || len(p.out.rules) == 0 {
		return Result{}
	}
	if p.e.observer != nil {
		defer p.observe(time.Now(), Outbound, &out)
	}
	st := p.e.states.Get().(*evalState)
	st.begin(p, Outbound, req, res, in)
	p.run(st, &p.out)
	st.finish(&out)
	p.e.states.Put(st)
	return out
}

// Connect evaluates the inbound rules of a connection policy on a new
// connection (nil means an unknown one). now is the evaluation time; zero
// means the Engine's clock. On an HTTP policy it returns a Continue result.
func (p *Policy) Connect(c *Conn, now time.Time) (out Result) {
	if p.target != TargetConnection || len(p.in.rules) == 0 {
		return Result{}
	}
	if p.e.observer != nil {
		defer p.observe(time.Now(), Inbound, &out)
	}
	st := p.e.states.Get().(*evalState)
	st.begin(p, Inbound, nil, nil, nil)
	if c != nil {
		st.req.Conn = *c
	}
	if !now.IsZero() {
		st.now = now
	}
	p.run(st, &p.in)
	st.finish(&out)
	p.e.states.Put(st)
	return out
}

// run evaluates one phase's rules in order.
func (p *Policy) run(st *evalState, ph *phaseProg) {
	defer func() {
		if r := recover(); r != nil {
			// A bug, not a policy problem: fail closed and say where.
			loc := ph.key
			if st.rc.cur != nil {
				loc = st.rc.cur.loc
			}
			st.report(loc, "", fmt.Errorf("internal error: %v", r))
			st.out = Result{Verdict: Respond, StatusCode: http.StatusInternalServerError, Location: loc}
			if p.target == TargetConnection {
				st.out.Verdict = Close
			}
		}
	}()
	for ri := range ph.rules {
		r := &ph.rules[ri]
		applies := r.applies(st)
		if st.exhausted {
			p.failClosed(st)
			return
		}
		if !applies {
			continue
		}
		obs := p.e.observer
		if obs != nil {
			obs.RuleMatched(RuleEvent{Phase: st.phase, Rule: r.name, Location: r.loc})
		}
		for ai := range r.actions {
			a := &r.actions[ai]
			st.rc.cur = a
			a.action.Run(&st.rc)
			if obs != nil {
				obs.ActionRan(ActionEvent{Phase: st.phase, Type: a.typ, Rule: a.rule, Location: a.loc})
			}
			if st.exhausted {
				if st.exhaustedAt == "" {
					st.exhaustedAt = a.loc
				}
				p.failClosed(st)
				return
			}
			if st.out.Verdict != Continue {
				st.out.Location = a.loc
				return
			}
		}
		st.rc.cur = nil
	}
}

// failClosed ends an evaluation whose cost budget ran out: the request is
// refused (403), the upstream's response replaced (502), the connection
// closed, whatever the rules would have decided.
//
//go:noinline
func (p *Policy) failClosed(st *evalState) {
	st.out = Result{Verdict: Respond, StatusCode: http.StatusForbidden, Location: st.exhaustedAt}
	switch {
	case p.target == TargetConnection:
		st.out.Verdict, st.out.StatusCode = Close, 0
	case st.phase == Outbound:
		st.out.StatusCode = http.StatusBadGateway
	}
}

// applies reports whether every condition of the rule holds. A condition
// whose evaluation fails makes the rule not apply and is reported.
func (r *compiledRule) applies(st *evalState) bool {
	for i := range r.conds {
		c := &r.conds[i]
		if c.native != nil {
			start := st.cost
			st.nerr = false
			switch res := c.native.evalB(st); {
			case st.nerr || st.exhausted || st.cost > limits.MaxEvaluationCost:
				if r.nativeOutOfBudget(st, c, start) {
					return false
				}
			case res == triTrue:
				continue
			case res == triFalse:
				return false
			}
			// An error: CEL gives the authoritative result, message and
			// cost.
		}
		if !r.celHolds(st, c) {
			return false
		}
	}
	return true
}

// nativeOutOfBudget handles a native evaluation that met an error or ran
// out of budget. Out of budget without an error, it reports and returns
// true; else it forgets the native evaluation's cost for CEL to run.
func (r *compiledRule) nativeOutOfBudget(st *evalState, c *condition, start uint64) bool {
	if !st.nerr && (st.exhausted || st.cost > limits.MaxEvaluationCost) {
		st.exhausted, st.exhaustedAt = true, c.loc
		st.report(c.loc, r.name, ErrCostLimit)
		return true
	}
	st.cost, st.exhausted = start, false
	return false
}

// celHolds evaluates a condition with its cel-go program, reporting an
// error.
func (r *compiledRule) celHolds(st *evalState, c *condition) bool {
	v, err := st.evalCEL(c.prog)
	if err != nil {
		if st.exhausted {
			st.exhaustedAt = c.loc
		}
		st.report(c.loc, r.name, err)
		return false
	}
	b, ok := v.(types.Bool)
	return ok && bool(b)
}
