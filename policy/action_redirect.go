package policy

import (
	"net/http"

	"github.com/edgeplane/edgeplane/apierr"
)

// ActionRedirect is the redirect action: it answers with a redirection to
// a URL made from the request's.
const ActionRedirect = "redirect"

// redirectType is the redirect action's registry entry.
var redirectType = builtinType{name: ActionRedirect, compile: compileRedirect, results: urlResults, httpOnly: true}

type redirectConfig struct {
	From       *string `json:"from"`
	To         *string `json:"to"`
	StatusCode *int    `json:"status_code"`
}

type redirectAction struct {
	urlReplace
	status int
}

func compileRedirect(c *CompileContext, config []byte) (Action, error) {
	var cfg redirectConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if !needHTTP(c, &vs, ActionRedirect) {
		return nil, vs.Err()
	}
	a := &redirectAction{status: statusCode(&vs, cfg.StatusCode, http.StatusFound, 300, 399)}
	a.urlReplace = compileURLReplace(c, &vs, cfg.From, cfg.To, false)
	if err := a.res.init(c); err != nil {
		return nil, err
	}
	return a, vs.Err()
}

func (a *redirectAction) Run(r *RunContext) {
	loc, ok := a.apply(r, r.st.fullURL())
	a.res.set(r, ok, loc)
	if !ok {
		return
	}
	r.Respond(a.status, http.Header{"Location": {sanitizeHeaderValue(loc)}}, "")
}

// AlwaysTerminates is true without from: every request is redirected.
func (a *redirectAction) AlwaysTerminates() bool { return a.from == nil }
