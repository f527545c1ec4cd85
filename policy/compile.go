package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/overloads"
	celtypes "cel.dev/cel-go/common/types"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/policy/limits"
)

// Compile checks and compiles a document for o.Target. Every expression is
// parsed, type-checked against the target's variables (it must be boolean),
// checked against the limits and cost-estimated; every action config is
// decoded strictly and validated; every ${...} template is compiled. All
// problems are returned together as one InvalidArgument [*apierr.Error],
// one violation per problem, each located by its JSON path (for example
// "inbound[0].expressions[1]" or "on_http_request[2].actions[0].config.rate")
// with a reason that names the rule, when it has a name, and gives CEL's
// line:column.
func (e *Engine) Compile(doc *Document, o CompileOptions) (*Policy, error) {
	if doc == nil {
		doc = &Document{}
	}
	c := &compiler{e: e, o: o, reads: make([]bool, len(e.results)), regexes: map[string]*regexEntry{}, setVars: map[string]bool{}}
	p := &Policy{e: e, target: o.Target}
	if o.Target != TargetHTTP && o.Target != TargetConnection {
		c.vs.Add("", "unknown target %d", o.Target)
		return nil, c.vs.Err()
	}
	inKey, outKey := doc.InboundKey, doc.OutboundKey
	if inKey == "" {
		inKey = KeyInbound
	}
	if outKey == "" {
		outKey = KeyOutbound
	}
	switch {
	case inKey != KeyInbound && inKey != KeyOnHTTPRequest && inKey != KeyOnTCPConnect:
		c.vs.Add(inKey, "unknown inbound phase name; use inbound, on_http_request or on_tcp_connect")
	case o.Target == TargetHTTP && inKey == KeyOnTCPConnect:
		c.vs.Add(inKey, "on_tcp_connect is for TLS/TCP connection policies; an HTTP policy uses inbound or on_http_request")
	case o.Target == TargetConnection && inKey == KeyOnHTTPRequest:
		c.vs.Add(inKey, "on_http_request is for HTTP policies; a TLS/TCP connection policy uses inbound or on_tcp_connect")
	}
	switch {
	case outKey != KeyOutbound && outKey != KeyOnHTTPResponse:
		c.vs.Add(outKey, "unknown outbound phase name; use outbound or on_http_response")
	case o.Target == TargetConnection && len(doc.Outbound) > 0:
		c.vs.Add(outKey, "a TLS/TCP connection policy has no outbound phase: outbound rules run on HTTP responses")
	}
	p.in = c.compilePhase(Inbound, inKey, doc.Inbound)
	if o.Target == TargetHTTP {
		p.out = c.compilePhase(Outbound, outKey, doc.Outbound)
	}
	if err := c.vs.Err(); err != nil {
		return nil, err
	}
	p.doc = compactJSON(doc)
	p.reads = c.reads
	p.carry = c.outReads
	for slot, r := range c.reads {
		if r {
			p.carrySlots = append(p.carrySlots, slot)
		}
	}
	p.carryVars = c.outReadsVars
	p.regexProg = make(map[string]int, len(c.regexes))
	for pat, r := range c.regexes {
		if r.err == nil {
			p.regexProg[pat] = r.prog
		}
	}
	return p, nil
}

// compiler holds the state of one Compile call.
type compiler struct {
	e     *Engine
	o     CompileOptions
	vs    apierr.Violations
	phase Phase

	// reads[slot] is set when an expression or template of the document
	// refers to that action result variable; outReads when one in an
	// outbound rule refers to any.
	reads    []bool
	outReads bool

	// The document's budget (limits.MaxDocumentNodes, limits.MaxDocumentCost,
	// limits.MaxDocumentRegexProgramSize): what the document has used so far, and
	// whether it went over, in which case nothing more is parsed or
	// compiled.
	nodes    int
	cost     uint64
	progSize int
	over     bool

	// regexes holds every regular expression of the document, compiled
	// once per distinct pattern.
	regexes map[string]*regexEntry

	// setVars holds the names set-vars actions compiled so far set: an
	// expression may read vars.<name> only after one of them. readsVars
	// is set when an outbound expression or template reads vars.
	setVars      map[string]bool
	outReadsVars bool
}

