package policy

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/functions"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
	"github.com/edgeplane/edgeplane/policy/limits"
)

// resultValue holds one action result variable.
type resultValue struct {
	s string
	i int64
	b bool
}

// lazy bits: values computed at most once per evaluation.
const (
	lzClientIP uint32 = 1 << iota
	lzServerIP
	lzURL
	lzQuery
	lzReqHeadersVal
	lzResHeadersVal
	lzQueryVal
	lzVarsVal
	lzCookiesVal
	lzCert
)

// evalState is the per-evaluation scratch object. It is pooled by the
// Engine, and is the CEL activation: ResolveName switches on the variable,
// and the header and query functions are bound late to it.
type evalState struct {
	e     *Engine
	pol   *Policy
	phase Phase
	req   Request
	res   Response
	now   time.Time

	// The request as rules see it, after url-rewrite and header actions.
	path, rawPath, rawQuery string
	reqHeader               http.Header
	reqHeaderOwned          bool
	resHeader               http.Header
	resHeaderOwned          bool
	reqScan, resScan        scanState

	lazy          uint32
	clientIPStr   string
	serverIPStr   string
	urlStr        string
	query         url.Values
	reqHeadersVal ref.Val
	resHeadersVal ref.Val
	queryVal      ref.Val
	varsVal       ref.Val
	cookiesVal    ref.Val
	// The client certificate's strings, formatted once (lzCert).
	certSubject, certIssuer, certFingerprint string
	certSANs                                 []string

	// userVars holds vars.*, set by set-vars actions; nil until one runs
	// (or an inbound result carries some).
	userVars map[string]string

	results    []resultValue
	resultsSet bool

	out Result
	rc  RunContext

	fnGetReqHeader, fnGetResHeader, fnHasReqHeader   functions.LateBoundOp
	fnHasResHeader, fnGetQueryParam, fnHasQueryParam functions.LateBoundOp
	fnGetReqCookie, fnHasReqCookie                   functions.LateBoundOp

	buf     []byte   // scratch for rate-limit keys
	keyVals []string // values of a rate-limit key's CEL elements

	// The evaluation's cost (see cost.go): what it has spent, whether it
	// ran out (and where), and whether a native evaluation met an error
	// (it then falls back to CEL).
	cost        uint64
	exhausted   bool
	exhaustedAt string
	nerr        bool

	// tracker is the cost tracker every cel-go program of the evaluation
	// charges, reset from trackerProto before each; its limit is celLimit,
	// what is left of the budget.
	tracker      *cost.Tracker
	trackerProto cost.Tracker
	celLimit     uint64
}

func newEvalState(e *Engine) *evalState {
	st := &evalState{e: e, results: make([]resultValue, len(e.results))}
	st.rc.st = st
	st.fnGetReqHeader = func(_ string, args ...ref.Val) ref.Val { return st.celHeaderList(false, args) }
	st.fnGetResHeader = func(_ string, args ...ref.Val) ref.Val { return st.celHeaderList(true, args) }
	st.fnHasReqHeader = func(_ string, args ...ref.Val) ref.Val { return st.celHasHeader(false, args) }
	st.fnHasResHeader = func(_ string, args ...ref.Val) ref.Val { return st.celHasHeader(true, args) }
	st.fnGetQueryParam = func(_ string, args ...ref.Val) ref.Val { return st.celQueryList(args) }
	st.fnHasQueryParam = func(_ string, args ...ref.Val) ref.Val { return st.celHasQuery(args) }
	st.fnGetReqCookie = func(_ string, args ...ref.Val) ref.Val { return st.celCookieList(args) }
	st.fnHasReqCookie = func(_ string, args ...ref.Val) ref.Val { return st.celHasCookie(args) }
	st.trackerProto = e.tracker
	st.trackerProto.Estimator = st
	st.trackerProto.Limit = &st.celLimit
	st.tracker = new(cost.Tracker)
	return st
}

// evalCEL runs a cel-go program with the evaluation's cost tracker, its
// limit what is left of the budget, and adds what it cost. Running out is
// ErrCostLimit.
func (st *evalState) evalCEL(p cel.Program) (ref.Val, error) {
	if st.exhausted {
		return nil, ErrCostLimit
	}
	*st.tracker = st.trackerProto
	st.celLimit = limits.MaxEvaluationCost - st.cost
	frame, err := interpreter.NewExecutionFrame(st)
	if err != nil {
		return nil, err
	}
	frame.SetCostTracker(st.tracker)
	v, _, err := p.Eval(frame)
	frame.Close()
	st.cost = cost.SafeAdd(st.cost, st.tracker.ActualCost())
	if err != nil && isCELCostLimit(err) || st.cost > limits.MaxEvaluationCost {
		st.exhausted = true
		return nil, ErrCostLimit
	}
	return v, err
}

