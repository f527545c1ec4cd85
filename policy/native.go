package policy

// Native evaluation.
//
// Most policy expressions are simple: comparisons of request fields with
// literals, string predicates, a regex, membership in a literal list, a
// CIDR check. After an expression has been type-checked, lower tries to
// turn its checked AST into a tree of small Go nodes that read the request
// directly, without boxing values into CEL's ref.Val. Only operations whose
// CEL semantics the nodes reproduce exactly are lowered (the package's own
// functions share their implementation with the CEL bindings); anything
// else leaves the expression to the CEL program.
//
// Errors follow CEL: strict operations propagate an error; && and || absorb
// one when the other side decides the result (false && error is false,
// true || error is true). When a native evaluation ends in an error, the
// CEL program is run instead and its result and message are used, so the
// native path only ever has to be exact for non-error results. Tests
// compare both paths on every expression of the test tables and in the fuzz
// test.

import (
	"net/netip"
	"regexp"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
)

type tri uint8

const (
	triFalse tri = iota
	triTrue
	triErr
)

func triOf(b bool) tri {
	if b {
		return triTrue
	}
	return triFalse
}

type bnode interface{ evalB(st *evalState) tri }
type snode interface {
	evalS(st *evalState) (string, bool)
}
type inode interface {
	evalI(st *evalState) (int64, bool)
}
type lnode interface {
	evalL(st *evalState) ([]string, bool)
}

// mref is a map(string, list(string)) variable; it is only usable as the
// operand of an index or of "in".
type mref struct{ id varID }

// Leaves.

type bconst struct{ v bool }

func (n bconst) evalB(*evalState) tri { return triOf(n.v) }

type sconst struct{ v string }

func (n sconst) evalS(*evalState) (string, bool) { return n.v, true }

type iconst struct{ v int64 }

func (n iconst) evalI(*evalState) (int64, bool) { return n.v, true }

type svar struct{ id varID }

func (n svar) evalS(st *evalState) (string, bool) { return st.strVar(n.id), true }

type ivar struct{ id varID }

func (n ivar) evalI(st *evalState) (int64, bool) { return st.intVar(n.id), true }

type bvar struct{ id varID }

func (n bvar) evalB(st *evalState) tri { return triOf(st.boolVar(n.id)) }

// Logic.

type andNode struct{ a, b bnode }

func (n andNode) evalB(st *evalState) tri {
	l := n.a.evalB(st)
	if l == triFalse {
		return triFalse
	}
	r := n.b.evalB(st)
	if r == triFalse {
		return triFalse
	}
	if l == triErr || r == triErr {
		return triErr
	}
	return triTrue
}

type orNode struct{ a, b bnode }

func (n orNode) evalB(st *evalState) tri {
	l := n.a.evalB(st)
	if l == triTrue {
		return triTrue
	}
	r := n.b.evalB(st)
	if r == triTrue {
		return triTrue
	}
	if l == triErr || r == triErr {
		return triErr
	}
	return triFalse
}

type notNode struct{ a bnode }

func (n notNode) evalB(st *evalState) tri {
	switch n.a.evalB(st) {
	case triTrue:
		return triFalse
	case triFalse:
		return triTrue
	}
	return triErr
}

// Comparisons.

type cmpOp uint8

const (
	opEq cmpOp = iota
	opNe
	opLt
	opLe
	opGt
	opGe
)

func cmpResult(op cmpOp, c int) bool {
	switch op {
	case opEq:
		return c == 0
	case opNe:
		return c != 0
	case opLt:
		return c < 0
	case opLe:
		return c <= 0
	case opGt:
		return c > 0
	default:
		return c >= 0
	}
}

type scmp struct {
	a, b snode
	op   cmpOp
}

func (n scmp) evalB(st *evalState) tri {
	l, ok := n.a.evalS(st)
	if !ok {
		return triErr
	}
	r, ok := n.b.evalS(st)
	if !ok {
		return triErr
	}
	return triOf(cmpResult(n.op, strings.Compare(l, r)))
}

// svarEq is the common "variable == literal" shape.
type svarEq struct {
	id  varID
	c   string
	neg bool
}

func (n svarEq) evalB(st *evalState) tri { return triOf((st.strVar(n.id) == n.c) != n.neg) }

type icmp struct {
	a, b inode
	op   cmpOp
}

func (n icmp) evalB(st *evalState) tri {
	l, ok := n.a.evalI(st)
	if !ok {
		return triErr
	}
	r, ok := n.b.evalI(st)
	if !ok {
		return triErr
	}
	c := 0
	if l < r {
		c = -1
	} else if l > r {
		c = 1
	}
	return triOf(cmpResult(n.op, c))
}

