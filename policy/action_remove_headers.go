package policy

import (
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
)

// ActionRemoveHeaders is the remove-headers action: it removes request
// (inbound) or response (outbound) headers.
const ActionRemoveHeaders = "remove-headers"

// removeHeadersType is the remove-headers action's registry entry.
var removeHeadersType = builtinType{name: ActionRemoveHeaders, compile: compileRemoveHeaders, httpOnly: true}

type removeHeadersConfig struct {
	Headers []string `json:"headers"`
}

type removeHeadersAction struct{ names []string }

func compileRemoveHeaders(c *CompileContext, config []byte) (Action, error) {
	var cfg removeHeadersConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if !needHTTP(c, &vs, ActionRemoveHeaders) {
		return nil, vs.Err()
	}
	switch {
	case len(cfg.Headers) == 0:
		vs.Add("config.headers", "is required: a list of header names")
	case len(cfg.Headers) > maxHeaderEntries:
		vs.Add("config.headers", "has %d headers; at most %d are allowed", len(cfg.Headers), maxHeaderEntries)
	}
	a := &removeHeadersAction{}
	for i, n := range cfg.Headers {
		checkHeaderName(&vs, "config.headers["+strconv.Itoa(i)+"]", n)
		a.names = append(a.names, strings.ToLower(n))
	}
	return a, vs.Err()
}

func (a *removeHeadersAction) Run(r *RunContext) {
	for _, n := range a.names {
		r.RemoveHeader(n)
	}
}
