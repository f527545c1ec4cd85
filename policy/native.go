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
// true || error is true). When an error happens anywhere in a native
// evaluation (even one absorbed), its cost is forgotten and the CEL program
// is run instead, whose result, message and cost are used: so the native
// path only ever has to be exact for evaluations without errors.
//
// Every node charges the evaluation's cost budget what cel-go's interpreter
// charges for the same operation (1 per variable, index or ordinary call,
// the traversal formulas of CEL's standard model for string comparisons and
// contains, regexCost for matches), before doing work that grows with its
// input: a node that would exceed the budget returns an error without
// doing it (st.exhausted tells the caller). Tests compare the result and
// the cost of both paths on every expression of the test tables and in the
// fuzz test.
//
// Lowering is decided by the overload IDs the type checker chose (the
// checked AST's reference map), never by function names, so an overload or
// extension library added to the environment is never lowered by mistake.

import (
	"net/netip"
	"regexp"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/common/ast"
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

// failed records an error met by a native evaluation, unless it is the
// budget's: the evaluation then falls back to CEL.
func (st *evalState) failed() tri {
	if !st.exhausted {
		st.nerr = true
	}
	return triErr
}

// Leaves. A constant costs nothing; a variable, as an attribute, 1.

type bconst struct{ v bool }

func (n bconst) evalB(*evalState) tri { return triOf(n.v) }

type sconst struct{ v string }

func (n sconst) evalS(*evalState) (string, bool) { return n.v, true }

type iconst struct{ v int64 }

func (n iconst) evalI(*evalState) (int64, bool) { return n.v, true }

type svar struct{ id varID }

func (n svar) evalS(st *evalState) (string, bool) {
	st.cost++
	return st.strVar(n.id), true
}

type ivar struct{ id varID }

func (n ivar) evalI(st *evalState) (int64, bool) {
	st.cost++
	return st.intVar(n.id), true
}

type bvar struct{ id varID }

func (n bvar) evalB(st *evalState) tri {
	st.cost++
	return triOf(st.boolVar(n.id))
}

// Logic: && and || cost nothing themselves, ! costs 1.

type andNode struct{ a, b bnode }

func (n andNode) evalB(st *evalState) tri {
	l := n.a.evalB(st)
	if l == triFalse {
		return triFalse
	}
	if st.exhausted {
		return triErr
	}
	r := n.b.evalB(st)
	if r == triFalse {
		return triFalse
	}
	if l == triErr || r == triErr {
		return st.failed()
	}
	return triTrue
}

type orNode struct{ a, b bnode }

func (n orNode) evalB(st *evalState) tri {
	l := n.a.evalB(st)
	if l == triTrue {
		return triTrue
	}
	if st.exhausted {
		return triErr
	}
	r := n.b.evalB(st)
	if r == triTrue {
		return triTrue
	}
	if l == triErr || r == triErr {
		return st.failed()
	}
	return triFalse
}

type notNode struct{ a bnode }

func (n notNode) evalB(st *evalState) tri {
	switch n.a.evalB(st) {
	case triTrue:
		st.cost++
		return triFalse
	case triFalse:
		st.cost++
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
		return st.failed()
	}
	r, ok := n.b.evalS(st)
	if !ok {
		return st.failed()
	}
	if !st.charge(eqCost(l, r)) {
		return triErr
	}
	return triOf(cmpResult(n.op, strings.Compare(l, r)))
}

// svarEq is the common "variable == literal" shape: the variable costs 1,
// the comparison the traversal of the shorter string, at most the
// literal's traversal cost (so that a long variable is not counted). For a
// literal of at most 10 code points that is always 1 (the least a call
// costs), known at compile time: cost is then 2, else 0.
type svarEq struct {
	id   varID
	c    string
	n    uint64 // size(c)
	cost uint64
	neg  bool
}

func newSvarEq(id varID, c string, neg bool) *svarEq {
	n := &svarEq{id: id, c: c, n: size(c), neg: neg}
	if n.n <= 10 {
		n.cost = 2
	}
	return n
}

func (n *svarEq) evalB(st *evalState) tri {
	v := st.strVar(n.id)
	if n.cost != 0 {
		st.cost += n.cost
	} else {
		st.cost += 1 + callCost(traversalCost(sizeUpTo(v, n.n)))
	}
	return triOf((v == n.c) != n.neg)
}

// sizeUpTo returns min(size(s), limit) without counting past limit.
func sizeUpTo(s string, limit uint64) uint64 {
	if uint64(len(s)) <= limit {
		return size(s)
	}
	var n uint64
	for range s {
		if n == limit {
			break
		}
		n++
	}
	return n
}

type icmp struct {
	a, b inode
	op   cmpOp
}

func (n icmp) evalB(st *evalState) tri {
	l, ok := n.a.evalI(st)
	if !ok {
		return st.failed()
	}
	r, ok := n.b.evalI(st)
	if !ok {
		return st.failed()
	}
	st.cost++
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
		return st.failed()
	}
	r := n.b.evalB(st)
	if r == triErr {
		return st.failed()
	}
	st.cost++
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

// strFnCost is CEL's cost of s.startsWith(arg) and s.endsWith(arg) (the
// traversal of arg) and of s.contains(arg) (the product of both sizes).
func strFnCost(f strFn, s, arg string) uint64 {
	if f == fnContains {
		return containsCost(s, arg)
	}
	return callCost(traversalCost(size(arg)))
}

type strPred struct {
	a, b snode
	f    strFn
}

func (n strPred) evalB(st *evalState) tri {
	s, ok := n.a.evalS(st)
	if !ok {
		return st.failed()
	}
	arg, ok := n.b.evalS(st)
	if !ok {
		return st.failed()
	}
	if !st.charge(strFnCost(n.f, s, arg)) {
		return triErr
	}
	return triOf(applyStrFn(n.f, s, arg))
}

// svarPred is "variable.startsWith(literal)" and friends; cost is the cost
// of startsWith and endsWith, fixed by the literal.
type svarPred struct {
	id   varID
	c    string
	f    strFn
	cost uint64
}

func (n *svarPred) evalB(st *evalState) tri {
	s := st.strVar(n.id)
	c := n.cost
	if n.f == fnContains {
		c = containsCost(s, n.c)
	}
	if !st.charge(1 + c) {
		return triErr
	}
	return triOf(applyStrFn(n.f, s, n.c))
}

type matchNode struct {
	a    snode
	re   *regexp.Regexp
	prog int
}

func (n matchNode) evalB(st *evalState) tri {
	s, ok := n.a.evalS(st)
	if !ok {
		return st.failed()
	}
	if !st.charge(regexCost(size(s), n.prog)) {
		return triErr
	}
	return triOf(n.re.MatchString(s))
}

type svarMatch struct {
	id   varID
	re   *regexp.Regexp
	prog int
}

func (n *svarMatch) evalB(st *evalState) tri {
	s := st.strVar(n.id)
	if !st.charge(1 + regexCost(size(s), n.prog)) {
		return triErr
	}
	return triOf(n.re.MatchString(s))
}

type strSize struct{ a snode }

func (n strSize) evalI(st *evalState) (int64, bool) {
	s, ok := n.a.evalS(st)
	if !ok {
		return 0, false
	}
	st.cost++
	return int64(utf8.RuneCountInString(s)), true
}

type listSize struct{ a lnode }

func (n listSize) evalI(st *evalState) (int64, bool) {
	l, ok := n.a.evalL(st)
	if !ok {
		return 0, false
	}
	st.cost++
	return int64(len(l)), true
}

// Membership. "in" a literal list is a set lookup in cel-go's optimized
// program and costs nothing itself; "in" a list costs the list's length,
// "in" a map 1.

type inStrSet struct {
	a   snode
	set []string
	m   map[string]struct{} // for long lists
}

func (n *inStrSet) evalB(st *evalState) tri {
	s, ok := n.a.evalS(st)
	if !ok {
		return st.failed()
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
		return st.failed()
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
		return st.failed()
	}
	l, ok := n.l.evalL(st)
	if !ok {
		return st.failed()
	}
	if !st.charge(callCost(uint64(len(l)))) {
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
		return st.failed()
	}
	st.cost += 2 // the map variable and the call
	_, found := st.mapLookup(n.id, s, "")
	return triOf(found)
}

// Indexing: cel-go plans an index of a variable as an attribute with
// qualifiers (1 for the attribute, 1 per qualifier), and an index of
// another value as an attribute of that value.

type listIndex struct {
	l    lnode
	i    inode
	attr bool // l is not an attribute itself: the index starts one
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
	st.cost++
	if n.attr {
		st.cost++
	}
	return l[i], true
}

type mapIndex struct {
	id    varID
	key   snode
	canon string // canonical header spelling of a literal key
	qual  bool   // the index of another index: the attribute is not charged
}

func (n mapIndex) evalL(st *evalState) ([]string, bool) {
	k, ok := n.key.evalS(st)
	if !ok {
		return nil, false
	}
	st.cost += 2
	if n.qual {
		st.cost--
	}
	return st.mapLookup(n.id, k, n.canon)
}

// qsvar and qivar are variables used as an index: cel-go evaluates them as
// qualifiers of the indexed attribute, which are not charged as attributes.
type qsvar struct{ id varID }

func (n qsvar) evalS(st *evalState) (string, bool) { return st.strVar(n.id), true }

type qivar struct{ id varID }

func (n qivar) evalI(st *evalState) (int64, bool) { return st.intVar(n.id), true }

// asQualifier returns the form of an index operand that cel-go evaluates
// as a qualifier: a variable or an index chain without its attribute's
// cost.
func asQualifier(n any) any {
	switch v := n.(type) {
	case svar:
		return qsvar(v)
	case ivar:
		return qivar(v)
	case listIndex:
		if m, ok := v.l.(mapIndex); ok && !v.attr {
			m.qual = true
			v.l = m
		} else {
			v.attr = false
		}
		return v
	}
	return n
}

// The package's functions cost 1 per call.

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
		st.cost++
		v, _ := st.litHeaderLookup(n.res, n.lit)
		return v, true
	}
	s, ok := n.name.evalS(st)
	if !ok {
		return nil, false
	}
	st.cost++
	return st.headerValues(n.res, s), true
}