type beq struct {
	a, b bnode
	neg  bool
}

func (n beq) evalB(st *evalState) tri {
	l := n.a.evalB(st)
	if l == triErr {
		return triErr
	}
	r := n.b.evalB(st)
	if r == triErr {
		return triErr
	}
	return triOf((l == r) != n.neg)
}

// String predicates.

type strFn uint8

const (
	fnStartsWith strFn = iota
	fnEndsWith
	fnContains
)

func applyStrFn(f strFn, s, arg string) bool {
	switch f {
	case fnStartsWith:
		return strings.HasPrefix(s, arg)
	case fnEndsWith:
		return strings.HasSuffix(s, arg)
	default:
		return strings.Contains(s, arg)
	}
}

type strPred struct {
	a, b snode
	f    strFn
}

func (n strPred) evalB(st *evalState) tri {
	s, ok := n.a.evalS(st)
	if !ok {
		return triErr
	}
	arg, ok := n.b.evalS(st)
	if !ok {
		return triErr
	}
	return triOf(applyStrFn(n.f, s, arg))
}

// svarPred is "variable.startsWith(literal)" and friends.
type svarPred struct {
	id varID
	c  string
	f  strFn
}

func (n svarPred) evalB(st *evalState) tri { return triOf(applyStrFn(n.f, st.strVar(n.id), n.c)) }

type matchNode struct {
	a  snode
	re *regexp.Regexp
}

func (n matchNode) evalB(st *evalState) tri {
	s, ok := n.a.evalS(st)
	if !ok {
		return triErr
	}
	return triOf(n.re.MatchString(s))
}

type svarMatch struct {
	id varID
	re *regexp.Regexp
}

func (n svarMatch) evalB(st *evalState) tri { return triOf(n.re.MatchString(st.strVar(n.id))) }

type strSize struct{ a snode }

func (n strSize) evalI(st *evalState) (int64, bool) {
	s, ok := n.a.evalS(st)
	if !ok {
		return 0, false
	}
	return int64(utf8.RuneCountInString(s)), true
}

type listSize struct{ a lnode }

func (n listSize) evalI(st *evalState) (int64, bool) {
	l, ok := n.a.evalL(st)
	if !ok {
		return 0, false
	}
	return int64(len(l)), true
}

// Membership.

type inStrSet struct {
	a   snode
	set []string
	m   map[string]struct{} // for long lists
}

func (n inStrSet) evalB(st *evalState) tri {
	s, ok := n.a.evalS(st)
	if !ok {
		return triErr
	}
	if n.m != nil {
		_, ok := n.m[s]
		return triOf(ok)
	}
	for _, v := range n.set {
		if v == s {
			return triTrue
		}
	}
	return triFalse
}

type inIntSet struct {
	a   inode
	set []int64
}

func (n inIntSet) evalB(st *evalState) tri {
	x, ok := n.a.evalI(st)
	if !ok {
		return triErr
	}
	for _, v := range n.set {
		if v == x {
			return triTrue
		}
	}
	return triFalse
}

type inList struct {
	a snode
	l lnode
}

func (n inList) evalB(st *evalState) tri {
	s, ok := n.a.evalS(st)
	if !ok {
		return triErr
	}
	l, ok := n.l.evalL(st)
	if !ok {
		return triErr
	}
	for _, v := range l {
		if v == s {
			return triTrue
		}
	}
	return triFalse
}

type inMap struct {
	a  snode
	id varID
}

func (n inMap) evalB(st *evalState) tri {
	s, ok := n.a.evalS(st)
	if !ok {
		return triErr
	}
	_, found := st.mapLookup(n.id, s, "")
	return triOf(found)
}

// Indexing.

type listIndex struct {
	l lnode
	i inode
}

func (n listIndex) evalS(st *evalState) (string, bool) {
	l, ok := n.l.evalL(st)
	if !ok {
		return "", false
	}
	i, ok := n.i.evalI(st)
	if !ok || i < 0 || i >= int64(len(l)) {
		return "", false
	}
	return l[i], true
}

type mapIndex struct {
	id    varID
	key   snode
	canon string // canonical header spelling of a literal key
}

func (n mapIndex) evalL(st *evalState) ([]string, bool) {
	k, ok := n.key.evalS(st)
	if !ok {
		return nil, false
	}
	return st.mapLookup(n.id, k, n.canon)
}

