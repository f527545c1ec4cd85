package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/internal/syncbuf"
)

// writeTunnelCert writes a self-signed certificate for 127.0.0.1 and its
// key as PEM files in dir, and returns their paths.
func writeTunnelCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "edgeplane tunnel test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tunnel.crt"), filepath.Join(dir, "tunnel.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// tunnelServe is edgeplane serve -proxy with a tunnel listener on a
// SQLite file, as the agent tests start it.
type tunnelServe struct {
	api                  apiClient
	proxyHTTP, agentAddr string // the proxy's plain listener, the agents' TLS listener
	certFile             string // the tunnel listener's certificate (self-signed)
}

func startTunnelServe(t *testing.T) *tunnelServe {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := writeTunnelCert(t, dir)
	key := "epk_" + strings.Repeat("a", 40)
	s := startServe(t, []string{"-store", "sqlite:" + filepath.Join(dir, "edgeplane.db"), "-proxy", "-proxy-http-addr", "127.0.0.1:0",
		"-proxy-tunnel-addr", "127.0.0.1:0", "-proxy-tunnel-cert", certFile, "-proxy-tunnel-key", keyFile},
		map[string]string{"EDGEPLANE_API_KEY": key, "EDGEPLANE_RATE_LIMIT": "0"})
	out := s.stdout.String()
	proxyHTTP := regexp.MustCompile(`(?m)^proxy on http://(\S+)$`).FindStringSubmatch(out)
	agentAddr := regexp.MustCompile(`(?m)^agents connect to (\S+) \(TLS\)$`).FindStringSubmatch(out)
	if proxyHTTP == nil || agentAddr == nil {
		t.Fatalf("stdout: %s", out)
	}
	return &tunnelServe{api: apiClient{t: t, base: "http://" + s.addr, key: key}, proxyHTTP: proxyHTTP[1], agentAddr: agentAddr[1], certFile: certFile}
}

// agentProc is edgeplane agent running in this process.
type agentProc struct {
	line   string // what it printed once the tunnel was up
	stop   context.CancelFunc
	done   chan int
	stderr *syncbuf.Buffer
}

// startAgent runs edgeplane agent against ts with token and the tunnel
// args, and waits until it prints its line. The test's end stops it.
func (ts *tunnelServe) startAgent(t *testing.T, token string, tunnel ...string) *agentProc {
	t.Helper()
	return startAgentOn(t, ts.agentAddr, ts.certFile, token, tunnel...)
}

// startAgentOn runs edgeplane agent against servers (-server) with the
// roots of caFile, token and the tunnel args, and waits until it prints
// its line. The test's end stops it.
func startAgentOn(t *testing.T, servers, caFile, token string, tunnel ...string) *agentProc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := &agentProc{stop: cancel, done: make(chan int, 1), stderr: &syncbuf.Buffer{}}
	t.Cleanup(cancel)
	ready := make(chan string, 1)
	var stdout syncbuf.Buffer
	go func() {
		a.done <- run(ctx, append([]string{"agent", "-server", servers, "-ca", caFile, "-authtoken", token}, tunnel...),
			func(string) string { return "" }, &stdout, a.stderr, ready)
	}()
	select {
	case a.line = <-ready:
	case code := <-a.done:
		t.Fatalf("the agent exited with %d: %s %s", code, stdout.String(), a.stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("the agent did not start: %s", a.stderr.String())
	}
	return a
}

// stopAndWait stops the agent as SIGINT does and checks it exits 0.
func (a *agentProc) stopAndWait(t *testing.T) {
	t.Helper()
	a.stop()
	select {
	case code := <-a.done:
		if code != 0 {
			t.Errorf("the agent exited with %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not stop")
	}
}

// TestServeProxyAgent: edgeplane serve -proxy with a tunnel listener on
// a SQLite file, and edgeplane agent (the SDK) forwarding a labeled
// tunnel to a local web server that has no public address: a request to
// the HTTPS edge's host reaches it through the agent's own connection,
// and the API shows the agent's session. When the agent stops, the edge
// has no tunnel again.
func TestServeProxyAgent(t *testing.T) {
	ts := startTunnelServe(t)
	tn := newTenant(ts.api, "dev.example.com", "dev")
	up := newUpstream(t, "dev")
	_, upPort, _ := net.SplitHostPort(strings.TrimPrefix(up.URL, "http://"))
	a := ts.startAgent(t, tn.credToken, "http", upPort, "-label", "app=dev")
	if !strings.Contains(a.line, "tn_") || !strings.Contains(a.line, "app=dev") {
		t.Errorf("the agent printed %q", a.line)
	}
	c := through(ts.proxyHTTP, nil)
	took, ok := within(5*time.Second, func() bool {
		code, body := fetch(c, "http://dev.example.com:443/x", "agent")
		return code == 200 && body == "upstream dev /x"
	})
	if !ok {
		code, body := fetch(c, "http://dev.example.com:443/x", "agent")
		t.Fatalf("through the agent: %d %q; agent log: %s", code, body, a.stderr.String())
	}
	t.Logf("the edge served through the agent %v after the agent was up", took)
	sessions := ts.api.must(200, "GET", "/tunnel_sessions", "")["tunnel_sessions"].([]any)
	if len(sessions) != 1 {
		t.Errorf("tunnel sessions: %v", sessions)
	}
	tunnels := ts.api.must(200, "GET", "/tunnels", "")["tunnels"].([]any)
	if len(tunnels) != 1 || tunnels[0].(map[string]any)["tunnel_session"] == nil {
		t.Errorf("tunnels: %v", tunnels)
	}

	a.stopAndWait(t) // SIGINT: the agent closes its tunnel and session
	if _, ok := within(2*time.Second, func() bool {
		code, _ := fetch(c, "http://dev.example.com:443/x", "agent")
		return code == http.StatusServiceUnavailable
	}); !ok {
		code, body := fetch(c, "http://dev.example.com:443/x", "agent")
		t.Errorf("after the agent stopped: %d %q; want 503", code, body)
	}
}

// TestServeProxyAgentEndpoint: a public URL for a local app. edgeplane
// serve -proxy with a tunnel listener on a SQLite file; the account
// reserves app.example.com and makes a credential that may bind it;
// edgeplane agent http PORT -domain app.example.com -scheme http binds
// the endpoint and prints its URL; a client that resolves the name to
// the proxy (curl --connect-to) reaches the local web server through the
// agent's connection. GET /endpoints shows the endpoint.
func TestServeProxyAgentEndpoint(t *testing.T) {
	ts := startTunnelServe(t)
	ts.api.must(201, "POST", "/reserved_domains", `{"domain":"app.example.com"}`)
	token := ts.api.must(201, "POST", "/credentials", `{"acl":["bind:app.example.com"]}`)["token"].(string)
	up := newUpstream(t, "local")
	_, upPort, _ := net.SplitHostPort(strings.TrimPrefix(up.URL, "http://"))
	a := ts.startAgent(t, token, "http", upPort, "-domain", "app.example.com", "-scheme", "http")
	if a.line != "http://app.example.com" {
		t.Errorf("the agent printed %q; want the endpoint's URL", a.line)
	}
	c := through(ts.proxyHTTP, nil) // as curl --connect-to app.example.com:80:PROXY
	took, ok := within(5*time.Second, func() bool {
		code, body := fetch(c, "http://app.example.com/hello", "endpoint")
		return code == 200 && body == "upstream local /hello"
	})
	if !ok {
		code, body := fetch(c, "http://app.example.com/hello", "endpoint")
		t.Fatalf("through the endpoint: %d %q; agent log: %s", code, body, a.stderr.String())
	}
	t.Logf("the endpoint served %v after the agent printed its URL", took)
	eps := ts.api.must(200, "GET", "/endpoints", "")["endpoints"].([]any)
	if len(eps) != 1 || eps[0].(map[string]any)["public_url"] != "http://app.example.com" || eps[0].(map[string]any)["type"] != "agent" {
		t.Errorf("endpoints: %v", eps)
	}
	a.stopAndWait(t)
	if _, ok := within(2*time.Second, func() bool {
		code, _ := fetch(c, "http://app.example.com/hello", "endpoint")
		return code == http.StatusNotFound
	}); !ok {
		code, body := fetch(c, "http://app.example.com/hello", "endpoint")
		t.Errorf("after the agent stopped: %d %q; want 404 (no endpoint serves the host)", code, body)
	}
}