type hasHeader struct {
	res  bool
	name snode
	lit  *litHeader
}

func (n hasHeader) evalB(st *evalState) tri {
	if n.lit != nil {
		st.cost++
		_, found := st.litHeaderLookup(n.res, n.lit)
		return triOf(found)
	}
	s, ok := n.name.evalS(st)
	if !ok {
		return st.failed()
	}
	st.cost++
	return triOf(st.hasHeader(n.res, s))
}

type queryList struct{ name snode }

func (n queryList) evalL(st *evalState) ([]string, bool) {
	s, ok := n.name.evalS(st)
	if !ok {
		return nil, false
	}
	st.cost++
	return st.queryValues()[s], true
}

type hasQuery struct{ name snode }

func (n hasQuery) evalB(st *evalState) tri {
	s, ok := n.name.evalS(st)
	if !ok {
		return st.failed()
	}
	st.cost++
	_, has := st.queryValues()[s]
	return triOf(has)
}

type cidrNode struct{ ip, cidr snode }

func (n cidrNode) evalB(st *evalState) tri {
	ip, ok := n.ip.evalS(st)
	if !ok {
		return st.failed()
	}
	c, ok := n.cidr.evalS(st)
	if !ok {
		return st.failed()
	}
	in, err := inCidrRange(ip, c)
	if err != nil {
		return st.failed()
	}
	st.cost++
	return triOf(in)
}

