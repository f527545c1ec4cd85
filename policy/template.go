package policy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/policy/limits"
)

// Template is a compiled templated config string: literal text with ${expr}
// parts. Each expression is CEL, sees the same variables as the rule's
// expressions and must produce a string, number, boolean, timestamp,
// duration or bytes value, which is rendered as CEL's string() conversion
// does. There is no escape for a literal "${". In the to field of redirect
// and url-rewrite, the literal text may also refer to the from regex's
// capture groups as $1 to $99, and $$ is a literal $.
type Template struct {
	field string // JSON path relative to the action, e.g. "config.body"
	src   string
	parts []tmplPart
}

type tmplPart struct {
	lit   string
	group int // > 0: a capture group reference
	expr  *tmplExpr
}

type tmplExpr struct {
	offset int // byte offset of "${" in the source
	native snode
	prog   cel.Program
}

// String returns the template's source text.
func (t *Template) String() string { return t.src }

// IsLiteral reports whether the template has no ${...} part or capture
// group reference, so that it always renders as its source text.
func (t *Template) IsLiteral() bool {
	return len(t.parts) == 0 || len(t.parts) == 1 && t.parts[0].expr == nil && t.parts[0].group == 0
}

// template compiles s. groups is the number of capture groups the literal
// text may refer to, or -1 when $ is not special. Problems are added to vs
// with field.
func (c *compiler) template(vs *apierr.Violations, field string, s string, groups int) *Template {
	t := &Template{field: field, src: s}
	if len(s) > limits.MaxTemplateOutput {
		vs.Add(field, "is %d bytes; at most %d are allowed", len(s), limits.MaxTemplateOutput)
		return t
	}
	nexpr := 0
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "${")
		if j < 0 {
			t.addLiteral(vs, field, s[i:], groups)
			break
		}
		t.addLiteral(vs, field, s[i:i+j], groups)
		start := i + j
		end, err := exprEnd(s, start+2)
		if err != nil {
			vs.Add(field, "template ${ at byte %d: %s", start, err.Error())
			return t
		}
		nexpr++
		if nexpr > limits.MaxTemplateExpressions {
			vs.Add(field, "has more than %d ${...} expressions", limits.MaxTemplateExpressions)
			return t
		}
		src := s[start+2 : end]
		x, msgs := c.checkExpr(src, templateType)
		for _, m := range msgs {
			vs.Add(field, "template ${%s} at byte %d: %s", truncate(src, 40), start, m)
		}
		if x != nil {
			prog, err := c.program(x)
			if err != nil {
				vs.Add(field, "template ${%s} at byte %d: %s", truncate(src, 40), start, err.Error())
			} else {
				var native snode
				if x.ast.OutputType().IsExactType(cel.StringType) {
					native = lowerer{c, x.ast.NativeRep()}.lowerString()
				}
				t.parts = append(t.parts, tmplPart{expr: &tmplExpr{offset: start, native: native, prog: prog}})
			}
		}
		i = end + 1
	}
	return t
}

func templateType(t *cel.Type) string {
	for _, ok := range []*cel.Type{cel.StringType, cel.IntType, cel.UintType, cel.DoubleType, cel.BoolType,
		cel.TimestampType, cel.DurationType, cel.BytesType} {
		if t.IsExactType(ok) {
			return ""
		}
	}
	return "a template expression must give a string, number, boolean, timestamp, duration or bytes, not " + cel.FormatCELType(t)
}

// addLiteral appends literal text, splitting out $N group references when
// groups >= 0.
func (t *Template) addLiteral(vs *apierr.Violations, field, s string, groups int) {
	if s == "" {
		return
	}
	if groups < 0 {
		t.parts = append(t.parts, tmplPart{lit: s})
		return
	}
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			t.parts = append(t.parts, tmplPart{lit: b.String()})
			b.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next >= '0' && next <= '9':
			k := i + 1
			for k < len(s) && k < i+3 && s[k] >= '0' && s[k] <= '9' {
				k++
			}
			n, _ := strconv.Atoi(s[i+1 : k])
			switch {
			case n == 0:
				vs.Add(field, "$0 is not allowed; capture groups are numbered from $1")
			case n > groups:
				vs.Add(field, "$%d refers to capture group %d, but the from expression has %d", n, n, groups)
			}
			flush()
			t.parts = append(t.parts, tmplPart{group: n})
			i = k - 1
		default:
			b.WriteByte('$')
		}
	}
	flush()
}

// exprEnd finds the '}' closing a ${ whose expression starts at i, skipping
// over braces and string literals inside the expression.
func exprEnd(s string, i int) (int, error) {
	start := i
	depth := 0
	for i < len(s) {
		switch c := s[i]; c {
		case '{':
			depth++
		case '}':
			if depth == 0 {
				if strings.TrimSpace(s[start:i]) == "" {
					return 0, errors.New("empty expression")
				}
				return i, nil
			}
			depth--
		case '"', '\'':
			q := string(c)
			if strings.HasPrefix(s[i:], q+q+q) {
				k := strings.Index(s[i+3:], q+q+q)
				if k < 0 {
					return 0, errors.New("unterminated string literal")
				}
				i += 3 + k + 3
				continue
			}
			k := i + 1
			for k < len(s) && s[k] != c {
				if s[k] == '\\' {
					k++
				}
				k++
			}
			if k >= len(s) {
				return 0, errors.New("unterminated string literal")
			}
			i = k
		}
		i++
	}
	return 0, errors.New("unterminated ${: no closing }")
}

