package tunnel_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/sdktunnel"
	"github.com/edgeplane/edgeplane/tunnel"
	"golang.ngrok.com/ngrok"
	"golang.ngrok.com/ngrok/config"
)

// endpointOptions is a tunnel server that serves tcp endpoints on
// tcp.example.test, ports 20000 to 20099.
var endpointOptions = tunnel.Options{TCPHost: "tcp.example.test", TCPLow: 20000, TCPHigh: 20099}

// reserve reserves domain for the env's account.
func (e *env) reserve(t *testing.T, domain string) *domains.ReservedDomain {
	t.Helper()
	d, err := e.svc.CreateReservedDomain(e.ctx, e.admin, domains.CreateParams{Domain: domain})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// endpoint returns the record of endpoint id, or fails.
func (e *env) endpoint(t *testing.T, id string) *agents.Endpoint {
	t.Helper()
	ep, err := e.svc.Host().Tunnels().GetEndpoint(e.ctx, e.admin.AccountID, id)
	if err != nil {
		t.Fatalf("endpoint %s: %v", id, err)
	}
	return ep
}

// echo copies what each connection accepted on l sends back to it.
func echo(l ngrok.Tunnel) {
	for {
		c, err := sdktunnel.Accept(l)
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_, _ = io.Copy(c, c)
		}()
	}
}

// roundTrip sends msg through the server to endpoint id, as an edge
// proxy hands over a TCP connection, and returns what comes back.
func (e *env) roundTrip(t *testing.T, id, proto, msg string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := e.srv.DialTunnel(ctx, "", id, agents.ConnHeader{ClientAddr: clientAddr, Proto: proto, EdgeType: agents.EdgeNone})
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	buf := make([]byte, len(msg))
	_, err = io.ReadFull(c, buf)
	return string(buf), err
}

func TestHTTPEndpoint(t *testing.T) {
	e := newEnv(t, endpointOptions)
	d := e.reserve(t, "app.example.com")
	cred, token := e.token(t, "bind:app.example.com")
	sess := e.connect(t, e.addr, token)
	tun, err := sess.Listen(context.Background(), config.HTTPEndpoint(config.WithDomain("app.example.com"), config.WithMetadata("m1"),
		config.WithDescription("the app")))
	if err != nil {
		t.Fatal(err)
	}
	go serve(tun)
	if tun.URL() != "https://app.example.com" || !strings.HasPrefix(tun.ID(), agents.EndpointPrefix) || tun.Proto() != "https" {
		t.Errorf("the SDK's tunnel: id %q, url %q, proto %q", tun.ID(), tun.URL(), tun.Proto())
	}
	code, body, err := e.get(t, tun.ID(), "/hello")
	if err != nil || code != 200 || body != "/hello from "+clientAddr.String() {
		t.Fatalf("a request through the endpoint: %d %q %v", code, body, err)
	}

	// The API shows it, in the agent's session, on the reserved domain.
	page, err := e.svc.ListEndpoints(e.ctx, e.admin, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("ListEndpoints: %v %v", page, err)
	}
	ep := page.Items[0]
	if ep.ID != tun.ID() || ep.URL != tun.URL() || ep.Domain == nil || ep.Domain.ID != d.ID || ep.TunnelSession == nil ||
		ep.Metadata != "m1" || ep.Description != "the app" || ep.UpstreamURL == "" {
		t.Errorf("the endpoint as listed: %+v", ep)
	}
	ts, err := e.svc.GetTunnelSession(e.ctx, e.admin, ep.TunnelSession.ID)
	if err != nil || ts.Credential.ID != cred.ID {
		t.Errorf("the endpoint's session: %+v, %v", ts, err)
	}
	if e.m.Tunnels() != 1 {
		t.Errorf("metrics: %d tunnels; want 1", e.m.Tunnels())
	}

	// Closing it unbinds it; its ID then reaches nothing.
	if err := tun.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := eventually(time.Second, func() bool {
		p, err := e.svc.ListEndpoints(e.ctx, e.admin, edgeplane.ListOptions{})
		return err == nil && len(p.Items) == 0 && e.m.Tunnels() == 0
	}); !ok {
		t.Error("the closed endpoint is still listed")
	}
	if _, _, err := e.get(t, tun.ID(), "/"); !errors.Is(err, agents.ErrNoSession) {
		t.Errorf("a request for the closed endpoint: %v; want ErrNoSession", err)
	}

	// http, and the domain given as a URL.
	plain, err := sess.Listen(context.Background(), config.HTTPEndpoint(config.WithURL("http://App.example.com"), config.WithScheme(config.SchemeHTTP)))
	if err != nil {
		t.Fatal(err)
	}
	go serve(plain)
	if plain.URL() != "http://app.example.com" || plain.Proto() != "http" {
		t.Errorf("an http endpoint: url %q, proto %q", plain.URL(), plain.Proto())
	}
	if code, _, err := e.get(t, plain.ID(), "/plain"); err != nil || code != 200 {
		t.Errorf("a request through the http endpoint: %d %v", code, err)
	}
}