// cidrConn is inCidrRange(conn.client_ip or conn.server_ip, literal) and
// inCidrRanges of a literal list: it reads the address without formatting
// it. It costs the variable and the call.
type cidrConn struct {
	server bool
	p      []netip.Prefix
}

func (n *cidrConn) evalB(st *evalState) tri {
	a := st.clientAddr()
	if n.server {
		a = st.serverAddr()
	}
	if !a.IsValid() {
		return st.failed() // the CEL function fails on conn.client_ip == ""
	}
	st.cost += 2
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
		return st.failed()
	}
	l, ok := n.l.evalL(st)
	if !ok {
		return st.failed()
	}
	in, err := inCidrRanges(ip, l)
	if err != nil {
		return st.failed()
	}
	st.cost++
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
		return st.failed()
	}
	a, err := parseIP(ip)
	if err != nil {
		return st.failed()
	}
	st.cost++
	for _, p := range n.p {
		if p.Contains(a) {
			return triTrue
		}
	}
	return triFalse
}

// lowerer converts a checked AST into native nodes.
type lowerer struct {
	c *compiler
	a *ast.AST
}

// lowerBool returns the native form of a boolean expression, or nil.
func (l lowerer) lowerBool() bnode {
	b, _ := l.lower(l.a.Expr()).(bnode)
	return b
}

