package policy

import (
	"fmt"
	"regexp"

	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
	"github.com/edgeplane/edgeplane/policy/limits"
)

// matches() in the cel-go programs.
//
// The package plans matches() calls itself rather than leaving them to
// cel-go's regex optimizer and program size limit, so that a literal
// pattern is compiled once per document and shared with the native
// evaluator and the compile-time checks (cel-go's optimizer, its AST
// validator and its planner would each compile it again), and so that the
// call's cost is charged before the regex runs, not after.

// regexDecorator returns the cel-go decorator replacing matches() calls of
// one document's programs. It runs before cel-go's own decorators, which
// only act on interpreter.InterpretableCall nodes and so leave these alone.
func (c *compiler) regexDecorator() interpreter.InterpretableDecoratorV2 {
	return func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		call, ok := i.(interpreter.InterpretableCall)
		if !ok {
			return i, nil
		}
		ov := call.OverloadID()
		args := call.Args()
		if ov != overloads.Matches && ov != overloads.MatchesString || len(args) != 2 {
			return i, nil
		}
		n := &celMatch{id: call.ID(), call: costCall{call.Function(), ov}, s: args[0], pat: args[1]}
		if k, isConst := args[1].(interpreter.InterpretableConst); isConst {
			if p, ok := k.Value().(types.String); ok {
				r := c.regex(string(p))
				if r.err != nil {
					return nil, r.err
				}
				n.re = r.re
			}
		}
		return n, nil
	}
}

// costCall names a call for cost.Tracker.
type costCall struct{ function, overload string }

func (c costCall) Function() string   { return c.function }
func (c costCall) OverloadID() string { return c.overload }

// celMatch is a planned matches() call: re is the document's compiled
// pattern when it is a literal, nil when it is computed at run time.
type celMatch struct {
	id     int64
	call   costCall
	s, pat interpreter.InterpretableV2
	re     *regexp.Regexp
}

func (m *celMatch) ID() int64 { return m.id }

func (m *celMatch) Eval(a interpreter.Activation) ref.Val {
	return interpreter.EvalActivation(a, m.Exec)
}

// Exec evaluates the operands strictly (an error or unknown is the
// result), charges the call to the frame's cost tracker (which stops the
// evaluation when the budget is exceeded), and only then matches.
func (m *celMatch) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	sv := m.s.Exec(frame)
	if types.IsUnknownOrError(sv) {
		return sv
	}
	pv := m.pat.Exec(frame)
	if types.IsUnknownOrError(pv) {
		return pv
	}
	s, ok1 := sv.(types.String)
	pat, ok2 := pv.(types.String)
	if !ok1 || !ok2 {
		return types.NewErrWithNodeID(m.id, "no such overload: %s", m.call.function)
	}
	if costs := frame.CostTracker(); costs != nil {
		costs.EvalBinary(frame, m.id, m.call, sv, pv, types.False)
	}
	re := m.re
	if re == nil {
		sz, err := types.RegexProgramSize(string(pat))
		if err == nil && sz > limits.MaxRegexProgramSize {
			err = fmt.Errorf("regex program size %d exceeds limit of %d", sz, limits.MaxRegexProgramSize)
		}
		if err == nil {
			re, err = regexp.Compile(string(pat))
		}
		if err != nil {
			return types.NewErrWithNodeID(m.id, "%v", err)
		}
	}
	return types.Bool(re.MatchString(string(s)))
}