// begin prepares the state for one evaluation.
func (st *evalState) begin(p *Policy, ph Phase, req *Request, res *Response, prev *Result) {
	st.pol = p
	st.phase = ph
	// The request and response of the previous evaluation are still here
	// (finish leaves them): overwrite them, or clear them when the host
	// passed none.
	if req != nil {
		st.req = *req
	} else {
		st.req = Request{}
	}
	if res != nil {
		st.res = *res
	} else if st.res.Header != nil || st.res.StatusCode != 0 {
		st.res = Response{}
	}
	st.now = st.req.Time
	if st.now.IsZero() {
		st.now = st.e.clock()
	}
	st.path, st.rawPath, st.rawQuery = st.req.Path, st.req.RawPath, st.req.RawQuery
	st.reqHeader, st.reqHeaderOwned, st.reqScan = st.req.Header, false, scanUnknown
	st.resHeader, st.resHeaderOwned, st.resScan = st.res.Header, false, scanUnknown
	st.lazy = 0
	st.cost, st.exhausted = 0, false
	if st.exhaustedAt != "" { // a test costs no write barrier, a store may
		st.exhaustedAt = ""
	}
	if prev != nil && prev.vars != nil && len(prev.vars) == len(prev.varSlots) {
		for i, slot := range prev.varSlots {
			if slot >= 0 && slot < len(st.results) {
				st.results[slot] = prev.vars[i]
			}
		}
		st.resultsSet = true
	}
	if prev != nil && prev.userVars != nil {
		st.userVars = maps.Clone(prev.userVars) // the host's Result is never changed
	}
}

// finish moves the result out and drops the references that could keep
// something large alive: the policy (so that a replaced policy and its
// rate limiters can be collected) and the lazily computed values. It
// leaves the copies of the request and response in place for the next
// begin to overwrite: clearing them would cost a garbage-collector write
// barrier per pointer on every evaluation while a collection runs, and a
// pooled state then keeps at most one request's strings and header map
// alive until it is reused or the pool is emptied by a collection. An
// inbound result carries the action result variables only when the
// policy's outbound rules read some: nothing else can.
func (st *evalState) finish(out *Result) {
	if !st.out.isZero() { // most evaluations change nothing: skip the copies
		*out = st.out
		st.out = Result{}
	}
	if st.resultsSet {
		if st.phase == Inbound && st.pol != nil && st.pol.carry {
			slots := st.pol.carrySlots
			out.vars = make([]resultValue, len(slots))
			for i, slot := range slots {
				out.vars[i] = st.results[slot]
			}
			out.varSlots = slots
		}
		clear(st.results)
		st.resultsSet = false
	}
	if st.userVars != nil {
		if st.phase == Inbound && st.pol != nil && st.pol.carryVars {
			out.userVars = st.userVars // handed over: the next evaluation makes its own
		}
		st.userVars = nil
	}
	st.pol = nil
	st.rc.cur = nil
	// Lazily computed values exist only when a rule read them (a header
	// edit or URL rewrite clears their lazy bit but not the value): test
	// before clearing, as a store costs a write barrier and a test does not.
	if st.clientIPStr != "" || st.serverIPStr != "" || st.urlStr != "" {
		st.clientIPStr, st.serverIPStr, st.urlStr = "", "", ""
	}
	if st.query != nil {
		st.query = nil
	}
	if st.reqHeadersVal != nil || st.resHeadersVal != nil || st.queryVal != nil || st.varsVal != nil || st.cookiesVal != nil {
		st.reqHeadersVal, st.resHeadersVal, st.queryVal, st.varsVal, st.cookiesVal = nil, nil, nil, nil, nil
	}
	if st.certSANs != nil || st.certSubject != "" || st.certIssuer != "" || st.certFingerprint != "" {
		st.certSANs, st.certSubject, st.certIssuer, st.certFingerprint = nil, "", "", ""
	}
}

