package policy

import (
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
)

// Built-in action type names.
const (
	ActionLog            = "log"
	ActionDeny           = "deny"
	ActionCustomResponse = "custom-response"
	ActionAddHeaders     = "add-headers"
	ActionRemoveHeaders  = "remove-headers"
	ActionRedirect       = "redirect"
	ActionURLRewrite     = "url-rewrite"
	ActionRestrictIPs    = "restrict-ips"
	ActionRateLimit      = "rate-limit"
)

// Limits of built-in action configs.
const (
	maxHeaderEntries = 64   // add-headers, remove-headers, custom-response headers, log metadata
	maxCIDRs         = 1024 // restrict-ips allow and deny, each
	maxIPPolicies    = 100
)

func builtinActions(e *Engine) []ActionType {
	return []ActionType{
		simpleType{ActionLog, compileLog},
		resultType{simpleType{ActionDeny, compileDeny}, []ResultField{{Name: resDenied, Type: ResultBool}}},
		simpleType{ActionCustomResponse, compileCustomResponse},
		simpleType{ActionAddHeaders, compileAddHeaders},
		simpleType{ActionRemoveHeaders, compileRemoveHeaders},
		resultType{simpleType{ActionRedirect, compileRedirect}, urlResults},
		resultType{simpleType{ActionURLRewrite, compileURLRewrite}, urlResults},
		resultType{simpleType{ActionRestrictIPs, compileRestrictIPs}, []ResultField{
			{Name: resAction, Type: ResultString}, {Name: resMatchedCIDR, Type: ResultString}}},
		rateLimitType{e},
		simpleType{ActionSetVars, compileSetVars},
		resultType{simpleType{ActionJWTValidation, compileJWTValidation}, []ResultField{
			{Name: jwtValid, Type: ResultBool, HTTPOnly: true}, {Name: jwtSubject, Type: ResultString, HTTPOnly: true},
			{Name: jwtError, Type: ResultString, HTTPOnly: true}}},
		resultType{simpleType{ActionBasicAuth, compileBasicAuth}, []ResultField{
			{Name: baAuthenticated, Type: ResultBool, HTTPOnly: true}, {Name: baUsername, Type: ResultString, HTTPOnly: true}}},
	}
}

// simpleType adapts a compile function to ActionType.
type simpleType struct {
	name    string
	compile func(c *CompileContext, config []byte) (Action, error)
}

func (t simpleType) Type() string { return t.name }

// resultType is a simpleType whose actions set result variables.
type resultType struct {
	simpleType
	fields []ResultField
}

func (t resultType) ResultFields() []ResultField { return t.fields }

// Result fields of the built-in actions other than rate-limit (extensions
// of the SPEC, issue 19).
const (
	resDenied      = "denied"       // deny: it ran (enforced or not)
	resAction      = "action"       // restrict-ips: "allow" or "deny", what it decided
	resMatchedCIDR = "matched_cidr" // restrict-ips: the allow or deny entry that decided, or ""
	resMatches     = "matches"      // redirect, url-rewrite: from matched (always, without from)
	resURL         = "url"          // redirect, url-rewrite: the URL it gave, or ""
)

var urlResults = []ResultField{{Name: resMatches, Type: ResultBool, HTTPOnly: true}, {Name: resURL, Type: ResultString, HTTPOnly: true}}