func TestTCPEndpoint(t *testing.T) {
	e := newEnv(t, endpointOptions)
	_, named := e.token(t, "bind:tcp.example.test:20005")
	sess := e.connect(t, e.addr, named)
	tun, err := sess.Listen(context.Background(), config.TCPEndpoint(config.WithRemoteAddr("tcp.example.test:20005")))
	if err != nil {
		t.Fatal(err)
	}
	go echo(tun)
	if tun.URL() != "tcp://tcp.example.test:20005" {
		t.Errorf("url %q", tun.URL())
	}
	if got, err := e.roundTrip(t, tun.ID(), "tcp", "ping"); err != nil || got != "ping" {
		t.Errorf("bytes through the tcp endpoint: %q %v", got, err)
	}
	// The credential names its address: a port the server picks is
	// refused.
	_, err = sess.Listen(context.Background(), config.TCPEndpoint())
	if err == nil || !strings.Contains(err.Error(), "ERR_SERVICE_104") {
		t.Errorf("a picked port for a restricted credential: %v; want ERR_SERVICE_104", err)
	}

	// Without an address, an unrestricted credential gets a port of the
	// range.
	_, open := e.token(t)
	picked, err := e.connect(t, e.addr, open).Listen(context.Background(), config.TCPEndpoint())
	if err != nil {
		t.Fatal(err)
	}
	go echo(picked)
	port, err := strconv.Atoi(strings.TrimPrefix(picked.URL(), "tcp://tcp.example.test:"))
	if err != nil || port < 20000 || port > 20099 || port == 20005 {
		t.Errorf("a picked port's URL %q", picked.URL())
	}
	if ep := e.endpoint(t, picked.ID()); ep.URL != picked.URL() || ep.Port != int64(port) {
		t.Errorf("the record of a picked port: %+v", ep)
	}
	if got, err := e.roundTrip(t, picked.ID(), "tcp", "pong"); err != nil || got != "pong" {
		t.Errorf("bytes through the picked port: %q %v", got, err)
	}
}

func TestTLSEndpoint(t *testing.T) {
	e := newEnv(t, endpointOptions)
	e.reserve(t, "*.apps.example.com")
	_, token := e.token(t, "bind:*.apps.example.com")
	sess := e.connect(t, e.addr, token)
	passthrough, err := sess.Listen(context.Background(), config.TLSEndpoint(config.WithDomain("a.apps.example.com")))
	if err != nil {
		t.Fatal(err)
	}
	go echo(passthrough)
	if passthrough.URL() != "tls://a.apps.example.com:443" {
		t.Errorf("url %q", passthrough.URL())
	}
	if ep := e.endpoint(t, passthrough.ID()); !ep.PassthroughTLS || ep.Proto != "tls" {
		t.Errorf("a tls endpoint without termination: %+v", ep)
	}
	if got, err := e.roundTrip(t, passthrough.ID(), "tls", "\x16\x03\x01hello"); err != nil || got != "\x16\x03\x01hello" {
		t.Errorf("bytes through the tls endpoint: %q %v", got, err)
	}
	terminated, err := sess.Listen(context.Background(), config.TLSEndpoint(config.WithDomain("b.apps.example.com"), config.WithTLSTermination()))
	if err != nil {
		t.Fatal(err)
	}
	if ep := e.endpoint(t, terminated.ID()); ep.PassthroughTLS {
		t.Errorf("a tls endpoint terminated at the edge: %+v", ep)
	}
	// An agent's own certificate is not taken.
	_, err = sess.Listen(context.Background(), config.TLSEndpoint(config.WithDomain("c.apps.example.com"),
		config.WithTLSTermination(config.WithTLSTerminationKeyPair([]byte("cert"), []byte("key")))))
	if err == nil || !strings.Contains(err.Error(), "TLSTermination") || !strings.Contains(err.Error(), "ERR_SERVICE_100") {
		t.Errorf("a tls endpoint with the agent's certificate: %v; want ERR_SERVICE_100 naming TLSTermination", err)
	}
}

