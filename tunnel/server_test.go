package tunnel_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/tunnel"
	"github.com/prometheus/client_golang/prometheus"
	"golang.ngrok.com/ngrok"
	"golang.ngrok.com/ngrok/config"
)

// get sends one HTTP request for tunnel id through the server, as an
// edge proxy does, and returns the response's status and body.
func (e *env) get(t *testing.T, id, path string) (int, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := e.srv.DialTunnel(ctx, "", id, agents.ConnHeader{ClientAddr: clientAddr, Proto: "https", EdgeType: agents.EdgeHTTPS})
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: app.example.com\r\nConnection: close\r\n\r\n", path); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// serve answers every request on l with its path, the client address the
// agent was told and the proxy header's metadata.
func serve(l ngrok.Tunnel) {
	_ = http.Serve(httpListener(l), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s from %s", r.URL.Path, r.RemoteAddr)
	}))
}

func TestLabeledTunnel(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	cred, token := e.token(t, "bind:app=web")
	sess := e.connect(t, e.addr, token)
	tun, err := sess.Listen(context.Background(), config.LabeledTunnel(config.WithLabel("app", "web"), config.WithMetadata("m1")))
	if err != nil {
		t.Fatal(err)
	}
	go serve(tun)

	code, body, err := e.get(t, tun.ID(), "/hello")
	if err != nil || code != 200 || body != "/hello from "+clientAddr.String() {
		t.Fatalf("a request through the tunnel: %d %q %v", code, body, err)
	}

	// The API shows the session and its tunnel.
	page, err := e.svc.ListTunnels(e.ctx, e.admin, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("ListTunnels: %v %v", page, err)
	}
	got := page.Items[0]
	if got.ID != tun.ID() || got.Labels["app"] != "web" || got.TunnelSession == nil || got.Credential.ID != cred.ID || got.Metadata != "m1" {
		t.Errorf("the tunnel as listed: %+v", got)
	}
	ts, err := e.svc.GetTunnelSession(e.ctx, e.admin, got.TunnelSession.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ts.Credential.ID != cred.ID || ts.IP != "127.0.0.1" || ts.AgentVersion == "" || ts.OS == "" || ts.Transport != agents.Transport {
		t.Errorf("the session: %+v", ts)
	}
	if e.m.Sessions() != 1 || e.m.Tunnels() != 1 {
		t.Errorf("metrics: %d sessions, %d tunnels; want 1 and 1", e.m.Sessions(), e.m.Tunnels())
	}

	// Closing the tunnel unregisters it; its ID then reaches nothing.
	if err := tun.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := eventually(time.Second, func() bool {
		p, err := e.svc.ListTunnels(e.ctx, e.admin, edgeplane.ListOptions{})
		return err == nil && len(p.Items) == 0
	}); !ok {
		t.Error("the closed tunnel is still listed")
	}
	if _, _, err := e.get(t, tun.ID(), "/"); !errors.Is(err, agents.ErrNoSession) {
		t.Errorf("a request for the closed tunnel: %v; want ErrNoSession", err)
	}

	// Closing the session removes its record.
	sess.Close()
	if took, ok := eventually(time.Second, func() bool {
		_, err := e.svc.GetTunnelSession(e.ctx, e.admin, ts.ID)
		return err != nil && e.m.Sessions() == 0
	}); !ok {
		t.Errorf("the closed session is still there %v later", took)
	}
}

func TestRefusals(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	_, token := e.token(t, "bind:app=web", "bind:env=*")
	sess := e.connect(t, e.addr, token)
	tests := []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"a label outside the ACL", map[string]string{"app": "db"}, []string{"app=db", "ERR_SERVICE_104"}},
		{"one of two labels outside the ACL", map[string]string{"app": "web", "team": "x"}, []string{"team=x", "ERR_SERVICE_104"}},
		{"an invalid label", map[string]string{"app": "not valid!"}, []string{"ERR_SERVICE_100"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []config.LabeledTunnelOption
			for k, v := range tt.labels {
				opts = append(opts, config.WithLabel(k, v))
			}
			_, err := sess.Listen(context.Background(), config.LabeledTunnel(opts...))
			if err == nil {
				t.Fatal("the tunnel started")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	// Allowed by the wildcard rule.
	if _, err := sess.Listen(context.Background(), config.LabeledTunnel(config.WithLabel("env", "prod"))); err != nil {
		t.Errorf("bind:env=* refused env=prod: %v", err)
	}
	// An ACL of labels permits no domain: an endpoint is refused, saying
	// which rule it needs (endpoint_test.go has the endpoints' rules).
	_, err := sess.Listen(context.Background(), config.HTTPEndpoint(config.WithDomain("app.example.com")))
	if err == nil || !strings.Contains(err.Error(), "ERR_SERVICE_104") || !strings.Contains(err.Error(), "bind:app.example.com") {
		t.Errorf("an endpoint bind: %v; want ERR_SERVICE_104 naming bind:app.example.com", err)
	}
}

func TestAuthRefused(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	for _, token := range []string{"not-a-token", strings.Repeat("x", 40), ""} {
		_, err := ngrok.Connect(context.Background(), ngrok.WithServer(e.addr), ngrok.WithCA(e.pool), ngrok.WithAuthtoken(token),
			ngrok.WithDisconnectHandler(func(_ context.Context, s ngrok.Session, err error) {
				s.Close() // the SDK retries a refused Auth forever: end it after the first
			}))
		if err == nil || !strings.Contains(err.Error(), "ERR_SERVICE_105") {
			t.Errorf("token %q: %v; want an authentication failure with ERR_SERVICE_105", token, err)
		}
	}
	if e.m.Sessions() != 0 {
		t.Errorf("%d sessions after refusals", e.m.Sessions())
	}
}

func TestDeletedCredentialClosesSession(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	cred, token := e.token(t)
	// A hand-made agent: the SDK would reconnect, and closing an SDK
	// session while its reconnect's Auth is being written is a data race
	// inside its muxado client (v2.0.2; see noReconnect).
	a := dialRaw(t, e)
	r := a.auth(t, token, "", "")
	if r.Error != "" {
		t.Fatalf("Auth: %+v", r)
	}
	e.reserve(t, "gone.example.com")
	b := a.bind(t, "", "", "gone.example.com")
	if b.Error != "" {
		t.Fatalf("Bind: %+v", b)
	}
	start := time.Now()
	if err := e.svc.DeleteCredential(e.ctx, e.admin, cred.ID); err != nil {
		t.Fatal(err)
	}
	if !a.closed(time.Second) {
		t.Fatalf("the session of a deleted credential is still open %v later", time.Since(start))
	}
	t.Logf("the session closed %v after its credential was deleted", time.Since(start))
	if _, ok := eventually(time.Second, func() bool { return e.m.Sessions() == 0 }); !ok {
		t.Errorf("%d sessions counted after the close", e.m.Sessions())
	}
	if _, err := e.srv.DialTunnel(e.ctx, "", b.ID, agents.ConnHeader{ClientAddr: clientAddr, Proto: "http"}); !errors.Is(err, agents.ErrNoSession) {
		t.Errorf("the endpoint of a deleted credential: %v; want no session", err)
	}
}

func TestSilentAgentIsDropped(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	_, token := e.token(t)
	r := newRelay(t, e.addr)
	sess := e.connect(t, r.addr(), token, ngrok.WithHeartbeatInterval(50*time.Millisecond), ngrok.WithHeartbeatTolerance(100*time.Millisecond), noReconnect)
	if _, err := sess.Listen(context.Background(), config.LabeledTunnel(config.WithLabel("app", "web"))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // heartbeats flow: the session stays
	if e.m.Sessions() != 1 {
		t.Fatalf("%d sessions while the agent beats; want 1", e.m.Sessions())
	}
	r.freeze()
	took, ok := eventually(2*time.Second, func() bool { return e.m.Sessions() == 0 })
	if !ok {
		t.Fatalf("a silent agent is still held %v later", took)
	}
	t.Logf("a silent agent (interval 50ms, tolerance 100ms) was dropped %v after it fell silent", took)
}

func TestStopFromTheAPI(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	_, token := e.token(t)
	stopped := make(chan struct{})
	e.connect(t, e.addr, token, ngrok.WithStopHandler(func(context.Context, ngrok.Session) error {
		close(stopped)
		return nil
	}))
	page, err := e.svc.ListTunnelSessions(e.ctx, e.admin, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("ListTunnelSessions: %v %v", page, err)
	}
	if err := e.svc.StopTunnelSession(e.ctx, e.admin, page.Items[0].ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(2 * time.Second):
		t.Fatal("the agent's stop handler did not run")
	}
	if _, ok := eventually(time.Second, func() bool { return e.m.Sessions() == 0 }); !ok {
		t.Error("the stopped session is still held")
	}
}

func TestReconnect(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	_, token := e.token(t)
	r := newRelay(t, e.addr)
	var connects atomic.Int32
	sess := e.connect(t, r.addr(), token, ngrok.WithConnectHandler(func(context.Context, ngrok.Session) { connects.Add(1) }))
	tun, err := sess.Listen(context.Background(), config.LabeledTunnel(config.WithLabel("app", "web")))
	if err != nil {
		t.Fatal(err)
	}
	go serve(tun)
	first := connects.Load()
	r.breakAll()
	if _, ok := eventually(5*time.Second, func() bool { return connects.Load() > first && e.m.Sessions() == 1 && e.m.Tunnels() == 1 }); !ok {
		t.Fatalf("the agent did not reconnect: %d connects, %d sessions, %d tunnels", connects.Load(), e.m.Sessions(), e.m.Tunnels())
	}
	// The labeled tunnel is bound again, under the ID the server gave it.
	page, err := e.svc.ListTunnels(e.ctx, e.admin, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("tunnels after the reconnect: %v %v", page, err)
	}
	code, body, err := e.get(t, page.Items[0].ID, "/again")
	if err != nil || code != 200 || !strings.HasPrefix(body, "/again") {
		t.Errorf("a request after the reconnect: %d %q %v", code, body, err)
	}
}

// TestNarrowedACLStopsTunnel: an ACL update that no longer allows a
// tunnel an agent holds removes it, and the agent is told (StopTunnel:
// its Accept fails with the server's message); the tunnel still allowed
// keeps serving.
func TestNarrowedACLStopsTunnel(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	cred, token := e.token(t, "bind:app=web", "bind:app=api")
	sess := e.connect(t, e.addr, token)
	web, err := sess.Listen(context.Background(), config.LabeledTunnel(config.WithLabel("app", "web")))
	if err != nil {
		t.Fatal(err)
	}
	go serve(web)
	api, err := sess.Listen(context.Background(), config.LabeledTunnel(config.WithLabel("app", "api")))
	if err != nil {
		t.Fatal(err)
	}
	wantStoppedByACL(t, e, cred.ID, []string{"bind:app=web"}, api, web, "tunnel")
}

// TestMetricsByKind: edgeplane_tunnel_tunnels counts labeled tunnels and
// endpoints by kind, and sessions.
func TestMetricsByKind(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	e.reserve(t, "app.example.com")
	_, token := e.token(t)
	sess := e.connect(t, e.addr, token)
	if _, err := sess.Listen(context.Background(), config.LabeledTunnel(config.WithLabel("app", "web"))); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Listen(context.Background(), config.HTTPEndpoint(config.WithDomain("app.example.com"), config.WithScheme(config.SchemeHTTP))); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.m)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			for _, l := range m.GetLabel() {
				name += "/" + l.GetValue()
			}
			got[name] = m.GetGauge().GetValue()
		}
	}
	for name, want := range map[string]float64{"edgeplane_tunnel_sessions": 1, "edgeplane_tunnel_tunnels/labeled": 1,
		"edgeplane_tunnel_tunnels/http": 1, "edgeplane_tunnel_tunnels/https": 0, "edgeplane_tunnel_tunnels/tcp": 0} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
}
