package policy

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
)

// ActionForwardInternal is the forward-internal action: it sends the
// request to an internal endpoint (a name under .internal) of the same
// account, whose answer the client gets, instead of the upstream.
const ActionForwardInternal = "forward-internal"

// forwardInternalType is the forward-internal action's registry entry.
// It sets no result variables, as the original's sets none.
var forwardInternalType = builtinType{name: ActionForwardInternal, compile: compileForwardInternal, httpOnly: true}

// The values of forward-internal's on_error.
const (
	onErrorHalt     = "halt"
	onErrorContinue = "continue"
)

// MaxInternalURLBytes bounds the URL forward-internal forwards to, as
// rendered.
const MaxInternalURLBytes = 512

// InternalEndpoints is what the forward-internal action asks of the host
// (an edge proxy) that evaluates a request: whether an internal endpoint
// of the request's account is online at a URL, in the canonical form
// [ParseInternalURL] returns. The host sets it in [Request.Internal]
// for the requests it can forward; without it, no internal endpoint is
// online.
type InternalEndpoints interface {
	InternalEndpointOnline(url string) bool
}

type forwardInternalConfig struct {
	URL     string `json:"url"`
	OnError string `json:"on_error"`
}

type forwardInternalAction struct {
	url  *Template
	halt bool
	// target is the canonical URL of a url without ${...} parts, parsed
	// once; "" when url is templated.
	target string
}

func compileForwardInternal(c *CompileContext, config []byte) (Action, error) {
	var cfg forwardInternalConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if !needHTTP(c, &vs, ActionForwardInternal) {
		return nil, vs.Err()
	}
	if c.Phase() != Inbound {
		vs.Add("type", "forward-internal forwards requests: it runs in the inbound rules (on_http_request) only")
	}
	a := &forwardInternalAction{halt: true}
	switch cfg.OnError {
	case "", onErrorHalt:
	case onErrorContinue:
		a.halt = false
	default:
		vs.Add("config.on_error", "must be halt (the default) or continue, got %q", apierr.Truncate(cfg.OnError, 32))
	}
	if cfg.URL == "" {
		vs.Add("config.url", "is required: the internal endpoint to forward to, such as https://api.internal")
		return nil, vs.Err()
	}
	a.url = c.c.template(&vs, "config.url", cfg.URL, -1)
	if a.url != nil && a.url.IsLiteral() {
		target, err := ParseInternalURL(cfg.URL)
		if err != nil {
			vs.Add("config.url", "%s", err.Error())
		}
		a.target = target
	}
	return a, vs.Err()
}

// Run forwards to the internal endpoint of the rendered url when the
// host says it is online: evaluation ends with the verdict Forward and
// the endpoint's URL in Result.ForwardURL. Otherwise (no such endpoint
// online, or a url that is not an internal endpoint's) it reports the
// error and, with on_error halt, ends evaluation with 404 (the endpoint
// is offline, as the original answers); with on_error continue the
// actions after it run.
func (a *forwardInternalAction) Run(r *RunContext) {
	target, err := a.target, error(nil)
	if target == "" {
		target, err = ParseInternalURL(r.Render(a.url))
	}
	if err == nil {
		if in := r.st.req.Internal; in != nil && in.InternalEndpointOnline(target) {
			r.st.out.Verdict = Forward
			r.st.out.ForwardURL = target
			return
		}
		err = errors.New("forward-internal: no internal endpoint of this account is online at " + target)
	}
	r.ReportError(err)
	if a.halt {
		r.Respond(http.StatusNotFound, http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
			"the internal endpoint this request is forwarded to is offline\n")
	}
}

// ParseInternalURL returns the canonical form of the URL of an internal
// endpoint, scheme://host:port (https://api.internal:443): the scheme
// http or https (none means https), a host that ends in .internal (no
// wildcard, lower-cased, without a trailing dot), a port from 1 to
// 65535 (none means the scheme's), and no user, path (but "/"), query
// or fragment.
func ParseInternalURL(raw string) (string, error) {
	if len(raw) > MaxInternalURLBytes {
		return "", errors.New("must be at most " + strconv.Itoa(MaxInternalURLBytes) + " bytes")
	}
	s := raw
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", errors.New("must be the URL of an internal endpoint, such as https://api.internal")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errors.New("must be an http or https URL, such as https://api.internal, got the scheme " + apierr.Truncate(u.Scheme, 16))
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", errors.New("must name only the internal endpoint (scheme, host and port), without user, path, query or fragment")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if !strings.HasSuffix(host, ".internal") || !validInternalHost(host) {
		return "", errors.New("must name a host that ends in .internal, such as https://api.internal")
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || port[0] == '0' {
		return "", errors.New("must have a port from 1 to 65535")
	}
	return u.Scheme + "://" + host + ":" + port, nil
}

// validInternalHost reports whether host is a DNS name of letters,
// digits, hyphens and underscores, without empty labels.
func validInternalHost(host string) bool {
	if len(host) > 253 {
		return false
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			switch c := label[i]; {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
			default:
				return false
			}
		}
	}
	return true
}