func TestEndpointRefusals(t *testing.T) {
	e := newEnv(t, tunnel.Options{}) // no TCP ports
	e.reserve(t, "app.example.com")
	e.reserve(t, "edge.example.com")
	if _, err := e.svc.CreateHTTPSEdge(e.ctx, e.admin, edges.CreateEdgeParams{Hostports: []string{"edge.example.com:443"}}); err != nil {
		t.Fatal(err)
	}
	_, token := e.token(t, "bind:app.example.com", "bind:edge.example.com", "bind:free.example.com", "bind:tcp.example.test:20001")
	sess := e.connect(t, e.addr, token)
	tests := []struct {
		name string
		cfg  config.Tunnel
		want []string
	}{
		{"a domain outside the ACL", config.HTTPEndpoint(config.WithDomain("other.example.com")),
			[]string{"other.example.com", "bind:other.example.com", "ERR_SERVICE_104"}},
		{"a domain not reserved", config.HTTPEndpoint(config.WithDomain("free.example.com")),
			[]string{"free.example.com", "reserve", "ERR_SERVICE_103"}},
		{"a domain an edge serves", config.HTTPEndpoint(config.WithDomain("edge.example.com")),
			[]string{"edge.example.com:443", "ERR_SERVICE_102"}},
		{"no TCP ports", config.TCPEndpoint(config.WithRemoteAddr("tcp.example.test:20001")),
			[]string{"serves no TCP ports", "ERR_SERVICE_103"}},
		{"basic auth, which the edge does not apply", config.HTTPEndpoint(config.WithDomain("app.example.com"), config.WithBasicAuth("user", "password123")),
			[]string{"Opts.BasicAuth", "ERR_SERVICE_100"}},
		{"an invalid traffic policy", config.HTTPEndpoint(config.WithDomain("app.example.com"), config.WithTrafficPolicy(`{"inbound":[{"expressions":["nope("]}]}`)),
			[]string{"TrafficPolicy", "ERR_SERVICE_100"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sess.Listen(context.Background(), tt.cfg)
			if err == nil {
				t.Fatal("the endpoint was bound")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	// The domain one endpoint holds is refused to the next.
	if _, err := sess.Listen(context.Background(), config.HTTPEndpoint(config.WithDomain("app.example.com"))); err != nil {
		t.Fatal(err)
	}
	_, err := sess.Listen(context.Background(), config.TLSEndpoint(config.WithDomain("app.example.com")))
	if err == nil || !strings.Contains(err.Error(), "app.example.com:443") || !strings.Contains(err.Error(), "ERR_SERVICE_102") {
		t.Errorf("a second endpoint on a hostport: %v; want ERR_SERVICE_102 naming it", err)
	}
}

// TestEndpointReconnect: after the connection breaks, the agent
// reconnects and binds its endpoints again under their IDs: the URLs,
// IDs and records stay, and they serve again.
func TestEndpointReconnect(t *testing.T) {
	e := newEnv(t, endpointOptions)
	e.reserve(t, "app.example.com")
	_, token := e.token(t)
	r := newRelay(t, e.addr)
	var connects atomic.Int32
	sess := e.connect(t, r.addr(), token, ngrok.WithConnectHandler(func(context.Context, ngrok.Session) { connects.Add(1) }))
	web, err := sess.Listen(context.Background(), config.HTTPEndpoint(config.WithDomain("app.example.com")))
	if err != nil {
		t.Fatal(err)
	}
	go serve(web)
	tcp, err := sess.Listen(context.Background(), config.TCPEndpoint())
	if err != nil {
		t.Fatal(err)
	}
	go echo(tcp)
	webID, webURL, tcpID, tcpURL := web.ID(), web.URL(), tcp.ID(), tcp.URL()
	before := e.endpoint(t, webID).TunnelSession.ID

	first := connects.Load()
	r.breakAll()
	if _, ok := eventually(5*time.Second, func() bool {
		if connects.Load() == first || e.m.Sessions() != 1 || e.m.Tunnels() != 2 {
			return false
		}
		ep, err := e.svc.Host().Tunnels().GetEndpoint(e.ctx, e.admin.AccountID, webID)
		return err == nil && ep.TunnelSession.ID != before
	}); !ok {
		t.Fatalf("the agent did not bind again: %d connects, %d sessions, %d tunnels", connects.Load(), e.m.Sessions(), e.m.Tunnels())
	}
	if web.ID() != webID || web.URL() != webURL || tcp.ID() != tcpID || tcp.URL() != tcpURL {
		t.Errorf("after the reconnect the SDK has %s %s and %s %s; before %s %s and %s %s",
			web.ID(), web.URL(), tcp.ID(), tcp.URL(), webID, webURL, tcpID, tcpURL)
	}
	for id, url := range map[string]string{webID: webURL, tcpID: tcpURL} {
		if ep := e.endpoint(t, id); ep.ID != id || ep.URL != url {
			t.Errorf("the record after the reconnect: %+v; want %s at %s", ep, id, url)
		}
	}
	page, err := e.svc.ListEndpoints(e.ctx, e.admin, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 2 {
		t.Errorf("endpoints after the reconnect: %+v, %v", page, err)
	}
	code, body, err := e.get(t, webID, "/again")
	if err != nil || code != 200 || !strings.HasPrefix(body, "/again") {
		t.Errorf("a request after the reconnect: %d %q %v", code, body, err)
	}
	if got, err := e.roundTrip(t, tcpID, "tcp", "again"); err != nil || got != "again" {
		t.Errorf("bytes after the reconnect: %q %v", got, err)
	}
}

// TestEndpointRemovedUnderTheAgent: an endpoint removed elsewhere (here
// through the Host) is stopped at the agent, whose session stays.
func TestEndpointRemovedUnderTheAgent(t *testing.T) {
	e := newEnv(t, endpointOptions)
	e.reserve(t, "app.example.com")
	_, token := e.token(t)
	sess := e.connect(t, e.addr, token)
	tun, err := sess.Listen(context.Background(), config.HTTPEndpoint(config.WithDomain("app.example.com")))
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan error, 1)
	go func() {
		_, err := sdktunnel.Accept(tun)
		accepted <- err
	}()
	if err := e.svc.Host().Tunnels().UnbindEndpoint(e.ctx, e.admin.AccountID, tun.ID()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-accepted:
		if err == nil || !strings.Contains(err.Error(), "the endpoint was removed") {
			t.Errorf("the agent's Accept: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the agent was not told")
	}
	// What internal/sdktunnel reads when the SDK panics on a failed
	// Accept: the SDK's inner tunnel (its exported field Tunnel) keeps
	// returning its close error.
	inner := reflect.ValueOf(tun).Elem().FieldByName("Tunnel")
	if !inner.IsValid() {
		t.Fatalf("the SDK's tunnel %T has no field Tunnel", tun)
	}
	if err, _ := inner.MethodByName("Accept").Call(nil)[1].Interface().(error); err == nil || !strings.Contains(err.Error(), "the endpoint was removed") {
		t.Errorf("the SDK's inner tunnel's Accept: %v", err)
	}
	if _, ok := eventually(time.Second, func() bool { return e.m.Tunnels() == 0 && e.m.Sessions() == 1 }); !ok {
		t.Errorf("%d tunnels and %d sessions; want 0 and 1", e.m.Tunnels(), e.m.Sessions())
	}
}

func TestServerTCPOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts tunnel.Options
		ok   bool
	}{
		{"none", tunnel.Options{}, true},
		{"a range", tunnel.Options{TCPHost: "tcp.example.test", TCPLow: 1, TCPHigh: 65535}, true},
		{"one port on an address", tunnel.Options{TCPHost: "192.0.2.1", TCPLow: 20000, TCPHigh: 20000}, true},
		{"no host", tunnel.Options{TCPLow: 20000, TCPHigh: 20001}, false},
		{"reversed", tunnel.Options{TCPHost: "tcp.example.test", TCPLow: 20001, TCPHigh: 20000}, false},
		{"port 0", tunnel.Options{TCPHost: "tcp.example.test", TCPLow: 0, TCPHigh: 20000}, false},
		{"above 65535", tunnel.Options{TCPHost: "tcp.example.test", TCPLow: 20000, TCPHigh: 70000}, false},
		{"a host with a port", tunnel.Options{TCPHost: "tcp.example.test:1", TCPLow: 20000, TCPHigh: 20000}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tunnel.Options{})
			tc.opts.Host, tc.opts.TLSConfig, tc.opts.Feed = e.svc.Host().Tunnels(), &tls.Config{}, e.st
			srv, err := tunnel.NewServer(tc.opts)
			if (err == nil) != tc.ok {
				t.Fatalf("NewServer: %v; want ok %v", err, tc.ok)
			}
			if srv != nil {
				srv.Close()
			}
		})
	}
}

// TestNarrowedACLStopsEndpoint: an ACL update that no longer allows an
// endpoint's domain unbinds it, and the agent is told (its Accept
// fails); an endpoint still allowed keeps serving.
func TestNarrowedACLStopsEndpoint(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	e.reserve(t, "a.example.com")
	e.reserve(t, "b.example.com")
	cred, token := e.token(t, "bind:a.example.com", "bind:b.example.com")
	sess := e.connect(t, e.addr, token)
	a, err := sess.Listen(context.Background(), config.HTTPEndpoint(config.WithDomain("a.example.com"), config.WithScheme(config.SchemeHTTP)))
	if err != nil {
		t.Fatal(err)
	}
	go serve(a)
	b, err := sess.Listen(context.Background(), config.HTTPEndpoint(config.WithDomain("b.example.com"), config.WithScheme(config.SchemeHTTP)))
	if err != nil {
		t.Fatal(err)
	}
	wantStoppedByACL(t, e, cred.ID, []string{"bind:a.example.com"}, b, a, "endpoint")
}

// TestDeactivatedBotClosesSessions: deactivating a bot closes the agent
// sessions of the credentials it owns within a second, and its tokens
// are refused from then on.
func TestDeactivatedBotClosesSessions(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	bot, err := e.svc.CreateBotUser(e.ctx, e.admin, identity.CreateBotUserParams{Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{OwnerID: bot.ID})
	if err != nil {
		t.Fatal(err)
	}
	// A hand-made agent: the SDK would reconnect, and closing an SDK
	// session while its reconnect's Auth is being written is a data race
	// inside its muxado client (v2.0.2; see noReconnect).
	a := dialRaw(t, e)
	if r := a.auth(t, *c.Token, "", ""); r.Error != "" {
		t.Fatalf("Auth: %+v", r)
	}
	if e.m.Sessions() != 1 {
		t.Fatalf("%d sessions", e.m.Sessions())
	}
	inactive := false
	start := time.Now()
	if _, err := e.svc.UpdateBotUser(e.ctx, e.admin, bot.ID, identity.UpdateBotUserParams{Active: &inactive}); err != nil {
		t.Fatal(err)
	}
	if !a.closed(time.Second) {
		t.Fatalf("the session of a deactivated bot's credential is still open %v later", time.Since(start))
	}
	if _, ok := eventually(time.Second, func() bool { return e.m.Sessions() == 0 }); !ok {
		t.Errorf("%d sessions counted after the close", e.m.Sessions())
	}
	t.Logf("the session closed %v after its bot was deactivated", time.Since(start))
	if r := dialRaw(t, e).auth(t, *c.Token, "", ""); r.Error == "" {
		t.Error("a deactivated bot's token authenticated")
	}
}