// The package's functions.

type headerList struct {
	res  bool
	name snode
	lit  *litHeader
}

// litHeader is a literal header name, lower-cased and canonical.
type litHeader struct{ lower, canon string }

func newLitHeader(n snode) *litHeader {
	c, ok := n.(sconst)
	if !ok {
		return nil
	}
	lower := asciiLower(c.v)
	return &litHeader{lower, canonKey(lower)}
}

func (st *evalState) litHeaderLookup(res bool, l *litHeader) ([]string, bool) {
	if res {
		return lookupHeaderLower(st.resHeader, l.lower, l.canon, &st.resScan)
	}
	return lookupHeaderLower(st.reqHeader, l.lower, l.canon, &st.reqScan)
}

func (n headerList) evalL(st *evalState) ([]string, bool) {
	if n.lit != nil {
		v, _ := st.litHeaderLookup(n.res, n.lit)
		return v, true
	}
	s, ok := n.name.evalS(st)
	if !ok {
		return nil, false
	}
	return st.headerValues(n.res, s), true
}

type hasHeader struct {
	res  bool
	name snode
	lit  *litHeader
}

func (n hasHeader) evalB(st *evalState) tri {
	if n.lit != nil {
		_, found := st.litHeaderLookup(n.res, n.lit)
		return triOf(found)
	}
	s, ok := n.name.evalS(st)
	if !ok {
		return triErr
	}
	return triOf(st.hasHeader(n.res, s))
}

type queryList struct{ name snode }

func (n queryList) evalL(st *evalState) ([]string, bool) {
	s, ok := n.name.evalS(st)
	if !ok {
		return nil, false
	}
	return st.queryValues()[s], true
}

type hasQuery struct{ name snode }

func (n hasQuery) evalB(st *evalState) tri {
	s, ok := n.name.evalS(st)
	if !ok {
		return triErr
	}
	_, has := st.queryValues()[s]
	return triOf(has)
}

type cidrNode struct{ ip, cidr snode }

func (n cidrNode) evalB(st *evalState) tri {
	ip, ok := n.ip.evalS(st)
	if !ok {
		return triErr
	}
	c, ok := n.cidr.evalS(st)
	if !ok {
		return triErr
	}
	in, err := inCidrRange(ip, c)
	if err != nil {
		return triErr
	}
	return triOf(in)
}

// cidrConn is inCidrRange(conn.client_ip or conn.server_ip, literal): it
// reads the address without formatting it.
type cidrConn struct {
	server bool
	p      []netip.Prefix
}

func (n cidrConn) evalB(st *evalState) tri {
	a := st.clientAddr()
	if n.server {
		a = st.serverAddr()
	}
	if !a.IsValid() {
		return triErr // the CEL function fails on conn.client_ip == ""
	}
	for _, p := range n.p {
		if p.Contains(a) {
			return triTrue
		}
	}
	return triFalse
}

type cidrsNode struct {
	ip snode
	l  lnode
}

func (n cidrsNode) evalB(st *evalState) tri {
	ip, ok := n.ip.evalS(st)
	if !ok {
		return triErr
	}
	l, ok := n.l.evalL(st)
	if !ok {
		return triErr
	}
	in, err := inCidrRanges(ip, l)
	if err != nil {
		return triErr
	}
	return triOf(in)
}

// cidrsLit is inCidrRanges(ip, [literal, ...]) with the prefixes parsed at
// compile time.
type cidrsLit struct {
	ip snode
	p  []netip.Prefix
}

func (n cidrsLit) evalB(st *evalState) tri {
	ip, ok := n.ip.evalS(st)
	if !ok {
		return triErr
	}
	a, err := parseIP(ip)
	if err != nil {
		return triErr
	}
	for _, p := range n.p {
		if p.Contains(a) {
			return triTrue
		}
	}
	return triFalse
}

// lowerer converts a checked AST into native nodes.
type lowerer struct {
	e *Engine
}

// lowerBool returns the native form of a boolean expression, or nil.
func (l lowerer) lowerBool(a *ast.AST) bnode {
	b, _ := l.lower(a.Expr()).(bnode)
	return b
}

// lowerString returns the native form of a string expression, or nil.
func (l lowerer) lowerString(a *ast.AST) snode {
	s, _ := l.lower(a.Expr()).(snode)
	return s
}

