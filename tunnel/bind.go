package tunnel

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"golang.ngrok.com/muxado/v2"
)

// Endpoint binds (agent-protocol §2.3). The options of a Bind are a JSON
// object whose keys are the SDK's Go field names; the Server reads the
// address (URL, Domain, Hostname, Addr), TrafficPolicy and
// TLSTermination, ignores what concerns only the agent (LocalURLScheme,
// MutualTLSAtAgent), and refuses any other option that is set (not null,
// "", 0 or false): basic auth, OAuth, IP restrictions, PROXY protocol
// headers and the like are not applied by this server's edges, and a
// bind that asked for them must not go online without them. Traffic
// policies express them instead.

// optsAgentSide are the options of a Bind that only the agent acts on.
var optsAgentSide = []string{"LocalURLScheme", "MutualTLSAtAgent"}

// optsRead are the options of a Bind the Server reads.
var optsRead = []string{"URL", "Domain", "Hostname", "Subdomain", "Addr", "TrafficPolicy", "TLSTermination"}

// bindOpts are the options of a Bind the Server reads.
type bindOpts struct {
	URL, Domain, Hostname, Subdomain, Addr, TrafficPolicy string
	// TLSTermination is set (not null) when a tls endpoint asks the edge
	// to terminate TLS; null means the agent does (passthrough).
	TLSTermination *tlsTermination
}

// tlsTermination is a TLS endpoint's TLSTermination option. The edge
// terminates with the reserved domain's certificate: an agent's own is
// refused.
type tlsTermination struct {
	Cert      []byte `json:"cert"`
	Key       []byte `json:"key"`
	SealedKey []byte `json:"sealed_key"`
}

// decodeOpts reads the options of a Bind: every key the Server does not
// read or leave to the agent must be unset.
func decodeOpts(raw json.RawMessage) (bindOpts, error) {
	var o bindOpts
	if len(raw) == 0 || string(raw) == "null" {
		return o, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return o, apierr.Invalidf("Opts", "must be a JSON object of the endpoint's options")
	}
	var vs apierr.Violations
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := m[k]
		switch {
		case slices.Contains(optsRead, k):
			var err error
			switch k {
			case "URL":
				err = json.Unmarshal(v, &o.URL)
			case "Domain":
				err = json.Unmarshal(v, &o.Domain)
			case "Hostname":
				err = json.Unmarshal(v, &o.Hostname)
			case "Subdomain":
				err = json.Unmarshal(v, &o.Subdomain)
			case "Addr":
				err = json.Unmarshal(v, &o.Addr)
			case "TrafficPolicy":
				err = json.Unmarshal(v, &o.TrafficPolicy)
			case "TLSTermination":
				err = json.Unmarshal(v, &o.TLSTermination)
			}
			if err != nil {
				vs.Add("Opts."+k, "is not of the expected type")
			}
		case slices.Contains(optsAgentSide, k), isUnset(v):
		default:
			vs.Add("Opts."+k, "is not supported by this tunnel server; leave it unset, and express it in TrafficPolicy where a traffic policy can")
		}
	}
	return o, vs.Err()
}

// isUnset says whether an option's JSON value is null, "", 0 or false.
func isUnset(v json.RawMessage) bool {
	switch strings.TrimSpace(string(v)) {
	case "null", `""`, "0", "false":
		return true
	}
	return false
}

