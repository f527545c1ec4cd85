package tunnel_test

import (
	"context"
	"crypto/tls"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/tunnel"
	"golang.ngrok.com/ngrok"
	"golang.ngrok.com/ngrok/config"
)

// TestInternalBinding: the SDK unchanged binds an internal endpoint
// (WithBindings("internal")) at a .internal URL, with no reserved
// domain; an internal binding without a .internal URL, and a public one
// with one, are refused in words that say so.
func TestInternalBinding(t *testing.T) {
	e := newEnv(t, endpointOptions)
	_, token := e.token(t)
	sess := e.connect(t, e.addr, token)

	tun, err := sess.Listen(context.Background(), config.HTTPEndpoint(config.WithURL("https://api.internal"), config.WithBindings("internal")))
	if err != nil {
		t.Fatal(err)
	}
	go serve(tun)
	if tun.URL() != "https://api.internal" {
		t.Errorf("URL %q", tun.URL())
	}
	if ep := e.endpoint(t, tun.ID()); !ep.IsInternal() || ep.Domain != nil || ep.Hostport != "api.internal:443" {
		t.Errorf("the record: %+v", ep)
	}
	if code, body, err := e.get(t, tun.ID(), "/hi"); err != nil || code != 200 || !strings.HasPrefix(body, "/hi") {
		t.Errorf("a request handed to the internal endpoint: %d %q %v", code, body, err)
	}
	port, err := sess.Listen(context.Background(), config.HTTPEndpoint(config.WithURL("http://api.internal:8080"), config.WithScheme(config.SchemeHTTP),
		config.WithBindings("internal")))
	if err != nil || port.URL() != "http://api.internal:8080" {
		t.Fatalf("an internal endpoint with a port: %v", err)
	}

	for _, tc := range []struct {
		name string
		cfg  config.Tunnel
		want []string
	}{
		{"internal, a public URL", config.HTTPEndpoint(config.WithURL("https://app.example.com"), config.WithBindings("internal")),
			[]string{"Opts.URL", ".internal", "ERR_SERVICE_100"}},
		{"internal, no URL", config.HTTPEndpoint(config.WithBindings("internal")), []string{"Opts.URL", "is required", ".internal"}},
		{"public, an internal URL", config.HTTPEndpoint(config.WithURL("https://db.internal")), []string{"Opts.URL", "binding internal"}},
		{"internal, tcp", config.TCPEndpoint(config.WithURL("tcp://db.internal:5432"), config.WithBindings("internal")),
			[]string{"http or https", "ERR_SERVICE_100"}},
		{"internal twice", config.HTTPEndpoint(config.WithURL("https://api.internal"), config.WithBindings("internal")),
			[]string{"already bound", "ERR_SERVICE_102"}},
		{"an unknown binding", config.HTTPEndpoint(config.WithURL("https://x.internal"), config.WithBindings("kubernetes")),
			[]string{"Extra.Bindings[0]", "public or internal"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sess.Listen(context.Background(), tc.cfg)
			if err == nil {
				t.Fatal("bound")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestDomainBase: with Options.DomainBase, an http endpoint that names
// no domain gets <random>.<base>, the same name after the SDK
// reconnects and binds again; without it the bind is refused saying a
// domain is needed.
func TestDomainBase(t *testing.T) {
	e := newEnv(t, tunnel.Options{DomainBase: "agents.example.test"})
	_, token := e.token(t)
	r := newRelay(t, e.addr)
	var connects atomic.Int32
	sess := e.connect(t, r.addr(), token, ngrok.WithConnectHandler(func(context.Context, ngrok.Session) { connects.Add(1) }))
	tun, err := sess.Listen(context.Background(), config.HTTPEndpoint())
	if err != nil {
		t.Fatal(err)
	}
	go serve(tun)
	url, id := tun.URL(), tun.ID()
	if !regexp.MustCompile(`^https://[a-z2-7]{16}\.agents\.example\.test$`).MatchString(url) {
		t.Fatalf("URL %q, want https://<16 base32 characters>.agents.example.test", url)
	}
	before := e.endpoint(t, id).TunnelSession.ID
	first := connects.Load()
	r.breakAll()
	if _, ok := eventually(5*time.Second, func() bool {
		ep, err := e.svc.Host().Tunnels().GetEndpoint(e.ctx, e.admin.AccountID, id)
		return connects.Load() != first && err == nil && ep.TunnelSession.ID != before
	}); !ok {
		t.Fatal("the agent did not bind again")
	}
	if ep := e.endpoint(t, id); ep.URL != url || tun.URL() != url {
		t.Errorf("after the reconnect: record %s, SDK %s; before %s", ep.URL, tun.URL(), url)
	}
	if code, _, err := e.get(t, id, "/after"); err != nil || code != 200 {
		t.Errorf("a request after the reconnect: %d %v", code, err)
	}
	other, err := sess.Listen(context.Background(), config.HTTPEndpoint(config.WithScheme(config.SchemeHTTP)))
	if err != nil || !strings.HasPrefix(other.URL(), "http://") || other.URL() == "http://"+strings.TrimPrefix(url, "https://") {
		t.Errorf("a second endpoint: %v %v", other, err)
	}

	plain := newEnv(t, endpointOptions)
	_, token = plain.token(t)
	_, err = plain.connect(t, plain.addr, token).Listen(context.Background(), config.HTTPEndpoint())
	if err == nil || !strings.Contains(err.Error(), "Domain: is required for an https endpoint") || !strings.Contains(err.Error(), "-agent-domain-base") {
		t.Errorf("no domain and no base: %v", err)
	}

	for _, bad := range []string{"*.agents.example.test", "agents.example.test:443", "localhost"} {
		if _, err := tunnel.NewServer(tunnel.Options{Host: e.svc.Host().Tunnels(), Feed: e.st, TLSConfig: &tls.Config{Certificates: []tls.Certificate{e.cert}}, DomainBase: bad}); err == nil ||
			!strings.Contains(err.Error(), "DomainBase") {
			t.Errorf("DomainBase %q: %v", bad, err)
		}
	}
}