// regexEntry is a compiled pattern, or the reason it was refused.
type regexEntry struct {
	re   *regexp.Regexp
	prog int // RE2 instructions
	err  error
}

// regex compiles pattern once per document: it computes the RE2 program
// size, refuses a program over limits.MaxRegexProgramSize or one that would take
// the document over limits.MaxDocumentRegexProgramSize (before compiling it), and
// compiles the regexp. The same pattern again gets the same entry.
func (c *compiler) regex(pattern string) *regexEntry {
	if r, ok := c.regexes[pattern]; ok {
		return r
	}
	r := &regexEntry{}
	c.regexes[pattern] = r
	size, err := celtypes.RegexProgramSize(pattern)
	switch {
	case err != nil:
		r.err = errors.New("invalid regular expression: " + strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	case size > limits.MaxRegexProgramSize:
		r.err = fmt.Errorf("regular expression program size %d exceeds the limit of %d", size, limits.MaxRegexProgramSize)
	case c.over:
		r.err = errDocumentBudget
	case c.progSize+size > limits.MaxDocumentRegexProgramSize:
		r.err = fmt.Errorf("the document's regular expressions would total %d RE2 instructions, over the limit of %d (MaxDocumentRegexProgramSize); rules after this one were not checked",
			c.progSize+size, limits.MaxDocumentRegexProgramSize)
		c.overBudget()
	default:
		c.progSize += size
		r.prog = size
		r.re, r.err = regexp.Compile(pattern)
		if r.err != nil {
			r.err = errors.New("invalid regular expression: " + strings.TrimPrefix(r.err.Error(), "error parsing regexp: "))
		}
	}
	return r
}

// errDocumentBudget is the error of a regex met after the document went
// over its budget; it is not reported (the violation that exceeded the
// budget was).
var errDocumentBudget = errors.New("the document exceeds its budget")

// overBudget records that the document went over one of its budgets:
// nothing more is parsed, compiled or reported.
func (c *compiler) overBudget() { c.over = true }

func rulePrefix(rule string) string {
	if rule == "" {
		return ""
	}
	return "rule " + strconv.Quote(rule) + ": "
}

func (c *compiler) compilePhase(ph Phase, key string, rules []Rule) phaseProg {
	c.phase = ph
	prog := phaseProg{key: key}
	if len(rules) > limits.MaxRulesPerPhase {
		c.vs.Add(key, "has %d rules; at most %d are allowed per phase", len(rules), limits.MaxRulesPerPhase)
		rules = rules[:limits.MaxRulesPerPhase]
	}
	for i := range rules {
		prog.rules = append(prog.rules, c.compileRule(key+"["+strconv.Itoa(i)+"]", &rules[i]))
	}
	return prog
}

func (c *compiler) compileRule(path string, r *Rule) compiledRule {
	cr := compiledRule{loc: path, name: r.Name}
	pre := rulePrefix(r.Name)
	exprs := r.Expressions
	if len(exprs) > limits.MaxExpressionsPerRule {
		c.vs.Add(path+".expressions", "%shas %d expressions; at most %d are allowed", pre, len(exprs), limits.MaxExpressionsPerRule)
		exprs = exprs[:limits.MaxExpressionsPerRule]
	}
	for j, src := range exprs {
		field := path + ".expressions[" + strconv.Itoa(j) + "]"
		if cond, ok := c.condition(field, pre, src); ok {
			cr.conds = append(cr.conds, cond)
		}
	}
	acts := r.Actions
	switch {
	case len(acts) == 0:
		c.vs.Add(path+".actions", "%sa rule needs at least one action", pre)
	case len(acts) > limits.MaxActionsPerRule:
		c.vs.Add(path+".actions", "%shas %d actions; at most %d are allowed", pre, len(acts), limits.MaxActionsPerRule)
		acts = acts[:limits.MaxActionsPerRule]
	}
	terminal := -1
	for j := range acts {
		ap := path + ".actions[" + strconv.Itoa(j) + "]"
		if terminal >= 0 {
			c.vs.Add(ap, "%sthis action can never run: actions[%d] (%s) always ends evaluation before it",
				pre, terminal, acts[terminal].Type)
			continue
		}
		a, ok := c.compileAction(ap, r.Name, &acts[j])
		if !ok {
			continue
		}
		cr.actions = append(cr.actions, a)
		if t, ok := a.action.(Terminator); ok && t.AlwaysTerminates() {
			terminal = j
		}
	}
	return cr
}

func (c *compiler) compileAction(path, rule string, ra *RuleAction) (ca compiledAction, ok bool) {
	pre := rulePrefix(rule)
	if ra.Type == "" {
		c.vs.Add(path+".type", "%sthe action type is required; one of: %s", pre, strings.Join(c.e.ActionTypes(), ", "))
		return ca, false
	}
	t, found := c.e.actions[ra.Type]
	if !found {
		c.vs.Add(path+".type", "%sunknown action type %s; one of: %s", pre, quoteTrunc(ra.Type), strings.Join(c.e.ActionTypes(), ", "))
		return ca, false
	}
	if !isNull(ra.Config) {
		if _, err := objectFields(ra.Config, true); err != nil {
			c.vs.Add(path+".config", "%smust be a JSON object: %s", pre, jsonErrMsg(err))
			return ca, false
		}
	}
	cc := &CompileContext{c: c, action: ra.Type, path: path, rule: rule}
	act, err := safeCompile(t, cc, ra.Config)
	if err == nil && act == nil {
		err = errors.New("the action type returned no action")
	}
	if err != nil {
		var tmp apierr.Violations
		if len(apierr.ViolationsOf(err)) > 0 {
			tmp.AddError(path, err)
		} else {
			tmp.AddError(path+".config", err)
		}
		for _, v := range tmp {
			c.vs = append(c.vs, apierr.Violation{Field: v.Field, Reason: pre + v.Reason})
		}
		return ca, false
	}
	return compiledAction{loc: path, rule: rule, typ: ra.Type, action: act}, true
}

// safeCompile runs an action type's Compile, turning a panic (a bug in a
// host's action type) into an error.
func safeCompile(t ActionType, cc *CompileContext, config []byte) (a Action, err error) {
	defer func() {
		if r := recover(); r != nil {
			a, err = nil, fmt.Errorf("internal error compiling the action: %v", r)
		}
	}()
	return t.Compile(cc, config)
}

// condition compiles one rule expression.
func (c *compiler) condition(field, pre, src string) (condition, bool) {
	x, msgs := c.checkExpr(src, func(t *cel.Type) string {
		if t.IsExactType(cel.BoolType) {
			return ""
		}
		return "the expression must be boolean, got " + cel.FormatCELType(t)
	})
	for _, m := range msgs {
		c.vs.Add(field, "%s%s", pre, m)
	}
	if x == nil {
		return condition{}, false
	}
	prog, err := c.program(x)
	if err != nil {
		c.vs.Add(field, "%s%s", pre, err.Error())
		return condition{}, false
	}
	return condition{loc: field, prog: prog, native: lowerer{c, x.ast.NativeRep()}.lowerBool()}, true
}

// program plans the cel-go program of a checked expression. It charges
// the evaluation's cost tracker, which the evaluation state passes in the
// execution frame (see evalState.evalCEL), and plans matches() with the
// document's compiled patterns.
func (c *compiler) program(x *checkedExpr) (cel.Program, error) {
	return c.e.env.Program(x.ast, cel.EvalOptions(cel.OptOptimize), cel.CustomDecoratorV2(c.regexDecorator()))
}

// checkExpr parses and checks src and applies the package's own checks:
// result type (wantType returns a problem or ""), availability of
// variables and functions for the target and phase, literal CIDRs and IP
// addresses, and the cost limit. It returns the checked AST, or nil and the
// problems formatted "line:column: message".
func (c *compiler) checkExpr(src string, wantType func(*cel.Type) string) (*checkedExpr, []string) {
	if strings.TrimSpace(src) == "" {
		return nil, []string{"the expression is empty"}
	}
	if c.over {
		return nil, nil
	}
	a, iss := c.e.env.Compile(src)
	if iss.Err() != nil {
		var msgs []string
		for _, e := range iss.Errors() {
			msgs = append(msgs, formatLoc(e.Location.Line(), e.Location.Column(), c.hint(e.Message)))
		}
		return nil, msgs
	}
	native := a.NativeRep()
	if c.nodes += limits.ExpressionOverheadNodes + countNodes(native.Expr()); c.nodes > limits.MaxDocumentNodes {
		c.overBudget()
		return nil, []string{fmt.Sprintf("the document's expressions total more than %d AST nodes (MaxDocumentNodes); rules after this one were not checked", limits.MaxDocumentNodes)}
	}
	info := native.SourceInfo()
	var probs []locMsg
	at := func(id int64, msg string) {
		l := info.GetStartLocation(id)
		probs = append(probs, locMsg{l.Line(), l.Column(), msg})
	}
	want := availFor(c.o.Target, c.phase)
	for id, ref := range native.ReferenceMap() {
		if ref.Name != "" {
			v, ok := c.e.vars[ref.Name]
			if ok && v.avail&want == 0 {
				at(id, unavailableReason(v.name, v.avail, c.o.Target, c.phase))
			}
			if ok && v.id >= resultBase {
				c.reads[v.id-resultBase] = true
				c.outReads = c.outReads || c.phase == Outbound
			}
		}
		for _, ov := range ref.OverloadIDs {
			name, _, _ := strings.Cut(ov, "_")
			if av, ok := ownFuncs[name]; ok && av&want == 0 {
				at(id, unavailableReason(name+"()", av, c.o.Target, c.phase))
			}
		}
	}
	c.checkLiterals(native, at)
	c.checkVars(native, at)
	if len(probs) == 0 {
		if m := wantType(a.OutputType()); m != "" {
			probs = append(probs, locMsg{1, 0, m})
		}
	}
	var est cost.Estimate
	if len(probs) == 0 {
		var err error
		est, err = c.e.env.EstimateCost(a, costEstimator{c})
		switch {
		case err != nil:
			probs = append(probs, locMsg{1, 0, "cannot estimate the cost: " + err.Error()})
		case est.Max > limits.MaxExpressionCost:
			probs = append(probs, locMsg{1, 0, fmt.Sprintf(
				"the estimated worst-case cost %s exceeds the limit of %d; nested comprehensions and regexes built from request data are the usual causes",
				fmtCost(est.Max), limits.MaxExpressionCost)})
		}
	}
	if len(probs) == 0 {
		if m := c.addCost(est.Max); m != "" {
			return nil, []string{m}
		}
	}

	if len(probs) > 0 {
		sort.Slice(probs, func(i, j int) bool {
			if probs[i].line != probs[j].line {
				return probs[i].line < probs[j].line
			}
			if probs[i].col != probs[j].col {
				return probs[i].col < probs[j].col
			}
			return probs[i].msg < probs[j].msg
		})
		msgs := make([]string, len(probs))
		for i, p := range probs {
			msgs[i] = formatLoc(p.line, p.col, p.msg)
		}
		return nil, msgs
	}
	return &checkedExpr{ast: a, cost: est.Max}, nil
}

// addCost adds an estimated cost to the document's total, returning the
// problem when it goes over limits.MaxDocumentCost.
func (c *compiler) addCost(est uint64) string {
	c.cost = cost.SafeAdd(c.cost, est)
	if c.cost <= limits.MaxDocumentCost {
		return ""
	}
	c.overBudget()
	return fmt.Sprintf("the estimated worst-case costs of the document's expressions, templates and from regexes total more than %d (MaxDocumentCost); rules after this one were not checked", limits.MaxDocumentCost)
}

// countNodes returns the number of nodes of an expression.
func countNodes(e ast.Expr) int {
	n := 0
	ast.PostOrderVisit(e, ast.NewExprVisitor(func(ast.Expr) { n++ }))
	return n
}

// checkedExpr is an expression that passed checkExpr.
type checkedExpr struct {
	ast  *cel.Ast
	cost uint64 // estimated worst-case cost
}

// hint extends CEL's "undeclared reference to 'req'" with the names of the
// variables under that prefix that the policy may use.
func (c *compiler) hint(msg string) string {
	const pre = "undeclared reference to '"
	if !strings.HasPrefix(msg, pre) {
		return msg
	}
	name, _, _ := strings.Cut(msg[len(pre):], "'")
	want := availFor(c.o.Target, c.phase)
	var names []string
	for _, v := range c.e.vars {
		if strings.HasPrefix(v.name, name+".") && v.avail&want != 0 {
			names = append(names, v.name)
		}
	}
	if len(names) == 0 {
		return msg
	}
	sort.Strings(names)
	return msg + "; the variables here are " + strings.Join(names, ", ")
}

type locMsg struct {
	line, col int
	msg       string
}

func fmtCost(n uint64) string {
	if n == ^uint64(0) {
		return "(unbounded)"
	}
	return strconv.FormatUint(n, 10)
}

// formatLoc formats a CEL location (1-based line, 0-based column) and a
// message as "line:column: message" with a 1-based column.
func formatLoc(line, col int, msg string) string {
	if line <= 0 {
		return msg
	}
	return strconv.Itoa(line) + ":" + strconv.Itoa(col+1) + ": " + msg
}

// checkLiterals validates literal arguments of inCidrRange, inCidrRanges
// and matches (compiling the pattern for the document), which CEL would
// only reject at run time.
func (c *compiler) checkLiterals(a *ast.AST, at func(int64, string)) {
	lit := func(e ast.Expr) (string, bool) {
		if e.Kind() != ast.LiteralKind {
			return "", false
		}
		s, ok := e.AsLiteral().(celtypes.String)
		return string(s), ok
	}
	checkIP := func(e ast.Expr, fn string) {
		if s, ok := lit(e); ok {
			if _, err := netip.ParseAddr(s); err != nil {
				at(e.ID(), fn+": invalid IP address "+quoteTrunc(s))
			}
		}
	}
	checkCIDR := func(e ast.Expr, fn string) {
		if s, ok := lit(e); ok {
			if _, err := netip.ParsePrefix(s); err != nil {
				at(e.ID(), fn+": invalid CIDR "+quoteTrunc(s)+" (write it as address/bits, for example 10.0.0.0/8)")
			}
		}
	}
	ast.PostOrderVisit(a.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() != ast.CallKind {
			return
		}
		call := e.AsCall()
		args := call.Args()
		if ids := a.GetOverloadIDs(e.ID()); len(ids) == 1 && (ids[0] == overloads.Matches || ids[0] == overloads.MatchesString) && len(args) > 0 {
			pat := args[len(args)-1]
			if s, ok := lit(pat); ok {
				switch r := c.regex(s); {
				case r.err == errDocumentBudget:
				case r.err != nil && c.over:
					at(pat.ID(), r.err.Error()) // the violation naming the budget
				case r.err != nil:
					at(pat.ID(), "matches: "+r.err.Error())
				}
			}
			return
		}
		ids := a.GetOverloadIDs(e.ID())
		if call.IsMemberFunction() || len(args) != 2 || len(ids) != 1 {
			return
		}
		switch ids[0] {
		case ovInCidrRange:
			checkIP(args[0], fnInCidrRange)
			checkCIDR(args[1], fnInCidrRange)
		case ovInCidrRanges:
			checkIP(args[0], fnInCidrRanges)
			if args[1].Kind() == ast.ListKind {
				for _, el := range args[1].AsList().Elements() {
					checkCIDR(el, fnInCidrRanges)
				}
			}
		}
	}))
}

