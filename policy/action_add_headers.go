package policy

import "github.com/edgeplane/edgeplane/apierr"

// ActionAddHeaders is the add-headers action: it appends request
// (inbound) or response (outbound) headers.
const ActionAddHeaders = "add-headers"

// addHeadersType is the add-headers action's registry entry.
var addHeadersType = builtinType{name: ActionAddHeaders, compile: compileAddHeaders, httpOnly: true}

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
