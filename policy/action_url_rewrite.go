package policy

import (
	"net/url"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
)

// ActionURLRewrite is the url-rewrite action: it rewrites the path and
// query of the request the upstream gets.
const ActionURLRewrite = "url-rewrite"

// urlRewriteType is the url-rewrite action's registry entry.
var urlRewriteType = builtinType{name: ActionURLRewrite, compile: compileURLRewrite, results: urlResults, httpOnly: true}

type rewriteConfig struct {
	From *string `json:"from"`
	To   *string `json:"to"`
}

type rewriteAction struct{ urlReplace }

func compileURLRewrite(c *CompileContext, config []byte) (Action, error) {
	var cfg rewriteConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if !needHTTP(c, &vs, ActionURLRewrite) {
		return nil, vs.Err()
	}
	if c.Phase() != Inbound {
		vs.Add("type", "url-rewrite is only available in inbound (on_http_request) rules")
	}
	a := &rewriteAction{compileURLReplace(c, &vs, cfg.From, cfg.To, true)}
	if err := a.res.init(c); err != nil {
		return nil, err
	}
	return a, vs.Err()
}

type rewriteError struct{ msg string }

func (e rewriteError) Error() string { return e.msg }

func (a *rewriteAction) Run(r *RunContext) {
	st := r.st
	old := st.fullURL()
	next, ok := a.apply(r, old)
	a.res.set(r, ok, next)
	if !ok || next == old {
		return
	}
	u, err := url.Parse(next)
	if err != nil {
		r.ReportError(rewriteError{"the rewritten URL is invalid: " + quoteTrunc(next)})
		return
	}
	if !strings.EqualFold(u.Scheme, st.scheme()) || !strings.EqualFold(u.Host, st.req.Host) {
		r.ReportError(rewriteError{"url-rewrite may not change the scheme or host: " + quoteTrunc(next)})
		return
	}
	uri := u.EscapedPath()
	if uri == "" {
		uri = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		uri += "?" + u.RawQuery
	}
	if err := r.RewriteURI(uri); err != nil {
		r.ReportError(err)
	}
}