// isZero reports whether r is the zero Result.
func (r *Result) isZero() bool {
	return r.Verdict == Continue && r.StatusCode == 0 && r.Header == nil && r.Body == "" &&
		r.HeaderEdits == nil && r.RewriteURI == "" && r.ForwardURL == "" && r.Location == "" && r.vars == nil && r.varSlots == nil && r.ResponseHeader == nil &&
		r.userVars == nil
}

// responseHeader returns the result's ResponseHeader, made on first use.
func (st *evalState) responseHeader() http.Header {
	if st.out.ResponseHeader == nil {
		st.out.ResponseHeader = http.Header{}
	}
	return st.out.ResponseHeader
}

func (st *evalState) report(loc, rule string, err error) {
	st.e.sink.Error(&EvalError{Time: st.now, Location: loc, Rule: rule, Err: err})
}

// setResult sets an action result variable, unless no expression or
// template of the policy can read it.
func (st *evalState) setResult(slot int, v resultValue) {
	if !st.pol.readsResult(slot) {
		return
	}
	st.results[slot] = v
	st.resultsSet = true
}

// Addresses and strings derived from the connection.

func (st *evalState) clientAddr() netip.Addr {
	return st.req.Conn.ClientAddr.Addr().Unmap().WithZone("")
}

func (st *evalState) serverAddr() netip.Addr {
	return st.req.Conn.ServerAddr.Addr().Unmap().WithZone("")
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

func (st *evalState) clientIP() string {
	if st.lazy&lzClientIP == 0 {
		st.lazy |= lzClientIP
		st.clientIPStr = addrString(st.clientAddr())
	}
	return st.clientIPStr
}

func (st *evalState) serverIP() string {
	if st.lazy&lzServerIP == 0 {
		st.lazy |= lzServerIP
		st.serverIPStr = addrString(st.serverAddr())
	}
	return st.serverIPStr
}

func (st *evalState) scheme() string {
	if st.req.Scheme != "" {
		return st.req.Scheme
	}
	if st.req.Conn.TLS != nil {
		return "https"
	}
	return "http"
}

func (st *evalState) escapedPath() string {
	u := url.URL{Path: st.path, RawPath: st.rawPath}
	return u.EscapedPath()
}

func (st *evalState) requestURI() string {
	p := st.escapedPath()
	if p == "" {
		p = "/"
	}
	if st.rawQuery != "" {
		return p + "?" + st.rawQuery
	}
	return p
}

func (st *evalState) fullURL() string {
	if st.lazy&lzURL == 0 {
		st.lazy |= lzURL
		u := url.URL{Scheme: st.scheme(), Host: st.req.Host, Path: st.path, RawPath: st.rawPath, RawQuery: st.rawQuery}
		if u.Path == "" {
			u.Path = "/"
		}
		st.urlStr = u.String()
	}
	return st.urlStr
}

func (st *evalState) queryValues() url.Values {
	if st.lazy&lzQuery == 0 {
		st.lazy |= lzQuery
		st.query, _ = url.ParseQuery(st.rawQuery) // keeps what parses
	}
	return st.query
}

func (st *evalState) userAgent() string {
	v, _ := lookupHeaderLower(st.reqHeader, "user-agent", "User-Agent", &st.reqScan)
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func (st *evalState) tlsVersion() string {
	t := st.req.Conn.TLS
	if t == nil || t.Version == 0 {
		return ""
	}
	switch t.Version {
	case tls.VersionTLS10:
		return "1.0"
	case tls.VersionTLS11:
		return "1.1"
	case tls.VersionTLS12:
		return "1.2"
	case tls.VersionTLS13:
		return "1.3"
	}
	return "0x" + strconv.FormatUint(uint64(t.Version), 16)
}

func (st *evalState) sni() string {
	if st.req.Conn.TLS == nil {
		return ""
	}
	return st.req.Conn.TLS.ServerName
}

// Typed accessors shared by the native evaluator and the activation.

func (st *evalState) strVar(id varID) string {
	switch id {
	case vReqMethod:
		return st.req.Method
	case vReqHost:
		return st.req.Host
	case vReqURL:
		return st.fullURL()
	case vReqURLPath:
		return st.path
	case vReqURLQuery:
		return st.rawQuery
	case vReqURLScheme:
		return st.scheme()
	case vReqUserAgent:
		return st.userAgent()
	case vReqVersion:
		return st.req.Proto
	case vConnClientIP:
		return st.clientIP()
	case vConnServerIP:
		return st.serverIP()
	case vConnTLSSNI:
		return st.sni()
	case vConnTLSVersion:
		return st.tlsVersion()
	case vReqURLHost:
		return urlHostname(st.req.Host)
	case vReqURLRawPath:
		return st.escapedPath()
	case vReqContentType:
		v, _ := lookupHeaderLower(st.reqHeader, "content-type", "Content-Type", &st.reqScan)
		if len(v) == 0 {
			return ""
		}
		return v[0]
	case vConnTLSCipher:
		if t := st.req.Conn.TLS; t != nil && t.CipherSuite != 0 {
			return tls.CipherSuiteName(t.CipherSuite)
		}
		return ""
	case vConnTLSALPN:
		if t := st.req.Conn.TLS; t != nil {
			return t.NegotiatedProtocol
		}
		return ""
	case vConnCertSubject, vConnCertIssuer, vConnCertFingerprint:
		st.clientCert()
		switch id {
		case vConnCertSubject:
			return st.certSubject
		case vConnCertIssuer:
			return st.certIssuer
		}
		return st.certFingerprint
	case vEndpointEdgeID:
		return st.req.Conn.EdgeID
	case vEndpointRouteID:
		return st.req.RouteID
	case vOIDCSubject, vOIDCIssuer, vOIDCEmail, vOIDCName, vOIDCPreferredUsername:
		return st.req.OIDC.claim(id)
	}
	if id >= resultBase {
		return st.results[id-resultBase].s
	}
	return ""
}

// clientCert formats the strings of the client's leaf certificate, once
// per evaluation: subject and issuer as RFC 2253 distinguished names, the
// SANs (DNS names, email addresses, IP addresses and URIs, in that order)
// and the SHA-256 fingerprint of its DER form in lower-case hex.
func (st *evalState) clientCert() {
	if st.lazy&lzCert != 0 {
		return
	}
	st.lazy |= lzCert
	t := st.req.Conn.TLS
	if t == nil || t.ClientCertificate == nil {
		return
	}
	c := t.ClientCertificate
	st.certSubject = c.Subject.String()
	st.certIssuer = c.Issuer.String()
	sum := sha256.Sum256(c.Raw)
	st.certFingerprint = hex.EncodeToString(sum[:])
	sans := make([]string, 0, len(c.DNSNames)+len(c.EmailAddresses)+len(c.IPAddresses)+len(c.URIs))
	sans = append(sans, c.DNSNames...)
	sans = append(sans, c.EmailAddresses...)
	for _, ip := range c.IPAddresses {
		sans = append(sans, ip.String())
	}
	for _, u := range c.URIs {
		sans = append(sans, u.String())
	}
	st.certSANs = sans
}

// urlHostname returns the host of a Host header without its port (and an
// IPv6 literal without brackets).
func urlHostname(host string) string {
	u := url.URL{Host: host}
	return u.Hostname()
}

// urlPort returns the port of the request: the Host header's, else the
// scheme's default (443 for https, 80 for http).
func (st *evalState) urlPort() int64 {
	u := url.URL{Host: st.req.Host}
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err == nil {
			return int64(n)
		}
		return 0
	}
	if st.scheme() == "https" {
		return 443
	}
	return 80
}

func (st *evalState) intVar(id varID) int64 {
	switch id {
	case vReqContentLength:
		return st.req.ContentLength
	case vResStatusCode:
		return int64(st.res.StatusCode)
	case vConnClientPort:
		return int64(st.req.Conn.ClientAddr.Port())
	case vConnServerPort:
		return int64(st.req.Conn.ServerAddr.Port())
	case vReqURLPort:
		return st.urlPort()
	}
	if id >= resultBase {
		return st.results[id-resultBase].i
	}
	return 0
}

func (st *evalState) boolVar(id varID) bool {
	switch id {
	case vOIDCAuthenticated:
		return st.req.OIDC.Authenticated()
	case vOIDCEmailVerified:
		return st.req.OIDC.Authenticated() && st.req.OIDC.EmailVerified
	}
	if id >= resultBase {
		return st.results[id-resultBase].b
	}
	return false
}

func (st *evalState) timeVar(id varID) time.Time {
	if id == vConnTSStart {
		return st.req.Conn.Start
	}
	return st.now
}

// mapLookup looks a key up in one of the map(string, list(string))
// variables. canon is the canonical header spelling of key, or "".
func (st *evalState) mapLookup(id varID, key, canon string) ([]string, bool) {
	switch id {
	case vReqHeaders:
		return lookupHeader(st.reqHeader, key, canon, &st.reqScan)
	case vResHeaders:
		return lookupHeader(st.resHeader, key, canon, &st.resScan)
	case vReqURLQueryParams:
		v, ok := st.queryValues()[key]
		return v, ok
	case vReqCookies:
		v := st.cookieValues(key)
		return v, v != nil
	}
	return nil, false
}

// ResolveName implements interpreter.Activation.
func (st *evalState) ResolveName(name string) (any, bool) {
	v, ok := st.e.vars[name]
	if !ok {
		return nil, false
	}
	switch v.kind {
	case kString:
		return types.String(st.strVar(v.id)), true
	case kInt:
		return types.Int(st.intVar(v.id)), true
	case kBool:
		return types.Bool(st.boolVar(v.id)), true
	case kTimestamp:
		return types.Timestamp{Time: st.timeVar(v.id)}, true
	case kStringListMap:
		return st.mapVal(v.id), true
	case kStringMap:
		return st.varsMap(), true
	case kStringList: // the client certificate's SANs
		st.clientCert()
		if len(st.certSANs) == 0 {
			return emptyList, true
		}
		return types.NewStringList(types.DefaultTypeAdapter, st.certSANs), true
	}
	return nil, false
}

func (st *evalState) mapVal(id varID) ref.Val {
	switch id {
	case vReqHeaders:
		if st.lazy&lzReqHeadersVal == 0 {
			st.lazy |= lzReqHeadersVal
			st.reqHeadersVal = types.NewMap(types.DefaultTypeAdapter, lowerHeaderMap(st.reqHeader, &st.reqScan))
		}
		return st.reqHeadersVal
	case vResHeaders:
		if st.lazy&lzResHeadersVal == 0 {
			st.lazy |= lzResHeadersVal
			st.resHeadersVal = types.NewMap(types.DefaultTypeAdapter, lowerHeaderMap(st.resHeader, &st.resScan))
		}
		return st.resHeadersVal
	case vReqCookies:
		if st.lazy&lzCookiesVal == 0 {
			st.lazy |= lzCookiesVal
			m := map[string][]string{}
			st.eachCookie(func(n, v string) bool {
				m[n] = append(m[n], v)
				return true
			})
			st.cookiesVal = types.NewMap(types.DefaultTypeAdapter, m)
		}
		return st.cookiesVal
	default:
		if st.lazy&lzQueryVal == 0 {
			st.lazy |= lzQueryVal
			q := st.queryValues()
			if q == nil {
				q = url.Values{}
			}
			st.queryVal = types.NewMap(types.DefaultTypeAdapter, map[string][]string(q))
		}
		return st.queryVal
	}
}

// varsMap returns vars as a CEL map, made once per evaluation and again
// after a set-vars action.
func (st *evalState) varsMap() ref.Val {
	if st.lazy&lzVarsVal == 0 {
		st.lazy |= lzVarsVal
		m := st.userVars
		if m == nil {
			m = map[string]string{}
		}
		st.varsVal = types.NewStringStringMap(types.DefaultTypeAdapter, m)
	}
	return st.varsVal
}

// setVars assigns variables (names and values in the same order).
func (st *evalState) setVars(names, values []string) {
	if st.userVars == nil {
		st.userVars = make(map[string]string, len(names))
	}
	for i, n := range names {
		st.userVars[n] = values[i]
	}
	st.lazy &^= lzVarsVal
}

// Parent implements interpreter.Activation.
func (st *evalState) Parent() interpreter.Activation { return nil }

// ResolveFunction implements interpreter.FunctionActivation: the header and
// query functions read this evaluation's request.
func (st *evalState) ResolveFunction(name string) (functions.LateBoundOp, bool) {
	switch name {
	case fnGetReqHeader:
		return st.fnGetReqHeader, true
	case fnGetResHeader:
		return st.fnGetResHeader, true
	case fnHasReqHeader:
		return st.fnHasReqHeader, true
	case fnHasResHeader:
		return st.fnHasResHeader, true
	case fnGetQueryParam:
		return st.fnGetQueryParam, true
	case fnHasQueryParam:
		return st.fnHasQueryParam, true
	case fnGetReqCookie:
		return st.fnGetReqCookie, true
	case fnHasReqCookie:
		return st.fnHasReqCookie, true
	}
	return nil, false
}

var emptyList = types.NewStringList(types.DefaultTypeAdapter, []string{})

func argString(args []ref.Val) (string, bool) {
	if len(args) != 1 {
		return "", false
	}
	s, ok := args[0].(types.String)
	return string(s), ok
}

// headerValues implements getReqHeader/getResHeader: case-insensitive.
func (st *evalState) headerValues(res bool, name string) []string {
	var v []string
	if res {
		v, _ = lookupHeader(st.resHeader, asciiLower(name), "", &st.resScan)
	} else {
		v, _ = lookupHeader(st.reqHeader, asciiLower(name), "", &st.reqScan)
	}
	return v
}

func (st *evalState) hasHeader(res bool, name string) bool {
	var ok bool
	if res {
		_, ok = lookupHeader(st.resHeader, asciiLower(name), "", &st.resScan)
	} else {
		_, ok = lookupHeader(st.reqHeader, asciiLower(name), "", &st.reqScan)
	}
	return ok
}

func (st *evalState) celHeaderList(res bool, args []ref.Val) ref.Val {
	name, ok := argString(args)
	if !ok {
		return types.NoSuchOverloadErr()
	}
	v := st.headerValues(res, name)
	if len(v) == 0 {
		return emptyList
	}
	return types.NewStringList(types.DefaultTypeAdapter, v)
}

func (st *evalState) celHasHeader(res bool, args []ref.Val) ref.Val {
	name, ok := argString(args)
	if !ok {
		return types.NoSuchOverloadErr()
	}
	return types.Bool(st.hasHeader(res, name))
}

func (st *evalState) celQueryList(args []ref.Val) ref.Val {
	name, ok := argString(args)
	if !ok {
		return types.NoSuchOverloadErr()
	}
	v := st.queryValues()[name]
	if len(v) == 0 {
		return emptyList
	}
	return types.NewStringList(types.DefaultTypeAdapter, v)
}

func (st *evalState) celHasQuery(args []ref.Val) ref.Val {
	name, ok := argString(args)
	if !ok {
		return types.NoSuchOverloadErr()
	}
	_, has := st.queryValues()[name]
	return types.Bool(has)
}

// Effects of non-terminating actions.

func (st *evalState) addHeader(name, value string) {
	st.ownHeader().Add(name, value)
	st.out.HeaderEdits = append(st.out.HeaderEdits, HeaderEdit{Name: name, Value: value})
}

func (st *evalState) removeHeader(name string) {
	h := st.ownHeader()
	lower := asciiLower(name)
	for k := range h {
		if asciiLowerEq(k, lower) {
			delete(h, k)
		}
	}
	st.out.HeaderEdits = append(st.out.HeaderEdits, HeaderEdit{Remove: true, Name: name})
}

// ownHeader returns the headers of the phase (the request's inbound, the
// response's outbound) for an action to edit: cloned on the first edit so
// that the host's map is never changed, and with what was derived from
// them (the lookup scan, the CEL map) invalidated.
func (st *evalState) ownHeader() http.Header {
	h, owned, scan, bit := &st.reqHeader, &st.reqHeaderOwned, &st.reqScan, lzReqHeadersVal
	if st.phase == Outbound {
		h, owned, scan, bit = &st.resHeader, &st.resHeaderOwned, &st.resScan, lzResHeadersVal
	}
	if !*owned {
		*h = cloneHeader(*h)
		*owned = true
	}
	*scan = scanUnknown
	st.lazy &^= bit
	if st.phase == Inbound {
		st.lazy &^= lzCookiesVal
	}
	return *h
}

func cloneHeader(h http.Header) http.Header {
	if h == nil {
		return http.Header{}
	}
	return h.Clone()
}

var errBadURI = errors.New("rewritten URL must be a path starting with '/', optionally with a query")

func (st *evalState) rewriteURI(uri string) error {
	if !strings.HasPrefix(uri, "/") || strings.HasPrefix(uri, "//") {
		return errBadURI
	}
	u, err := url.ParseRequestURI(uri)
	if err != nil || u.Host != "" || u.Scheme != "" {
		return errBadURI
	}
	st.path, st.rawPath, st.rawQuery = u.Path, u.RawPath, u.RawQuery
	st.lazy &^= lzURL | lzQuery | lzQueryVal
	st.out.RewriteURI = st.requestURI()
	return nil
}
