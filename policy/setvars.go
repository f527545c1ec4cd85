package policy

import (
	"errors"
	"strconv"

	"cel.dev/cel-go/common/ast"
	celtypes "cel.dev/cel-go/common/types"

	"github.com/edgeplane/edgeplane/apierr"
)

// ActionSetVars is the set-vars action: it computes values once for later
// rules and templates to read as vars.<name>.
const ActionSetVars = "set-vars"

type setVarsConfig struct {
	Vars map[string]string `json:"vars"`
}

type setVarsAction struct {
	names  []string
	values []*Template
}

// validVarName reports whether s is an ASCII identifier of at most
// MaxVarNameLength bytes that CEL can select (vars.<name>).
func validVarName(s string) bool {
	if s == "" || len(s) > MaxVarNameLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return !celReserved[s]
}

// celReserved are CEL's reserved words, which cannot follow a '.'.
var celReserved = map[string]bool{
	"as": true, "break": true, "const": true, "continue": true, "else": true, "false": true, "for": true,
	"function": true, "if": true, "import": true, "in": true, "let": true, "loop": true, "package": true,
	"namespace": true, "null": true, "return": true, "true": true, "var": true, "void": true, "while": true,
}

func compileSetVars(c *CompileContext, config []byte) (Action, error) {
	var cfg setVarsConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	switch n := len(cfg.Vars); {
	case n == 0:
		vs.Add("config.vars", "is required: an object of variable names to templated values")
		return nil, vs.Err()
	case n > MaxVars:
		vs.Add("config.vars", "has %d entries; at most %d are allowed", n, MaxVars)
		return nil, vs.Err()
	}
	a := &setVarsAction{}
	cc := c.c
	for _, name := range sortedKeys(cfg.Vars) {
		f := headerField("config.vars", name)
		if !validVarName(name) {
			vs.Add(f, "invalid variable name %s: use up to %d letters, digits and _, not starting with a digit, and not a CEL reserved word",
				quoteTrunc(name), MaxVarNameLength)
			continue
		}
		a.names = append(a.names, name)
		a.values = append(a.values, cc.template(&vs, f, cfg.Vars[name], -1))
	}
	// The names become readable after this action: its own values see the
	// variables as they were before it.
	for _, name := range a.names {
		if !cc.setVars[name] && len(cc.setVars) >= MaxVars {
			vs.Add(headerField("config.vars", name), "the document sets more than %d distinct variables (MaxVars)", MaxVars)
			continue
		}
		cc.setVars[name] = true
	}
	return a, vs.Err()
}

var errVarTruncated = errors.New("the value is longer than " + strconv.Itoa(MaxVarBytes) + " bytes and was truncated")

// Run renders every value, then assigns them all.
func (a *setVarsAction) Run(r *RunContext) {
	vals := make([]string, len(a.values))
	for i, t := range a.values {
		v := r.Render(t)
		if len(v) > MaxVarBytes {
			v = truncateAt(v, MaxVarBytes)
			r.ReportError(errVarTruncated)
		}
		vals[i] = v
	}
	r.st.setVars(a.names, vals)
}

// checkVars refuses a read of vars.<name> (or vars['<name>']) that no
// earlier set-vars action sets, and notes reads of vars in outbound rules.
func (c *compiler) checkVars(e *ast.AST, at func(id int64, msg string)) {
	uses := false
	ast.PostOrderVisit(e.Expr(), ast.NewExprVisitor(func(x ast.Expr) {
		var name string
		switch x.Kind() {
		case ast.IdentKind:
			uses = uses || x.AsIdent() == "vars"
			return
		case ast.SelectKind:
			sel := x.AsSelect()
			if op := sel.Operand(); op.Kind() != ast.IdentKind || op.AsIdent() != "vars" {
				return
			}
			name = sel.FieldName()
		case ast.CallKind:
			call := x.AsCall()
			args := call.Args()
			if call.FunctionName() != "_[_]" || len(args) != 2 || args[0].Kind() != ast.IdentKind || args[0].AsIdent() != "vars" ||
				args[1].Kind() != ast.LiteralKind {
				return
			}
			s, ok := args[1].AsLiteral().(celtypes.String)
			if !ok {
				return
			}
			name = string(s)
		default:
			return
		}
		if !c.setVars[name] {
			at(x.ID(), "vars."+name+" is not set by a set-vars or jwt-validation action before this point of the document")
		}
	}))
	if uses && c.phase == Outbound {
		c.outReadsVars = true
	}
}