func (l lowerer) lower(e ast.Expr) any {
	switch e.Kind() {
	case ast.LiteralKind:
		switch v := e.AsLiteral().(type) {
		case types.String:
			return sconst{string(v)}
		case types.Int:
			return iconst{int64(v)}
		case types.Bool:
			return bconst{bool(v)}
		}
		return nil
	case ast.IdentKind:
		v, ok := l.e.vars[e.AsIdent()]
		if !ok {
			return nil
		}
		switch v.kind {
		case kString:
			return svar{v.id}
		case kInt:
			return ivar{v.id}
		case kBool:
			return bvar{v.id}
		case kStringListMap:
			return mref{v.id}
		}
		return nil
	case ast.ListKind:
		return l.lowerListLiteral(e)
	case ast.CallKind:
		return l.lowerCall(e)
	}
	return nil
}

// listLit is a literal list of constants, before it is used.
type listLit struct {
	strs []string
	ints []int64
}

func (l lowerer) lowerListLiteral(e ast.Expr) any {
	list := e.AsList()
	if len(list.OptionalIndices()) > 0 {
		return nil
	}
	var out listLit
	for _, el := range list.Elements() {
		if el.Kind() != ast.LiteralKind {
			return nil
		}
		switch v := el.AsLiteral().(type) {
		case types.String:
			if out.ints != nil {
				return nil
			}
			out.strs = append(out.strs, string(v))
		case types.Int:
			if out.strs != nil {
				return nil
			}
			out.ints = append(out.ints, int64(v))
		default:
			return nil
		}
	}
	if out.strs == nil && out.ints == nil {
		out.strs = []string{} // the empty list
	}
	return out
}

func (l lowerer) lowerCall(e ast.Expr) any {
	call := e.AsCall()
	fn := call.FunctionName()
	var args []any
	if call.IsMemberFunction() {
		t := l.lower(call.Target())
		if t == nil {
			return nil
		}
		args = append(args, t)
	}
	for _, a := range call.Args() {
		n := l.lower(a)
		if n == nil {
			return nil
		}
		args = append(args, n)
	}
	switch fn {
	case operators.LogicalAnd, operators.LogicalOr:
		if len(args) != 2 {
			return nil
		}
		a, ok1 := args[0].(bnode)
		b, ok2 := args[1].(bnode)
		if !ok1 || !ok2 {
			return nil
		}
		if fn == operators.LogicalAnd {
			return andNode{a, b}
		}
		return orNode{a, b}
	case operators.LogicalNot:
		if a, ok := args[0].(bnode); ok && len(args) == 1 {
			return notNode{a}
		}
		return nil
	case operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals,
		operators.Greater, operators.GreaterEquals:
		return lowerCompare(fn, args)
	case overloads.StartsWith, overloads.EndsWith, overloads.Contains:
		return lowerStrPred(fn, args, call.IsMemberFunction())
	case overloads.Matches:
		if len(args) != 2 {
			return nil
		}
		s, ok := args[0].(snode)
		pat, isLit := args[1].(sconst)
		if !ok || !isLit {
			return nil
		}
		re, err := regexp.Compile(pat.v) // as cel-go does
		if err != nil {
			return nil
		}
		if v, ok := s.(svar); ok {
			return svarMatch{v.id, re}
		}
		return matchNode{s, re}
	case overloads.Size:
		if len(args) != 1 {
			return nil
		}
		switch a := args[0].(type) {
		case snode:
			return strSize{a}
		case lnode:
			return listSize{a}
		case listLit:
			return iconst{int64(len(a.strs) + len(a.ints))}
		}
		return nil
	case operators.In:
		return lowerIn(args)
	case operators.Index:
		if len(args) != 2 {
			return nil
		}
		switch c := args[0].(type) {
		case lnode:
			if i, ok := args[1].(inode); ok {
				return listIndex{c, i}
			}
		case mref:
			k, ok := args[1].(snode)
			if !ok {
				return nil
			}
			n := mapIndex{id: c.id, key: k}
			if lit, isLit := k.(sconst); isLit && c.id != vReqURLQueryParams {
				n.canon = canonKey(lit.v)
			}
			return n
		}
		return nil
	case fnGetReqHeader, fnGetResHeader:
		if s, ok := oneString(args); ok {
			return headerList{res: fn == fnGetResHeader, name: s, lit: newLitHeader(s)}
		}
	case fnHasReqHeader, fnHasResHeader:
		if s, ok := oneString(args); ok {
			return hasHeader{res: fn == fnHasResHeader, name: s, lit: newLitHeader(s)}
		}
	case fnGetQueryParam:
		if s, ok := oneString(args); ok {
			return queryList{s}
		}
	case fnHasQueryParam:
		if s, ok := oneString(args); ok {
			return hasQuery{s}
		}
	case fnInCidrRange:
		return lowerCidr(args)
	case fnInCidrRanges:
		return lowerCidrs(args)
	}
	return nil
}