// resultSlots looks up an action's result slots by field.
func resultSlots(c *CompileContext, slots map[string]*ResultSlot) error {
	for f, p := range slots {
		s, err := c.Result(f)
		if err != nil {
			return err
		}
		*p = s
	}
	return nil
}
func (t simpleType) Compile(c *CompileContext, config []byte) (Action, error) {
	return t.compile(c, config)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// needHTTP refuses an HTTP-only action in a connection policy.
func needHTTP(c *CompileContext, vs *apierr.Violations, action string) bool {
	if c.Target() == TargetConnection {
		vs.Add("type", "%s is only available in HTTP policies; a TLS/TCP connection policy allows log, deny and restrict-ips", action)
		return false
	}
	return true
}

func statusCode(vs *apierr.Violations, p *int, def, min, max int) int {
	if p == nil {
		return def
	}
	if *p < min || *p > max {
		vs.Add("config.status_code", "must be between %d and %d, got %d", min, max, *p)
	}
	return *p
}

// headerField is the JSON path of a header-keyed config entry.
func headerField(base, name string) string { return base + "[" + strconv.Quote(name) + "]" }

func checkHeaderName(vs *apierr.Violations, field, name string) {
	switch {
	case !validHeaderName(name):
		vs.Add(field, "invalid header name %s: use letters, digits and !#$%%&'*+-.^_`|~", quoteTrunc(name))
	case framingHeaders[strings.ToLower(name)]:
		vs.Add(field, "header %s may not be changed by a policy", strings.ToLower(name))
	}
}

// literalHeaderValue refuses CR, LF and NUL in the literal text of a value.
func checkHeaderValue(vs *apierr.Violations, field, v string) {
	if strings.ContainsAny(v, "\r\n\x00") {
		vs.Add(field, "a header value may not contain CR, LF or NUL")
	}
}

// log

type logConfig struct {
	Metadata map[string]string `json:"metadata"`
}

type logAction struct {
	keys []string
	vals []*Template
}

func compileLog(c *CompileContext, config []byte) (Action, error) {
	var cfg logConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if len(cfg.Metadata) > maxHeaderEntries {
		vs.Add("config.metadata", "has %d entries; at most %d are allowed", len(cfg.Metadata), maxHeaderEntries)
	}
	a := &logAction{}
	for _, k := range sortedKeys(cfg.Metadata) {
		f := headerField("config.metadata", k)
		if k == "" {
			vs.Add(f, "a metadata key may not be empty")
		}
		a.keys = append(a.keys, k)
		a.vals = append(a.vals, c.c.template(&vs, f, cfg.Metadata[k], -1))
	}
	return a, vs.Err()
}

func (a *logAction) Run(r *RunContext) {
	md := make(map[string]string, len(a.keys))
	for i, k := range a.keys {
		md[k] = r.Render(a.vals[i])
	}
	r.Log(md)
}

// deny

type denyConfig struct {
	StatusCode *int  `json:"status_code"`
	Enforce    *bool `json:"enforce"`
}

type denyAction struct {
	status  int
	enforce bool
	denied  ResultSlot
}

func compileDeny(c *CompileContext, config []byte) (Action, error) {
	var cfg denyConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if c.Target() == TargetConnection && cfg.StatusCode != nil {
		vs.Add("config.status_code", "a TLS/TCP connection policy denies by closing the connection; status_code applies to HTTP policies only")
	}
	a := &denyAction{status: statusCode(&vs, cfg.StatusCode, http.StatusForbidden, 400, 599), enforce: cfg.Enforce == nil || *cfg.Enforce}
	if err := resultSlots(c, map[string]*ResultSlot{resDenied: &a.denied}); err != nil {
		return nil, err
	}
	return a, vs.Err()
}

// Run ends evaluation with the status, unless enforce is off (shadow
// mode): then it only sets actions.service.deny.denied.
func (a *denyAction) Run(r *RunContext) {
	r.SetBool(a.denied, true)
	if a.enforce {
		r.Respond(a.status, nil, "")
	}
}

// AlwaysTerminates is true unless enforce is off.
func (a *denyAction) AlwaysTerminates() bool { return a.enforce }

// custom-response

type customResponseConfig struct {
	StatusCode *int              `json:"status_code"`
	Body       string            `json:"body"`
	Headers    map[string]string `json:"headers"`
}

type customResponseAction struct {
	status int
	body   *Template
	names  []string
	vals   []*Template
}

func compileCustomResponse(c *CompileContext, config []byte) (Action, error) {
	var cfg customResponseConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if !needHTTP(c, &vs, ActionCustomResponse) {
		return nil, vs.Err()
	}
	a := &customResponseAction{status: statusCode(&vs, cfg.StatusCode, http.StatusOK, 200, 599)}
	a.body = c.c.template(&vs, "config.body", cfg.Body, -1)
	a.names, a.vals = compileHeaderMap(c, &vs, "config.headers", cfg.Headers)
	return a, vs.Err()
}

func compileHeaderMap(c *CompileContext, vs *apierr.Violations, base string, m map[string]string) ([]string, []*Template) {
	if len(m) > maxHeaderEntries {
		vs.Add(base, "has %d headers; at most %d are allowed", len(m), maxHeaderEntries)
	}
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return strings.ToLower(keys[i]) < strings.ToLower(keys[j]) })
	var names []string
	var vals []*Template
	for i, name := range keys {
		f := headerField(base, name)
		checkHeaderName(vs, f, name)
		checkHeaderValue(vs, f, m[name])
		if i > 0 && strings.EqualFold(keys[i-1], name) {
			vs.Add(f, "header %s is given twice (names are case-insensitive)", strings.ToLower(name))
		}
		names = append(names, strings.ToLower(name))
		vals = append(vals, c.c.template(vs, f, m[name], -1))
	}
	return names, vals
}

