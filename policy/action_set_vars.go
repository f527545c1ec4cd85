package policy

import (
	"errors"
	"strconv"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/policy/limits"
)

// ActionSetVars is the set-vars action: it computes values once for later
// rules and templates to read as vars.<name>.
const ActionSetVars = "set-vars"

// setVarsType is the set-vars action's registry entry.
var setVarsType = builtinType{name: ActionSetVars, compile: compileSetVars}

type setVarsConfig struct {
	Vars map[string]string `json:"vars"`
}

type setVarsAction struct {
	names  []string
	values []*Template
}

// validVarName reports whether s is an ASCII identifier of at most
// limits.MaxVarNameLength bytes that CEL can select (vars.<name>).
func validVarName(s string) bool {
	if s == "" || len(s) > limits.MaxVarNameLength {
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
	case n > limits.MaxVars:
		vs.Add("config.vars", "has %d entries; at most %d are allowed", n, limits.MaxVars)
		return nil, vs.Err()
	}
	a := &setVarsAction{}
	cc := c.c
	for _, name := range sortedKeys(cfg.Vars) {
		f := headerField("config.vars", name)
		if !validVarName(name) {
			vs.Add(f, "invalid variable name %s: use up to %d letters, digits and _, not starting with a digit, and not a CEL reserved word",
				quoteTrunc(name), limits.MaxVarNameLength)
			continue
		}
		a.names = append(a.names, name)
		a.values = append(a.values, cc.template(&vs, f, cfg.Vars[name], -1))
	}
	// The names become readable after this action: its own values see the
	// variables as they were before it.
	for _, name := range a.names {
		if !cc.setVars[name] && len(cc.setVars) >= limits.MaxVars {
			vs.Add(headerField("config.vars", name), "the document sets more than %d distinct variables (MaxVars)", limits.MaxVars)
			continue
		}
		cc.setVars[name] = true
	}
	return a, vs.Err()
}

var errVarTruncated = errors.New("the value is longer than " + strconv.Itoa(limits.MaxVarBytes) + " bytes and was truncated")

// Run renders every value, then assigns them all.
func (a *setVarsAction) Run(r *RunContext) {
	vals := make([]string, len(a.values))
	for i, t := range a.values {
		v := r.Render(t)
		if len(v) > limits.MaxVarBytes {
			v = truncateAt(v, limits.MaxVarBytes)
			r.ReportError(errVarTruncated)
		}
		vals[i] = v
	}
	r.st.setVars(a.names, vals)
}