// costEstimator gives CEL's cost model the sizes the package assumes (see
// the estXxx constants), the costs of its functions and the cost of
// matches() (regexCost, with the program size of a literal pattern).
type costEstimator struct{ c *compiler }

func (ce costEstimator) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	if isParseURLPart(n.Expr()) {
		// CEL's model does not carry the parts' size from the call's
		// result size: assume three times the largest request string (the
		// raw path re-escapes the path); a longer input is caught by
		// limits.MaxEvaluationCost.
		return &cost.SizeEstimate{Min: 0, Max: 3 * estStringMax}
	}
	path := n.Path()
	if len(path) == 0 {
		return nil
	}
	v, ok := ce.c.e.vars[path[0]]
	if !ok {
		return nil
	}
	switch v.kind {
	case kString:
		if len(path) == 1 {
			return &cost.SizeEstimate{Min: 0, Max: stringVarMax(v.id)}
		}
	case kStringList: // the client certificate's SANs
		switch {
		case len(path) == 1:
			return &cost.SizeEstimate{Min: 0, Max: estListEntries}
		default:
			return &cost.SizeEstimate{Min: 0, Max: estStringMax}
		}
	case kStringMap: // vars
		switch {
		case len(path) == 1:
			return &cost.SizeEstimate{Min: 0, Max: limits.MaxVars}
		case len(path) == 2 && path[1] == "@keys":
			return &cost.SizeEstimate{Min: 0, Max: limits.MaxVarNameLength}
		default:
			return &cost.SizeEstimate{Min: 0, Max: limits.MaxVarBytes}
		}
	case kStringListMap:
		str := uint64(estStringMax)
		if v.id == vReqURLQueryParams {
			str = estURLPartMax
		}
		switch {
		case len(path) == 1:
			return &cost.SizeEstimate{Min: 0, Max: estMapEntries}
		case len(path) == 2 && path[1] == "@keys":
			return &cost.SizeEstimate{Min: 0, Max: str}
		case len(path) == 2:
			return &cost.SizeEstimate{Min: 0, Max: estListEntries}
		default:
			return &cost.SizeEstimate{Min: 0, Max: str}
		}
	}
	return nil
}

