package policy

// The evaluation cost budget.
//
// Every evaluation (one call of Inbound, Outbound or Connect) has one
// budget, limits.MaxEvaluationCost, in CEL's cost units. The cel-go programs of a
// phase all charge one cost.Tracker that the evaluation state owns (each
// program runs in an execution frame carrying it), and the native
// evaluators charge the same amounts for the operations they perform, by
// the same formulas (the tests compare both on every expression): so the
// two paths agree on whether an expression fits in what is left. The
// tracker is configured with the CEL environment's cost models (see
// envTracker), so the string extensions are charged as estimated. The
// native evaluators charge costs that grow with the input (string
// comparisons, contains, regexes) before doing the work, and so does
// matches() on cel-go (see celregex.go); cel-go charges its other calls
// when they return, so the work done beyond the budget is at most one
// call's, on its input.

import (
	"errors"
	"strconv"
	"unicode/utf8"

	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
	"github.com/edgeplane/edgeplane/policy/limits"
)

// ErrCostLimit is the cause of the runtime error reported when an
// evaluation would exceed limits.MaxEvaluationCost: test for it with errors.Is on
// the [EvalError] a [Sink] receives. Evaluation then ends fail closed (see
// the package doc, section Runtime errors).
var ErrCostLimit = errors.New("the evaluation cost budget of " + strconv.Itoa(limits.MaxEvaluationCost) +
	" is exhausted (operation cancelled: actual cost limit exceeded)")

// charge adds c to the evaluation's cost. It returns false, and marks the
// budget exhausted, when the total would exceed limits.MaxEvaluationCost; the
// caller must then not do the work it charged for.
func (st *evalState) charge(c uint64) bool {
	if t := st.cost + c; t >= c && t <= limits.MaxEvaluationCost {
		st.cost = t
		return true
	}
	st.exhausted = true
	return false
}

// size is CEL's size of a string: its number of code points.
func size(s string) uint64 { return uint64(utf8.RuneCountInString(s)) }

// traversalCost is CEL's cost of reading n code points:
// ceil(n * cost.StringTraversalCostFactor).
func traversalCost(n uint64) uint64 { return ceilDiv(n, 10) }

// callCost is the cost of a call by CEL's standard model: the model's
// formula, but at least 1 (a call does at least a unit of work).
func callCost(c uint64) uint64 { return max(c, 1) }

// eqCost is CEL's cost of ==, != and the ordering of two strings:
// the traversal of the shorter one.
func eqCost(a, b string) uint64 {
	n := size(a)
	if m := size(b); m < n {
		n = m
	}
	return callCost(traversalCost(n))
}

// containsCost is CEL's cost of s.contains(sub): ceil(size(s) * size(sub) /
// 100).
func containsCost(s, sub string) uint64 {
	return callCost(ceilDiv(cost.SafeMultiply(size(s), size(sub)), 100))
}

// regexCost is the cost of matching a regular expression of prog RE2
// instructions against a string of n code points: the traversal of the
// string once per instruction, ceil((n+1) * prog / 10). (CEL's own model
// charges the pattern's length instead of its program size, which a short
// pattern such as (a{30}){30} escapes; Go's regexp does work in proportion
// to the program.)
func regexCost(n uint64, prog int) uint64 {
	if n >= 1<<32 || prog < 0 {
		return ^uint64(0) // beyond any budget; the product could overflow
	}
	return callCost(((n+1)*uint64(prog) + 9) / 10)
}

func ceilDiv(a, b uint64) uint64 {
	if a == ^uint64(0) {
		return a
	}
	return (a + b - 1) / b
}

// CallCost implements cost.ActualCostEstimator for the cel-go programs: a
// matches() call costs regexCost, with the program size of the document's
// compiled pattern. A pattern the document does not contain (one computed
// at run time) is charged as the largest program allowed, or its length if
// longer (compiling it costs that much). Every other call is left to CEL's
// standard model.
func (st *evalState) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	if hc, ok := st.helperCallCost(overloadID, args); ok {
		c := hc // allocated only here
		return &c
	}
	if overloadID != overloads.Matches && overloadID != overloads.MatchesString || len(args) != 2 {
		return nil
	}
	s, ok1 := args[0].(types.String)
	pat, ok2 := args[1].(types.String)
	if !ok1 || !ok2 {
		return nil
	}
	prog := dynamicRegexProg(uint64(len(pat)))
	if st.pol != nil {
		if p, ok := st.pol.regexProg[string(pat)]; ok {
			prog = p
		}
	}
	c := regexCost(size(string(s)), prog)
	return &c
}

// dynamicRegexProg is the program size charged for a pattern computed at
// run time, of n code points at most.
func dynamicRegexProg(n uint64) int {
	if n > limits.MaxRegexProgramSize {
		if n > 1<<30 {
			return 1 << 30
		}
		return int(n)
	}
	return limits.MaxRegexProgramSize
}

// isCELCostLimit reports whether err is how cel-go reports that a
// tracker's limit was reached.
func isCELCostLimit(err error) bool {
	var ec interpreter.EvalCancelledError
	return errors.As(err, &ec) && ec.Cause == interpreter.CostLimitExceeded
}

// Input sizes the compile-time cost estimate assumes, in CEL's size unit
// (code points, never more than bytes). Strings follow from the request
// bounds of package limits: the path and query of the request target are at most
// limits.MaxURLBytes, and req.url adds the scheme and a host name with its port;
// every other request string (method, host, user agent, version, header
// names and values, SNI) and, by assumption, response header values are at
// most limits.MaxRequestHeaderBytes. Counts are assumed maxima rather than bounds
// (a 32 KiB header block can hold thousands of tiny headers): CEL's model
// multiplies them by the largest element, so 128 headers or parameters of
// 16 values each, every one as long as the whole block, over-estimate any
// request within the bounds except for the per-element constant of a
// comprehension. Inputs beyond these sizes (a longer Host header, a path
// escaped again in req.url, thousands of headers) are caught by
// limits.MaxEvaluationCost.
const (
	estURLPartMax  = limits.MaxURLBytes       // req.url.path, req.url.query, query parameter names and values
	estURLMax      = limits.MaxURLBytes + 512 // req.url: also "https://" and a host name (at most 253 characters) with its port
	estStringMax   = limits.MaxRequestHeaderBytes
	estIPMax       = 45 // conn.client_ip, conn.server_ip: an IPv4-mapped IPv6 address in full
	estMapEntries  = 128
	estListEntries = 16
)