func (a *customResponseAction) Run(r *RunContext) {
	var h http.Header
	if len(a.names) > 0 {
		h = make(http.Header, len(a.names))
		for i, n := range a.names {
			h.Add(n, sanitizeHeaderValue(r.Render(a.vals[i])))
		}
	}
	r.Respond(a.status, h, r.Render(a.body))
}

func (a *customResponseAction) AlwaysTerminates() bool { return true }

// add-headers

type addHeadersConfig struct {
	Headers map[string]string `json:"headers"`
}

type addHeadersAction struct {
	names []string
	vals  []*Template
}

func compileAddHeaders(c *CompileContext, config []byte) (Action, error) {
	var cfg addHeadersConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if !needHTTP(c, &vs, ActionAddHeaders) {
		return nil, vs.Err()
	}
	if len(cfg.Headers) == 0 {
		vs.Add("config.headers", "is required: an object of header names to (templated) values")
	}
	a := &addHeadersAction{}
	a.names, a.vals = compileHeaderMap(c, &vs, "config.headers", cfg.Headers)
	return a, vs.Err()
}

func (a *addHeadersAction) Run(r *RunContext) {
	for i, n := range a.names {
		r.AddHeader(n, r.Render(a.vals[i]))
	}
}

// remove-headers

type removeHeadersConfig struct {
	Headers []string `json:"headers"`
}

type removeHeadersAction struct{ names []string }

func compileRemoveHeaders(c *CompileContext, config []byte) (Action, error) {
	var cfg removeHeadersConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if !needHTTP(c, &vs, ActionRemoveHeaders) {
		return nil, vs.Err()
	}
	switch {
	case len(cfg.Headers) == 0:
		vs.Add("config.headers", "is required: a list of header names")
	case len(cfg.Headers) > maxHeaderEntries:
		vs.Add("config.headers", "has %d headers; at most %d are allowed", len(cfg.Headers), maxHeaderEntries)
	}
	a := &removeHeadersAction{}
	for i, n := range cfg.Headers {
		checkHeaderName(&vs, "config.headers["+strconv.Itoa(i)+"]", n)
		a.names = append(a.names, strings.ToLower(n))
	}
	return a, vs.Err()
}

func (a *removeHeadersAction) Run(r *RunContext) {
	for _, n := range a.names {
		r.RemoveHeader(n)
	}
}

// redirect and url-rewrite

type redirectConfig struct {
	From       *string `json:"from"`
	To         *string `json:"to"`
	StatusCode *int    `json:"status_code"`
}

type rewriteConfig struct {
	From *string `json:"from"`
	To   *string `json:"to"`
}

// urlReplace holds the compiled from/to of redirect and url-rewrite.
type urlReplace struct {
	res  urlResultSlots
	from *Regexp // nil: to is the whole new URL
	to   *Template
}

func compileURLReplace(c *CompileContext, vs *apierr.Violations, from, to *string, fromRequired bool) urlReplace {
	var u urlReplace
	groups := 0
	switch {
	case from != nil:
		re, err := c.c.compileRegexp(*from)
		switch {
		case err == errDocumentBudget:
		case err != nil:
			vs.Add("config.from", "%s", err.Error())
		default:
			u.from = re
			groups = re.NumSubexp()
			// It runs on req.url: its cost counts in the document's.
			if m := c.c.addCost(regexCost(estURLMax, re.prog)); m != "" {
				vs.Add("config.from", "%s", m)
			}
		}
	case fromRequired:
		vs.Add("config.from", "is required: a regular expression matched against the request URL")
	}
	if to == nil || *to == "" {
		vs.Add("config.to", "is required")
		return u
	}
	checkHeaderValue(vs, "config.to", *to)
	u.to = c.c.template(vs, "config.to", *to, groups)
	return u
}