// isParseURLPart reports whether e selects or indexes a part of a
// parseURL() result.
func isParseURLPart(e ast.Expr) bool {
	if e == nil {
		return false
	}
	var m ast.Expr
	switch e.Kind() {
	case ast.SelectKind:
		m = e.AsSelect().Operand()
	case ast.CallKind:
		if c := e.AsCall(); c.FunctionName() == "_[_]" && len(c.Args()) == 2 {
			m = c.Args()[0]
		}
	}
	return m != nil && m.Kind() == ast.CallKind && m.AsCall().FunctionName() == fnParseURL
}

// stringVarMax is the assumed largest size of a string variable.
func stringVarMax(id varID) uint64 {
	switch id {
	case vReqURL:
		return estURLMax
	case vReqURLPath, vReqURLQuery:
		return estURLPartMax
	case vReqURLScheme:
		return len64("https")
	case vConnClientIP, vConnServerIP:
		return estIPMax
	case vConnTLSVersion:
		return len64("0xffff")
	case vConnTLSCipher:
		return 64 // the longest names are about 50 bytes, "0x" and four digits for an unknown suite
	case vConnCertFingerprint:
		return 64
	case vReqURLRawPath:
		return 3 * estURLPartMax // the decoded path escaped again
	case vReqURLHost:
		return estStringMax
	case vOIDCSubject, vOIDCEmail, vOIDCName, vOIDCPreferredUsername:
		return limits.MaxOIDCClaimBytes
	case vOIDCIssuer:
		return limits.MaxOIDCIssuerBytes
	}
	if id >= resultBase {
		return limits.MaxTemplateOutput // set by actions; the built-in ones stay within limits.MaxBucketKeyBytes
	}
	return estStringMax
}

