package tunnel

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
)

// Bindings and names the server picks (see the package doc's
// # Internal endpoints and # Names the server picks).

// maxBindings bounds the Bindings of a Bind read: one is served.
const maxBindings = 1

// bindingOf returns the binding a Bind's Extra.Bindings asks for:
// public (none, or ["public"]) or internal (["internal"]); anything
// else is a violation of vs.
func bindingOf(vs *apierr.Violations, bindings []string) string {
	if len(bindings) > maxBindings {
		vs.Add("Extra.Bindings", "must name one binding, public or internal, got %d", len(bindings))
		return ""
	}
	for i, b := range bindings {
		switch b {
		case agents.BindingPublic:
		case agents.BindingInternal:
			return agents.BindingInternal
		default:
			vs.Add("Extra.Bindings["+strconv.Itoa(i)+"]", "must be public or internal, got %q", apierr.Truncate(b, 32))
		}
	}
	return agents.BindingPublic
}

// internalAddress reads the address of an internal http or https
// endpoint into p: its host (Domain, else Hostname, else the host of
// URL), which must end in .internal, and the port URL names, any port
// (no listener serves it: the port is part of its name, as
// http://api.internal:8080 is). The original service's words: an
// endpoint with the internal binding must have a URL that ends in
// .internal (ERR_NGROK_9029), and must name one (ERR_NGROK_9028).
func internalAddress(vs *apierr.Violations, p *agents.EndpointParams, o bindOpts, proto string) {
	p.Domain = o.Domain
	if p.Domain == "" {
		p.Domain = o.Hostname
	}
	if o.URL != "" {
		host, port, reason := internalURL(o.URL, proto)
		switch {
		case reason != "":
			vs.Add("Opts.URL", "%s", reason)
			return
		case p.Domain == "":
			p.Domain = host
		case !strings.EqualFold(strings.TrimSuffix(p.Domain, "."), host):
			vs.Add("Opts.URL", "names the host %s, not the Domain %s", host, p.Domain)
			return
		}
		p.Port = port
	}
	switch d := strings.ToLower(strings.TrimSuffix(p.Domain, ".")); {
	case d == "":
		vs.Add("Opts.URL", "is required for an endpoint with the binding internal: a URL whose host ends in .internal, such as %s://api.internal", proto)
	case !strings.HasSuffix(d, agents.InternalSuffix):
		vs.Add("Opts.URL", "names %s; an endpoint with the binding internal must have a URL whose host ends in .internal", apierr.Truncate(d, 64))
	}
}

// internalURL returns the host and port (0: none named) of an internal
// endpoint's URL option, or the reason it is not one.
func internalURL(raw, proto string) (string, int, string) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		u2, err2 := url.Parse("//" + raw)
		if err2 != nil || u2.Host == "" || strings.Contains(raw, "/") {
			return "", 0, "must be a URL such as " + proto + "://api.internal"
		}
		u = u2
	}
	if u.Scheme != "" && u.Scheme != proto {
		return "", 0, "has the scheme " + u.Scheme + ", not " + proto
	}
	port := 0
	if ps := u.Port(); ps != "" {
		n, err := strconv.Atoi(ps)
		if err != nil || n < 1 || n > 65535 {
			return "", 0, "names the port " + apierr.Truncate(ps, 8) + "; a port is from 1 to 65535"
		}
		port = n
	}
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), port, ""
}

// publicAddress refuses a public endpoint whose host is an internal
// name (it ends in .internal): only the binding internal has one.
func publicAddress(vs *apierr.Violations, domain, rawURL string) {
	if strings.HasSuffix(strings.ToLower(strings.TrimSuffix(domain, ".")), agents.InternalSuffix) {
		field := "Opts.Domain"
		if rawURL != "" {
			field = "Opts.URL"
		}
		vs.Add(field, "names %s, an internal name; bind it with the binding internal (WithBindings(\"internal\"), bindings: [internal]), or name a public domain", apierr.Truncate(domain, 64))
	}
}

// DomainBaseProblem returns what is wrong with base as the
// [Options.DomainBase] of a server, or "" when nothing is (or base is
// ""): it must be a DNS name of two labels or more (agents.example.com),
// without a wildcard, port or scheme, and not an internal name.
func DomainBaseProblem(base string) string {
	if base == "" {
		return ""
	}
	name, err := domains.ParseName(base)
	switch {
	case err != nil:
		return "must be a DNS name such as agents.example.com (no scheme, port or wildcard): " + err.Error()
	case domains.IsWildcard(name):
		return "must be the base name without the wildcard: agents.example.com for *.agents.example.com"
	case !strings.Contains(name, "."):
		return "must be a name of two labels or more, such as agents.example.com"
	case strings.HasSuffix(name, agents.InternalSuffix):
		return "must not end in .internal: internal names are no listener's"
	case name != base:
		return "must be written in lower case without a trailing dot: " + name
	}
	return ""
}