func oneString(args []any) (snode, bool) {
	if len(args) != 1 {
		return nil, false
	}
	s, ok := args[0].(snode)
	return s, ok
}

func lowerCompare(fn string, args []any) any {
	if len(args) != 2 {
		return nil
	}
	op := map[string]cmpOp{
		operators.Equals: opEq, operators.NotEquals: opNe, operators.Less: opLt,
		operators.LessEquals: opLe, operators.Greater: opGt, operators.GreaterEquals: opGe,
	}[fn]
	switch a := args[0].(type) {
	case snode:
		b, ok := args[1].(snode)
		if !ok {
			return nil
		}
		if op == opEq || op == opNe {
			v, isVar := a.(svar)
			c, isConst := b.(sconst)
			if !isVar || !isConst {
				v, isVar = b.(svar)
				c, isConst = a.(sconst)
			}
			if isVar && isConst {
				return svarEq{id: v.id, c: c.v, neg: op == opNe}
			}
		}
		return scmp{a, b, op}
	case inode:
		if b, ok := args[1].(inode); ok {
			return icmp{a, b, op}
		}
	case bnode:
		if b, ok := args[1].(bnode); ok && (op == opEq || op == opNe) {
			return beq{a, b, op == opNe}
		}
	}
	return nil
}

func lowerStrPred(fn string, args []any, member bool) any {
	if len(args) != 2 || !member {
		return nil
	}
	a, ok1 := args[0].(snode)
	b, ok2 := args[1].(snode)
	if !ok1 || !ok2 {
		return nil
	}
	f := map[string]strFn{overloads.StartsWith: fnStartsWith, overloads.EndsWith: fnEndsWith, overloads.Contains: fnContains}[fn]
	if v, isVar := a.(svar); isVar {
		if c, isConst := b.(sconst); isConst {
			return svarPred{v.id, c.v, f}
		}
	}
	return strPred{a, b, f}
}

func lowerIn(args []any) any {
	if len(args) != 2 {
		return nil
	}
	switch c := args[1].(type) {
	case listLit:
		switch a := args[0].(type) {
		case snode:
			if c.ints != nil {
				return nil
			}
			n := inStrSet{a: a, set: c.strs}
			if len(c.strs) > 8 {
				n.m = make(map[string]struct{}, len(c.strs))
				for _, s := range c.strs {
					n.m[s] = struct{}{}
				}
			}
			return n
		case inode:
			if c.strs != nil && len(c.strs) > 0 {
				return nil
			}
			return inIntSet{a: a, set: c.ints}
		}
	case lnode:
		if a, ok := args[0].(snode); ok {
			return inList{a, c}
		}
	case mref:
		if a, ok := args[0].(snode); ok {
			return inMap{a, c.id}
		}
	}
	return nil
}

func lowerCidr(args []any) any {
	if len(args) != 2 {
		return nil
	}
	ip, ok1 := args[0].(snode)
	c, ok2 := args[1].(snode)
	if !ok1 || !ok2 {
		return nil
	}
	if v, isVar := ip.(svar); isVar && (v.id == vConnClientIP || v.id == vConnServerIP) {
		if lit, isLit := c.(sconst); isLit {
			if p, err := parseCIDR(lit.v); err == nil {
				return cidrConn{server: v.id == vConnServerIP, p: []netip.Prefix{p}}
			}
		}
	}
	return cidrNode{ip, c}
}

func lowerCidrs(args []any) any {
	if len(args) != 2 {
		return nil
	}
	ip, ok := args[0].(snode)
	if !ok {
		return nil
	}
	switch c := args[1].(type) {
	case listLit:
		if c.ints != nil {
			return nil
		}
		ps := make([]netip.Prefix, 0, len(c.strs))
		for _, s := range c.strs {
			p, err := parseCIDR(s)
			if err != nil {
				return nil // refused at compile time anyway
			}
			ps = append(ps, p)
		}
		if v, isVar := ip.(svar); isVar && (v.id == vConnClientIP || v.id == vConnServerIP) {
			return cidrConn{server: v.id == vConnServerIP, p: ps}
		}
		return cidrsLit{ip, ps}
	case lnode:
		return cidrsNode{ip, c}
	}
	return nil
}
