package policy

import (
	"net/http"

	"github.com/edgeplane/edgeplane/apierr"
)

// ActionCustomResponse is the custom-response action: it ends evaluation
// with a response of its own.
const ActionCustomResponse = "custom-response"

// customResponseType is the custom-response action's registry entry.
var customResponseType = builtinType{name: ActionCustomResponse, compile: compileCustomResponse, httpOnly: true}

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