// endpointParams returns what the Host is asked to bind for req, whose
// options are o: the address (Domain, else Hostname, else the host of
// URL; for tcp, Addr, else URL's host:port) and what the Server knows of
// the agent's bind.
func (s *Server) endpointParams(req bindMsg, o bindOpts) (agents.EndpointParams, error) {
	p := agents.EndpointParams{ID: req.ID, Proto: req.Proto, TCPHost: s.opts.TCPHost, TCPLow: s.opts.TCPLow, TCPHigh: s.opts.TCPHigh,
		TrafficPolicy: o.TrafficPolicy, ForwardsTo: req.ForwardsTo, Metadata: req.Extra.Metadata, Description: req.Extra.Description,
		PoolingEnabled: req.Extra.PoolingEnabled}
	var vs apierr.Violations
	switch req.ForwardsProto {
	case "", "http1":
	default:
		vs.Add("ForwardsProto", "must be empty: this tunnel server's edges speak HTTP/1.1 to agents")
	}
	if req.Extra.IPPolicyRef != "" {
		vs.Add("Extra.IPPolicyRef", "is not supported by this tunnel server; use an IP restriction of type endpoints, or a restrict-ips action in TrafficPolicy")
	}
	p.Binding = bindingOf(&vs, req.Extra.Bindings)
	p.DomainBase = s.opts.DomainBase
	if o.Subdomain != "" {
		vs.Add("Opts.Subdomain", "is not supported; name the whole Domain")
	}
	switch req.Proto {
	case agents.ProtoHTTP, agents.ProtoHTTPS, agents.ProtoTLS:
		p.Domain = o.Domain
		if p.Domain == "" {
			p.Domain = o.Hostname
		}
		if p.Binding == agents.BindingInternal {
			internalAddress(&vs, &p, o, req.Proto)
			break
		}
		if o.URL != "" {
			host, reason := urlHost(o.URL, req.Proto)
			switch {
			case reason != "":
				vs.Add("Opts.URL", "%s", reason)
			case p.Domain == "":
				p.Domain = host
			case !strings.EqualFold(strings.TrimSuffix(p.Domain, "."), host):
				vs.Add("Opts.URL", "names the host %s, not the Domain %s", host, p.Domain)
			}
		}
		publicAddress(&vs, p.Domain, o.URL)
		if req.Proto == agents.ProtoTLS {
			p.PassthroughTLS = o.TLSTermination == nil
			if t := o.TLSTermination; t != nil && (len(t.Cert) > 0 || len(t.Key) > 0 || len(t.SealedKey) > 0) {
				vs.Add("Opts.TLSTermination", "must not carry a certificate or key: the edge terminates TLS with the reserved domain's certificate")
			}
		}
	case agents.ProtoTCP:
		p.Addr = o.Addr
		if o.URL != "" {
			u, err := url.Parse(o.URL)
			switch {
			case err != nil || u.Host == "" || (u.Scheme != "" && u.Scheme != agents.ProtoTCP):
				vs.Add("Opts.URL", "must be tcp://host:port")
			case p.Addr == "":
				p.Addr = u.Host
			case !strings.EqualFold(p.Addr, u.Host):
				vs.Add("Opts.URL", "names the address %s, not the Addr %s", u.Host, p.Addr)
			}
		}
	}
	return p, vs.Err()
}

// urlHost returns the host of an endpoint's URL option: its scheme, if
// any, must be proto, and its port, if any, the one the endpoint serves
// (443, or 80 for http).
func urlHost(raw, proto string) (string, string) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		// A bare host ("app.example.com") parses as a path.
		if u2, err2 := url.Parse("//" + raw); err2 == nil && u2.Host != "" && !strings.Contains(raw, "/") {
			u, err = u2, nil
		} else {
			return "", "must be a URL such as " + proto + "://app.example.com"
		}
	}
	if u.Scheme != "" && u.Scheme != proto {
		return "", "has the scheme " + u.Scheme + ", not " + proto
	}
	want := "443"
	if proto == agents.ProtoHTTP {
		want = "80"
	}
	if port := u.Port(); port != "" && port != want {
		return "", "names the port " + port + "; an " + proto + " endpoint serves port " + want
	}
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), ""
}