// apply returns the new URL, or false when from does not match. The match
// of from in the URL is replaced by the expansion of to.
func (u *urlReplace) apply(r *RunContext, subject string) (string, bool) {
	st := r.st
	if u.from == nil {
		return st.renderGroups(u.to, r.cur, "", nil), true
	}
	if !st.charge(regexCost(size(subject), u.from.prog)) {
		r.ReportError(ErrCostLimit)
		return "", false
	}
	m := u.from.FindStringSubmatchIndex(subject)
	if m == nil {
		return "", false
	}
	repl := st.renderGroups(u.to, r.cur, subject, m)
	return subject[:m[0]] + repl + subject[m[1]:], true
}

type redirectAction struct {
	urlReplace
	status int
}

// urlResults holds the slots of the matches and url result variables.
type urlResultSlots struct{ matches, url ResultSlot }

func (u *urlResultSlots) init(c *CompileContext) error {
	return resultSlots(c, map[string]*ResultSlot{resMatches: &u.matches, resURL: &u.url})
}

// set sets the matches and url result variables.
func (u *urlResultSlots) set(r *RunContext, matched bool, url string) {
	r.SetBool(u.matches, matched)
	r.SetString(u.url, url)
}

func compileRedirect(c *CompileContext, config []byte) (Action, error) {
	var cfg redirectConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if !needHTTP(c, &vs, ActionRedirect) {
		return nil, vs.Err()
	}
	a := &redirectAction{status: statusCode(&vs, cfg.StatusCode, http.StatusFound, 300, 399)}
	a.urlReplace = compileURLReplace(c, &vs, cfg.From, cfg.To, false)
	if err := a.res.init(c); err != nil {
		return nil, err
	}
	return a, vs.Err()
}

func (a *redirectAction) Run(r *RunContext) {
	loc, ok := a.apply(r, r.st.fullURL())
	a.res.set(r, ok, loc)
	if !ok {
		return
	}
	r.Respond(a.status, http.Header{"Location": {sanitizeHeaderValue(loc)}}, "")
}

// AlwaysTerminates is true without from: every request is redirected.
func (a *redirectAction) AlwaysTerminates() bool { return a.from == nil }

type rewriteAction struct{ urlReplace }

func compileURLRewrite(c *CompileContext, config []byte) (Action, error) {
	var cfg rewriteConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if !needHTTP(c, &vs, ActionURLRewrite) {
		return nil, vs.Err()
	}
	if c.Phase() != Inbound {
		vs.Add("type", "url-rewrite is only available in inbound (on_http_request) rules")
	}
	a := &rewriteAction{compileURLReplace(c, &vs, cfg.From, cfg.To, true)}
	if err := a.res.init(c); err != nil {
		return nil, err
	}
	return a, vs.Err()
}

type rewriteError struct{ msg string }

func (e rewriteError) Error() string { return e.msg }

func (a *rewriteAction) Run(r *RunContext) {
	st := r.st
	old := st.fullURL()
	next, ok := a.apply(r, old)
	a.res.set(r, ok, next)
	if !ok || next == old {
		return
	}
	u, err := url.Parse(next)
	if err != nil {
		r.ReportError(rewriteError{"the rewritten URL is invalid: " + quoteTrunc(next)})
		return
	}
	if !strings.EqualFold(u.Scheme, st.scheme()) || !strings.EqualFold(u.Host, st.req.Host) {
		r.ReportError(rewriteError{"url-rewrite may not change the scheme or host: " + quoteTrunc(next)})
		return
	}
	uri := u.EscapedPath()
	if uri == "" {
		uri = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		uri += "?" + u.RawQuery
	}
	if err := r.RewriteURI(uri); err != nil {
		r.ReportError(err)
	}
}

// restrict-ips

type restrictIPsConfig struct {
	Allow      []string `json:"allow"`
	Deny       []string `json:"deny"`
	IPPolicies []string `json:"ip_policies"`
	Enforce    *bool    `json:"enforce"`
}

type restrictIPsAction struct {
	allow, deny []netip.Prefix
	checker     IPChecker
	enforce     bool
	action      ResultSlot
	matched     ResultSlot
}