// lowerString returns the native form of a string expression, or nil.
func (l lowerer) lowerString() snode {
	s, _ := l.lower(l.a.Expr()).(snode)
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
		v, ok := l.c.e.vars[e.AsIdent()]
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

// The overload IDs of the package's functions, as declared in newEnv.
const (
	ovGetReqHeader  = "getReqHeader_string"
	ovGetResHeader  = "getResHeader_string"
	ovHasReqHeader  = "hasReqHeader_string"
	ovHasResHeader  = "hasResHeader_string"
	ovGetQueryParam = "getQueryParam_string"
	ovHasQueryParam = "hasQueryParam_string"
	ovInCidrRange   = "inCidrRange_string_string"
	ovInCidrRanges  = "inCidrRanges_string_list"
)

// cmpOverloads maps the comparison overloads that are lowered to their
// operator; equality of strings, ints and bools share CEL's "equals".
var cmpOverloads = map[string]cmpOp{
	overloads.Equals: opEq, overloads.NotEquals: opNe,
	overloads.LessString: opLt, overloads.LessEqualsString: opLe,
	overloads.GreaterString: opGt, overloads.GreaterEqualsString: opGe,
	overloads.LessInt64: opLt, overloads.LessEqualsInt64: opLe,
	overloads.GreaterInt64: opGt, overloads.GreaterEqualsInt64: opGe,
}

func (l lowerer) lowerCall(e ast.Expr) any {
	call := e.AsCall()
	ids := l.a.GetOverloadIDs(e.ID())
	if len(ids) != 1 {
		return nil // unresolved or ambiguous: only CEL decides at run time
	}
	ov := ids[0]
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
	switch ov {
	case overloads.LogicalAnd, overloads.LogicalOr:
		if len(args) != 2 {
			return nil
		}
		a, ok1 := args[0].(bnode)
		b, ok2 := args[1].(bnode)
		if !ok1 || !ok2 {
			return nil
		}
		if ov == overloads.LogicalAnd {
			return andNode{a, b}
		}
		return orNode{a, b}
	case overloads.LogicalNot:
		if a, ok := args[0].(bnode); ok && len(args) == 1 {
			return notNode{a}
		}
		return nil
	case overloads.StartsWithString, overloads.EndsWithString, overloads.ContainsString:
		return lowerStrPred(ov, args, call.IsMemberFunction())
	case overloads.Matches, overloads.MatchesString:
		if len(args) != 2 || (ov == overloads.MatchesString) != call.IsMemberFunction() {
			return nil
		}
		s, ok := args[0].(snode)
		pat, isLit := args[1].(sconst)
		if !ok || !isLit {
			return nil
		}
		r := l.c.regex(pat.v)
		if r.err != nil || r.re == nil {
			return nil
		}
		if v, ok := s.(svar); ok {
			return &svarMatch{v.id, r.re, r.prog}
		}
		return matchNode{s, r.re, r.prog}
	case overloads.SizeString, overloads.SizeStringInst:
		if s, ok := oneString(args); ok {
			return strSize{s}
		}
		return nil
	case overloads.SizeList, overloads.SizeListInst:
		if len(args) != 1 {
			return nil
		}
		switch a := args[0].(type) {
		case lnode:
			return listSize{a}
		case listLit:
			return sizeOfLiteral{int64(len(a.strs) + len(a.ints))}
		}
		return nil
	case overloads.InList, overloads.InMap:
		return lowerIn(ov, args)
	case overloads.IndexList:
		if len(args) != 2 {
			return nil
		}
		c, ok1 := args[0].(lnode)
		i, ok2 := asQualifier(args[1]).(inode)
		if !ok1 || !ok2 {
			return nil
		}
		_, chained := c.(mapIndex)
		return listIndex{l: c, i: i, attr: !chained}
	case overloads.IndexMap:
		if len(args) != 2 {
			return nil
		}
		c, ok1 := args[0].(mref)
		k, ok2 := asQualifier(args[1]).(snode)
		if !ok1 || !ok2 {
			return nil
		}
		n := mapIndex{id: c.id, key: k}
		if lit, isLit := k.(sconst); isLit && (c.id == vReqHeaders || c.id == vResHeaders) {
			n.canon = canonKey(lit.v)
		}
		return n
	case ovGetReqHeader, ovGetResHeader:
		if s, ok := oneString(args); ok {
			return headerList{res: ov == ovGetResHeader, name: s, lit: newLitHeader(s)}
		}
	case ovHasReqHeader, ovHasResHeader:
		if s, ok := oneString(args); ok {
			return hasHeader{res: ov == ovHasResHeader, name: s, lit: newLitHeader(s)}
		}
	case ovGetQueryParam:
		if s, ok := oneString(args); ok {
			return queryList{s}
		}
	case ovHasQueryParam:
		if s, ok := oneString(args); ok {
			return hasQuery{s}
		}
	case ovGetReqCookie:
		if s, ok := oneString(args); ok {
			return cookieList{s}
		}
	case ovHasReqCookie:
		if s, ok := oneString(args); ok {
			return hasCookieNode{s}
		}
	case ovSHA256, ovSHA1, ovMD5:
		if s, ok := oneString(args); ok {
			return hashNode{ov, s}
		}
	case ovInCidrRange:
		return lowerCidr(args)
	case ovInCidrRanges:
		return lowerCidrs(args)
	default:
		if op, ok := cmpOverloads[ov]; ok {
			return lowerCompare(ov, op, args)
		}
	}
	return nil
}

// sizeOfLiteral is size() of a literal list: a constant, plus the call's
// cost.
type sizeOfLiteral struct{ n int64 }

func (n sizeOfLiteral) evalI(st *evalState) (int64, bool) {
	st.cost++
	return n.n, true
}

func oneString(args []any) (snode, bool) {
	if len(args) != 1 {
		return nil, false
	}
	s, ok := args[0].(snode)
	return s, ok
}

func lowerCompare(ov string, op cmpOp, args []any) any {
	if len(args) != 2 {
		return nil
	}
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
				return newSvarEq(v.id, c.v, op == opNe)
			}
		}
		return scmp{a, b, op}
	case inode:
		if b, ok := args[1].(inode); ok {
			return icmp{a, b, op}
		}
	case bnode:
		if b, ok := args[1].(bnode); ok && (ov == overloads.Equals || ov == overloads.NotEquals) {
			return beq{a, b, op == opNe}
		}
	}
	return nil
}