func len64(s string) uint64 { return uint64(len(s)) }

func (ce costEstimator) EstimateCallCost(function, overloadID string, target *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
	list := &cost.SizeEstimate{Min: 0, Max: estListEntries, Elem: &cost.SizeEstimate{Min: 0, Max: estStringMax}}
	switch overloadID {
	case overloads.Matches, overloads.MatchesString:
		operands := args
		if target != nil {
			operands = append([]cost.AstNode{*target}, args...)
		}
		if len(operands) != 2 {
			return nil
		}
		s := cost.EstimateSize(ce, operands[0])
		prog := dynamicRegexProg(cost.EstimateSize(ce, operands[1]).Max)
		if e := operands[1].Expr(); e != nil && e.Kind() == ast.LiteralKind {
			if p, ok := e.AsLiteral().(celtypes.String); ok {
				if r := ce.c.regex(string(p)); r.err == nil {
					prog = r.prog
				}
			}
		}
		return &cost.CallEstimate{CostEstimate: cost.Estimate{Min: regexCost(s.Min, prog), Max: regexCost(s.Max, prog)}}
	case ovGetReqHeader, ovGetResHeader, ovGetQueryParam:
		return &cost.CallEstimate{CostEstimate: cost.Estimate{Min: 1, Max: 4}, ResultSize: list}
	case ovHasReqHeader, ovHasResHeader, ovHasQueryParam, ovInCidrRange:
		return &cost.CallEstimate{CostEstimate: cost.Estimate{Min: 1, Max: 4}}
	case ovGetReqCookie:
		return &cost.CallEstimate{CostEstimate: cost.Estimate{Min: 1, Max: helperCost(estStringMax)}, ResultSize: list}
	case ovHasReqCookie:
		return &cost.CallEstimate{CostEstimate: cost.Estimate{Min: 1, Max: helperCost(estStringMax)}}
	case ovParseURL, ovSHA256, ovSHA1, ovMD5:
		if len(args) != 1 {
			return nil
		}
		s := cost.EstimateSize(ce, args[0])
		est := &cost.CallEstimate{CostEstimate: cost.Estimate{Min: helperCost(s.Min), Max: helperCost(s.Max)}}
		switch overloadID {
		case ovParseURL:
			// Eight parts, none longer than three times the URL (the raw
			// path re-escapes the decoded one).
			est.ResultSize = &cost.SizeEstimate{Min: 8, Max: 8,
				Key:  &cost.SizeEstimate{Min: 4, Max: 8},
				Elem: &cost.SizeEstimate{Min: 0, Max: cost.SafeMultiply(s.Max, 3)}}
		case ovSHA256:
			est.ResultSize = &cost.SizeEstimate{Min: 64, Max: 64}
		case ovSHA1:
			est.ResultSize = &cost.SizeEstimate{Min: 40, Max: 40}
		default:
			est.ResultSize = &cost.SizeEstimate{Min: 32, Max: 32}
		}
		return est
	case ovInCidrRanges:
		n := uint64(estListEntries)
		if len(args) == 2 {
			if s := args[1].ComputedSize(); s != nil {
				n = s.Max
			}
		}
		return &cost.CallEstimate{CostEstimate: cost.Estimate{Min: 1, Max: 2 + 2*n}}
	}
	return nil
}