// echoOpts returns the options to answer a Bind with: the request's, as
// the agent sends them back on a rebind, with the address the Host
// picked filled in for a tcp endpoint that named none, so that a rebind
// asks for the same address even when the record is gone.
func echoOpts(raw json.RawMessage, ep *agents.Endpoint, askedAddr string) json.RawMessage {
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	if ep.Proto != agents.ProtoTCP || askedAddr != "" {
		return raw
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	addr, _ := json.Marshal(ep.Hostport)
	m["Addr"] = addr
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// bindEndpoint handles Bind, which opens an endpoint (http, https, tcp,
// tls): the Host checks it against the credential's ACL, the account's
// reserved domains and the hostports taken, and records it; the Server
// then hands it connections under the endpoint's ID (DialTunnel). A
// Bind with an ID is a rebind after a reconnect: the answer echoes it,
// as the SDK keeps the ID it had.
func (sess *session) bindEndpoint(str muxado.Stream) any {
	s := sess.srv
	var req bindMsg
	if err := readMessage(str, &req); err != nil {
		return bindResp{Error: protoError(err)}
	}
	refuse := func(err error, reason string) any {
		s.m.refused(reason)
		s.log.Info("agent's endpoint refused", "session", sess.id, "proto", req.Proto, "err", err)
		return bindResp{ID: req.ID, Error: protoError(err)}
	}
	o, err := decodeOpts(req.Opts)
	if err != nil {
		return refuse(err, reasonUnsupported)
	}
	params, err := s.endpointParams(req, o)
	if err != nil {
		return refuse(err, reasonUnsupported)
	}
	again, reserved := sess.reserve(req.ID)
	// A bind under an ID is an agent binding its endpoint again after a
	// reconnect: it must bring the endpoint's token, which only the bind
	// that made the endpoint handed out (sealed for the ID, the account
	// and the credential, with the time it was made). A forged or
	// foreign token is refused.
	// A token older than ResumeTokenTTL still proves the ID was this
	// credential's, but takes nothing over: the endpoint binds once no
	// other session holds it.
	params.TakeOver = again
	if req.ID != "" && !again {
		made, err := s.opts.Host.OpenAgentToken(agents.TokenEndpoint, req.Extra.Token, sess.accountID, sess.credentialID, req.ID)
		if err != nil {
			if reserved {
				sess.release()
			}
			return refuse(err, reasonResume)
		}
		params.TakeOver = s.fresh(made)
	}
	if !reserved {
		return refuse(apierr.New(apierr.ResourceExhausted, "a session holds at most %d tunnels and endpoints", s.opts.MaxTunnelsPerSession), reasonTooManyTunnels)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hostTimeout)
	ep, err := s.opts.Host.BindEndpoint(ctx, sess.accountID, sess.id, params)
	cancel()
	if err != nil {
		sess.release()
		return refuse(err, refusalReason(err))
	}
	sess.hold(ep.ID, ep.Proto, str)
	s.log.Info("agent endpoint bound", "session", sess.id, "endpoint", ep.ID, "url", ep.URL, "rebind", req.ID != "")
	return bindResp{ID: ep.ID, URL: ep.URL, Proto: req.Proto, Opts: echoOpts(req.Opts, ep, params.Addr),
		Extra: bindRespExtra{Token: s.opts.Host.AgentToken(agents.TokenEndpoint, sess.accountID, sess.credentialID, ep.ID)}}
}

// unbindEndpoint removes endpoint id through the Host, unless it is no
// longer this session's: the agent bound it again in a newer session
// (here or at another server), which now holds it.
func (sess *session) unbindEndpoint(id string) error {
	s := sess.srv
	ctx, cancel := context.WithTimeout(context.Background(), hostTimeout)
	defer cancel()
	ep, err := s.opts.Host.GetEndpoint(ctx, sess.accountID, id)
	switch {
	case errors.Is(err, apierr.ErrNotFound):
		return nil
	case err != nil:
		return err
	case ep.TunnelSession == nil || ep.TunnelSession.ID != sess.id:
		return nil
	}
	if err := s.opts.Host.UnbindEndpoint(ctx, sess.accountID, id); err != nil && !errors.Is(err, apierr.ErrNotFound) {
		return err
	}
	return nil
}

// isEndpoint says whether a tunnel ID a session holds is an endpoint's.
func isEndpoint(id string) bool { return strings.HasPrefix(id, agents.EndpointPrefix) }

// validTCPRange reports the problem of a TCP port range of [Options],
// or "".
func validTCPRange(host string, low, high int) string {
	switch {
	case low == 0 && high == 0:
		return ""
	case low < 1 || high > 65535 || low > high:
		return "TCPLow and TCPHigh must be ports with 1 <= TCPLow <= TCPHigh <= 65535, or both 0 for no TCP endpoints"
	case host == "":
		return "TCPHost is required with a TCP port range: it is the host of the endpoints' addresses the server picks"
	}
	if _, err := netip.ParseAddr(host); err != nil && strings.ContainsAny(host, ":/ ") {
		return "TCPHost must be a host name or an IP address, without a port"
	}
	return ""
}