func lowerStrPred(ov string, args []any, member bool) any {
	if len(args) != 2 || !member {
		return nil
	}
	a, ok1 := args[0].(snode)
	b, ok2 := args[1].(snode)
	if !ok1 || !ok2 {
		return nil
	}
	f := map[string]strFn{overloads.StartsWithString: fnStartsWith, overloads.EndsWithString: fnEndsWith, overloads.ContainsString: fnContains}[ov]
	if v, isVar := a.(svar); isVar {
		if c, isConst := b.(sconst); isConst {
			return &svarPred{id: v.id, c: c.v, f: f, cost: strFnCost(f, "", c.v)}
		}
	}
	return strPred{a, b, f}
}

func lowerIn(ov string, args []any) any {
	if len(args) != 2 {
		return nil
	}
	switch c := args[1].(type) {
	case listLit:
		if ov != overloads.InList {
			return nil
		}
		if len(c.strs)+len(c.ints) == 0 {
			return bconst{false} // cel-go's optimizer folds it, operand unevaluated
		}
		switch a := args[0].(type) {
		case snode:
			if c.ints != nil {
				return nil
			}
			n := &inStrSet{a: a, set: c.strs}
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
		if a, ok := args[0].(snode); ok && ov == overloads.InList {
			return inList{a, c}
		}
	case mref:
		if a, ok := args[0].(snode); ok && ov == overloads.InMap {
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
				return &cidrConn{server: v.id == vConnServerIP, p: []netip.Prefix{p}}
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
			return &cidrConn{server: v.id == vConnServerIP, p: ps}
		}
		return cidrsLit{ip, ps}
	case lnode:
		return cidrsNode{ip, c}
	}
	return nil
}