func parsePrefixes(vs *apierr.Violations, field string, list []string) []netip.Prefix {
	if len(list) > maxCIDRs {
		vs.Add(field, "has %d entries; at most %d are allowed", len(list), maxCIDRs)
		return nil
	}
	out := make([]netip.Prefix, 0, len(list))
	for i, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil || a.Zone() != "" {
				vs.Add(field+"["+strconv.Itoa(i)+"]", "invalid CIDR %s: write address/bits (10.0.0.0/8) or a single address", quoteTrunc(s))
				continue
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out
}

func compileRestrictIPs(c *CompileContext, config []byte) (Action, error) {
	var cfg restrictIPsConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if c.Phase() != Inbound {
		vs.Add("type", "restrict-ips is only available in inbound rules")
	}
	if len(cfg.Allow)+len(cfg.Deny)+len(cfg.IPPolicies) == 0 {
		vs.Add("config", "needs at least one of allow, deny or ip_policies")
	}
	a := &restrictIPsAction{
		allow:   parsePrefixes(&vs, "config.allow", cfg.Allow),
		deny:    parsePrefixes(&vs, "config.deny", cfg.Deny),
		enforce: cfg.Enforce == nil || *cfg.Enforce,
	}
	if err := resultSlots(c, map[string]*ResultSlot{resAction: &a.action, resMatchedCIDR: &a.matched}); err != nil {
		return nil, err
	}
	if len(cfg.IPPolicies) > 0 {
		ok := true
		if len(cfg.IPPolicies) > maxIPPolicies {
			vs.Add("config.ip_policies", "has %d entries; at most %d are allowed", len(cfg.IPPolicies), maxIPPolicies)
			ok = false
		}
		for i, id := range cfg.IPPolicies {
			if strings.TrimSpace(id) == "" {
				vs.Add("config.ip_policies["+strconv.Itoa(i)+"]", "an IP policy ID may not be empty")
				ok = false
			}
		}
		res := c.c.o.IPPolicies
		switch {
		case res == nil:
			vs.Add("config.ip_policies", "IP policies cannot be resolved here: this policy does not belong to an edge whose service provides IP policies; use allow and deny CIDRs")
		case ok:
			chk, err := res(append([]string(nil), cfg.IPPolicies...))
			switch {
			case err != nil:
				msg := err.Error()
				var ae *apierr.Error
				if asAPIErr(err, &ae) {
					msg = ae.Msg
				}
				vs.Add("config.ip_policies", "%s", msg)
			case chk == nil:
				vs.Add("config.ip_policies", "the IP policies resolved to nothing")
			default:
				a.checker = chk
			}
		}
	}
	return a, vs.Err()
}

// indexAddr returns the index of the first prefix of ps containing a, or
// -1.
func indexAddr(ps []netip.Prefix, a netip.Addr) int {
	for i, p := range ps {
		if p.Contains(a) {
			return i
		}
	}
	return -1
}

// Run refuses the connection's client address (never a forwarded one)
// when it is unknown, in a deny prefix, outside the allow prefixes (when
// there are some) or refused by the IP policies (when there are some). It
// sets the action and matched_cidr result variables; with enforce off
// (shadow mode) it refuses nothing.
func (a *restrictIPsAction) Run(r *RunContext) {
	addr := r.ClientIP()
	di, ai := -1, -1
	refused := !addr.IsValid()
	if !refused {
		di = indexAddr(a.deny, addr)
		refused = di >= 0
	}
	if !refused && len(a.allow) > 0 {
		ai = indexAddr(a.allow, addr)
		refused = ai < 0
	}
	if !refused && a.checker != nil && !a.checker.AllowedIP(addr) {
		refused, ai = true, -1 // the IP policies decided
	}
	if refused {
		r.SetString(a.action, "deny")
	} else {
		r.SetString(a.action, "allow")
	}
	if r.st.pol.readsResult(a.matched.slot) { // formatting the prefix allocates
		switch {
		case di >= 0:
			r.SetString(a.matched, a.deny[di].String())
		case ai >= 0:
			r.SetString(a.matched, a.allow[ai].String())
		default:
			r.SetString(a.matched, "")
		}
	}
	if refused && a.enforce {
		r.Respond(http.StatusForbidden, nil, "")
	}
}