// truncateAt cuts s to at most n bytes at a UTF-8 boundary.
func truncateAt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// truncate is truncateAt with "..." after a text it cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return truncateAt(s, n) + "..."
}

var errTruncated = fmt.Errorf("output exceeds %d bytes and was truncated", limits.MaxTemplateOutput)

// render renders t for the running action a.
func (st *evalState) render(t *Template, a *compiledAction) string {
	return st.renderGroups(t, a, "", nil)
}

// renderGroups renders t; subject and groups (as FindStringSubmatchIndex
// returns) resolve $N references.
func (st *evalState) renderGroups(t *Template, a *compiledAction, subject string, groups []int) string {
	if len(t.parts) == 0 {
		return ""
	}
	if len(t.parts) == 1 && t.parts[0].expr == nil && t.parts[0].group == 0 {
		return t.parts[0].lit
	}
	if len(t.parts) == 1 && t.parts[0].expr != nil {
		s := st.evalTemplateExpr(t, t.parts[0].expr, a)
		if len(s) > limits.MaxTemplateOutput {
			s = truncateAt(s, limits.MaxTemplateOutput)
			st.report(a.loc+"."+t.field, a.rule, errTruncated)
		}
		return s
	}
	var b strings.Builder
	truncated := false
	add := func(s string) {
		if truncated {
			return
		}
		if b.Len()+len(s) > limits.MaxTemplateOutput {
			n := limits.MaxTemplateOutput - b.Len()
			for n > 0 && !utf8.RuneStart(s[n]) {
				n--
			}
			b.WriteString(s[:n])
			truncated = true
			return
		}
		b.WriteString(s)
	}
	for i := range t.parts {
		p := &t.parts[i]
		switch {
		case p.expr != nil:
			add(st.evalTemplateExpr(t, p.expr, a))
		case p.group > 0:
			if 2*p.group+1 < len(groups) && groups[2*p.group] >= 0 {
				add(subject[groups[2*p.group]:groups[2*p.group+1]])
			}
		default:
			add(p.lit)
		}
	}
	if truncated {
		st.report(a.loc+"."+t.field, a.rule, errTruncated)
	}
	return b.String()
}

func (st *evalState) evalTemplateExpr(t *Template, x *tmplExpr, a *compiledAction) string {
	if x.native != nil {
		start := st.cost
		st.nerr = false
		s, ok := x.native.evalS(st)
		if st.cost > limits.MaxEvaluationCost {
			st.exhausted = true
		}
		switch {
		case st.exhausted && !st.nerr:
			st.report(a.loc+"."+t.field, a.rule, fmt.Errorf("template expression at byte %d: %w", x.offset, ErrCostLimit))
			return ""
		case ok && !st.nerr:
			return s
		}
		st.cost, st.exhausted = start, false
	}
	v, err := st.evalCEL(x.prog)
	if err == nil {
		var s string
		s, err = valString(v)
		if err == nil {
			return s
		}
	}
	st.report(a.loc+"."+t.field, a.rule, fmt.Errorf("template expression at byte %d: %w", x.offset, err))
	return ""
}

// valString converts a scalar CEL value as CEL's string() does.
func valString(v ref.Val) (string, error) {
	if s, ok := v.(types.String); ok {
		return string(s), nil
	}
	sv := v.ConvertToType(types.StringType)
	if types.IsError(sv) {
		return "", sv.(*types.Err)
	}
	s, ok := sv.(types.String)
	if !ok {
		return "", errors.New("cannot convert the value to a string")
	}
	return string(s), nil
}

// stringExpr compiles a string-typed CEL expression (a rate-limit bucket
// key element) with the same checks and limits as a rule's expressions. It
// returns nil and the problems, or nil and none when the document went
// over its budget (that was reported).
func (c *compiler) stringExpr(src string) (*tmplExpr, []string) {
	x, msgs := c.checkExpr(src, func(t *cel.Type) string {
		if t.IsExactType(cel.StringType) {
			return ""
		}
		return "the expression must give a string, got " + cel.FormatCELType(t)
	})
	if x == nil {
		return nil, msgs
	}
	prog, err := c.program(x)
	if err != nil {
		return nil, []string{err.Error()}
	}
	return &tmplExpr{native: lowerer{c, x.ast.NativeRep()}.lowerString(), prog: prog}, nil
}

// evalStringExpr evaluates a string-typed expression of stringExpr: on
// the native path when it has one and it succeeds, else with cel-go. A
// nil x (never in a compiled Policy) gives "".
func (st *evalState) evalStringExpr(x *tmplExpr) (string, error) {
	if x == nil {
		return "", nil
	}
	if x.native != nil {
		start := st.cost
		st.nerr = false
		s, ok := x.native.evalS(st)
		if st.cost > limits.MaxEvaluationCost {
			st.exhausted = true
		}
		switch {
		case st.exhausted && !st.nerr:
			return "", ErrCostLimit
		case ok && !st.nerr:
			return s, nil
		}
		st.cost, st.exhausted = start, false
	}
	v, err := st.evalCEL(x.prog)
	if err != nil {
		return "", err
	}
	s, ok := v.(types.String)
	if !ok {
		return "", errors.New("the expression did not give a string")
	}
	return string(s), nil
}
