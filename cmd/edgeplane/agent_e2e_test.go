package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
	proxyHTTPS           string // the proxy's TLS listener, with -proxy-https-addr
	certFile             string // the tunnel listener's certificate (self-signed)
}

func startTunnelServe(t *testing.T, extra ...string) *tunnelServe {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := writeTunnelCert(t, dir)
	key := "epk_" + strings.Repeat("a", 40)
	s := startServe(t, append([]string{"-store", "sqlite:" + filepath.Join(dir, "edgeplane.db"), "-proxy", "-proxy-http-addr", "127.0.0.1:0",
		"-proxy-tunnel-addr", "127.0.0.1:0", "-proxy-tunnel-cert", certFile, "-proxy-tunnel-key", keyFile}, extra...),
		map[string]string{"EDGEPLANE_API_KEY": key, "EDGEPLANE_RATE_LIMIT": "0"})
	out := s.stdout.String()
	proxyHTTP := regexp.MustCompile(`(?m)^proxy on http://(\S+)$`).FindStringSubmatch(out)
	agentAddr := regexp.MustCompile(`(?m)^agents connect to (\S+) \(TLS\)$`).FindStringSubmatch(out)
	if proxyHTTP == nil || agentAddr == nil {
		t.Fatalf("stdout: %s", out)
	}
	ts := &tunnelServe{api: apiClient{t: t, base: "http://" + s.addr, key: key}, proxyHTTP: proxyHTTP[1], agentAddr: agentAddr[1], certFile: certFile}
	if m := regexp.MustCompile(`(?m)^proxy on https://(\S+)$`).FindStringSubmatch(out); m != nil {
		ts.proxyHTTPS = m[1]
	}
	return ts
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
	return startAgentArgs(t, append([]string{"-server", servers, "-ca", caFile, "-authtoken", token, "-inspect-addr", "127.0.0.1:0"}, tunnel...), nil)
}

// startAgentArgs runs edgeplane agent with args and env, and waits until
// it prints its lines. The test's end stops it.
func startAgentArgs(t *testing.T, args []string, env map[string]string) *agentProc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := &agentProc{stop: cancel, done: make(chan int, 1), stderr: &syncbuf.Buffer{}}
	t.Cleanup(cancel)
	ready := make(chan string, 1)
	var stdout syncbuf.Buffer
	go func() {
		a.done <- run(ctx, append([]string{"agent"}, args...), func(k string) string { return env[k] }, &stdout, a.stderr, ready)
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

// apiURL returns the base URL of the agent API a's log names.
func (a *agentProc) apiURL(t *testing.T) string {
	t.Helper()
	re := regexp.MustCompile(`msg="agent API" url=(http://\S+)/api\n`)
	var m []string
	if _, ok := within(5*time.Second, func() bool { m = re.FindStringSubmatch(a.stderr.String()); return m != nil }); !ok {
		t.Fatalf("the agent's log names no agent API: %s", a.stderr)
	}
	return m[1]
}

// tlsGreeter is a local TLS app with a certificate of ca for host that
// writes "hello tls" to each connection; it returns its port.
func tlsGreeter(t *testing.T, ca *testCA, host string) string {
	t.Helper()
	chain, key := ca.leaf(t, host, 3)
	cert, err := tls.X509KeyPair([]byte(chain), []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	return greet(t, l, "hello tls")
}

// TestAgentStartFiveEndpoints: one edgeplane agent start -all runs the
// five endpoints of a configuration file, of the three protocols, on one
// session (one Connect, five binds): two http endpoints (one with an
// inline traffic policy, which the server applies), a labeled tunnel an
// HTTPS edge selects, a tcp endpoint and a tls endpoint (the client's
// TLS passed through to the app). Each answers through the proxy; the
// agent prints a line each, NAME URL; its agent API lists the five by
// name with their URLs and counts their connections; a signal closes
// them all.
func TestAgentStartFiveEndpoints(t *testing.T) {
	tcpPort := strconv.Itoa(freePort(t))
	ts := startTunnelServe(t, "-proxy-https-addr", "127.0.0.1:0", "-proxy-tcp-ports", tcpPort+"-"+tcpPort)
	for _, d := range []string{"web.example.com", "api.example.com", "tls.example.com"} {
		ts.api.must(201, "POST", "/reserved_domains", `{"domain":"`+d+`"}`)
	}
	newTenant(ts.api, "dev.example.com", "dev") // the edge of the labeled tunnel
	token := ts.api.must(201, "POST", "/credentials", `{"acl":["*"]}`)["token"].(string)
	upWeb, upAPI, upDev := newUpstream(t, "web"), newUpstream(t, "api"), newUpstream(t, "dev")
	ca := newTestCA(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.yml")
	config := `version: 1
agent:
  authtoken: ` + token + `
  servers: [` + ts.agentAddr + `]
  ca: ` + ts.certFile + `
  inspect_addr: 127.0.0.1:0
endpoints:
  - name: web
    url: http://web.example.com
    upstream: {url: ` + upWeb.URL + `}
  - name: api
    url: http://api.example.com
    upstream: {url: ` + upAPI.URL + `}
    traffic_policy:
      on_http_response:
        - actions:
            - type: add-headers
              config: {headers: {x-policy: from the file}}
  - name: group
    labels: {app: dev}
    upstream: {url: ` + upDev.URL + `}
  - name: db
    url: tcp://tcp.localhost:` + tcpPort + `
    upstream: {url: ` + greeter(t) + `}
  - name: secure
    url: tls://tls.example.com
    upstream: {url: ` + tlsGreeter(t, ca, "tls.example.com") + `}
`
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := agentCLI(t, nil, "config", "check", "-config", file); code != 0 || strings.Count(out, "\nendpoint ") != 5 {
		t.Fatalf("config check: exit %d, %s %s", code, out, errOut)
	}
	a := startAgentArgs(t, []string{"-config", file, "start", "-all"}, nil)
	lines := strings.Split(a.line, "\n")
	want := []string{"web http://web.example.com", "api http://api.example.com", "group tn_", "db tcp://tcp.localhost:" + tcpPort, "secure tls://tls.example.com:443"}
	if len(lines) != 5 {
		t.Fatalf("the agent printed %q", a.line)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want %q...", i, lines[i], w)
		}
	}
	if !strings.HasSuffix(lines[2], " labels app=dev") {
		t.Errorf("the labeled tunnel's line: %q", lines[2])
	}

	c := through(ts.proxyHTTP, nil)
	for _, r := range []struct{ url, body string }{
		{"http://web.example.com/a", "upstream web /a"},
		{"http://api.example.com/b", "upstream api /b"},
		{"http://dev.example.com:443/c", "upstream dev /c"},
	} {
		if _, ok := within(5*time.Second, func() bool { code, body := fetch(c, r.url, "start"); return code == 200 && body == r.body }); !ok {
			code, body := fetch(c, r.url, "start")
			t.Errorf("%s: %d %q; agent log: %s", r.url, code, body, a.stderr)
		}
	}
	resp, err := c.Get("http://api.example.com/h")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Policy"); got != "from the file" {
		t.Errorf("the api endpoint's response lacks the policy's header: %v", resp.Header)
	}
	read := func(dial func() (net.Conn, error)) string {
		conn, err := dial()
		if err != nil {
			return err.Error()
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(conn)
		return string(b)
	}
	if got := read(func() (net.Conn, error) { return net.DialTimeout("tcp", "127.0.0.1:"+tcpPort, 2*time.Second) }); got != "hello" {
		t.Errorf("the tcp endpoint: %q", got)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	if got := read(func() (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", ts.proxyHTTPS, &tls.Config{ServerName: "tls.example.com", RootCAs: pool})
	}); got != "hello tls" {
		t.Errorf("the tls endpoint: %q", got)
	}

	// One session holds the five.
	if sessions := ts.api.must(200, "GET", "/tunnel_sessions", "")["tunnel_sessions"].([]any); len(sessions) != 1 {
		t.Errorf("%d tunnel sessions, want 1", len(sessions))
	}
	if _, ok := within(2*time.Second, func() bool { return strings.Count(a.stderr.String(), `msg="session established"`) == 1 }); !ok {
		t.Errorf("not one session established: %s", a.stderr)
	}

	// The agent API lists them.
	api := a.apiURL(t)
	code, _, body := apiGet(t, "GET", api, "/api/tunnels", "")
	var list struct {
		Tunnels []apiTunnelJSON `json:"tunnels"`
	}
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || len(list.Tunnels) != 5 {
		t.Fatalf("GET /api/tunnels: %d %s %v", code, body, err)
	}
	for i, tun := range list.Tunnels {
		name, url, _ := strings.Cut(lines[i], " ")
		if tun.Name != name || tun.URI != "/api/tunnels/"+name || tun.ID == "" {
			t.Errorf("tunnel %d: %+v, want %s", i, tun, name)
		}
		if tun.Labels == nil && tun.PublicURL != url {
			t.Errorf("%s: public_url %q, want %q", name, tun.PublicURL, url)
		}
	}
	if web := list.Tunnels[0]; web.Proto != "http" || web.Config.Addr != upWeb.URL || web.Metrics.Conns.Count < 1 {
		t.Errorf("web: %+v", web)
	}
	if code, _, body := apiGet(t, "GET", api, "/api/status", ""); code != 200 || !strings.Contains(body, `"status":"online","server":"`+ts.agentAddr+`","sessions":1,"tunnels":5`) {
		t.Errorf("GET /api/status: %d %s", code, body)
	}
	a.stopAndWait(t)
	if _, ok := within(2*time.Second, func() bool {
		return len(ts.api.must(200, "GET", "/endpoints", "")["endpoints"].([]any)) == 0
	}); !ok {
		t.Errorf("endpoints left after the agent stopped: %v", ts.api.must(200, "GET", "/endpoints", ""))
	}
}

// TestAgentTrafficPolicyShortcuts: the shortcuts become a traffic policy
// the server enforces: -basic-auth answers 401 without the password
// (and with a wrong one), 200 with it; -request-header-add reaches the
// app, -response-header-add the client; -cidr-deny refuses a tcp
// endpoint's client from that address.
func TestAgentTrafficPolicyShortcuts(t *testing.T) {
	tcpPort := strconv.Itoa(freePort(t))
	ts := startTunnelServe(t, "-proxy-tcp-ports", tcpPort+"-"+tcpPort)
	ts.api.must(201, "POST", "/reserved_domains", `{"domain":"app.example.com"}`)
	token := ts.api.must(201, "POST", "/credentials", `{"acl":["*"]}`)["token"].(string)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "X-From=%s", r.Header.Get("X-From"))
	}))
	defer app.Close()
	a := ts.startAgent(t, token, "http", app.URL, "-domain", "app.example.com", "-scheme", "http",
		"-basic-auth", "alice:s3cret-pass", "-request-header-add", "X-From: the agent", "-response-header-add", "X-Served-By: edgeplane")
	c := through(ts.proxyHTTP, nil)
	get := func(user, password string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", "http://app.example.com/", nil)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	if _, ok := within(5*time.Second, func() bool { resp, _ := get("alice", "s3cret-pass"); return resp.StatusCode == 200 }); !ok {
		resp, body := get("alice", "s3cret-pass")
		t.Fatalf("with the password: %d %q; agent log: %s", resp.StatusCode, body, a.stderr)
	}
	for _, tc := range []struct{ user, password string }{{"", ""}, {"alice", "wrong"}, {"bob", "s3cret-pass"}} {
		if resp, body := get(tc.user, tc.password); resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("%q:%q: %d %v %q, want 401 asking for Basic", tc.user, tc.password, resp.StatusCode, resp.Header, body)
		}
	}
	resp, body := get("alice", "s3cret-pass")
	if body != "X-From=the agent" || resp.Header.Get("X-Served-By") != "edgeplane" {
		t.Errorf("with the password: %q %v", body, resp.Header)
	}
	eps := ts.api.must(200, "GET", "/endpoints", "")["endpoints"].([]any)
	if len(eps) != 1 || strings.Contains(fmt.Sprint(eps), "s3cret-pass") || !strings.Contains(fmt.Sprint(eps), "$pbkdf2-sha256$") {
		t.Errorf("the endpoint's traffic policy holds the password, or no hash: %v", eps)
	}
	a.stopAndWait(t)

	a = ts.startAgent(t, token, "tcp", greeter(t), "-remote-addr", "tcp.localhost:"+tcpPort, "-cidr-deny", "127.0.0.0/8")
	var conn net.Conn
	if _, ok := within(5*time.Second, func() bool {
		var err error
		conn, err = net.DialTimeout("tcp", "127.0.0.1:"+tcpPort, 2*time.Second)
		return err == nil
	}); !ok {
		t.Fatalf("the tcp endpoint's port does not accept connections; agent log: %s", a.stderr)
	}
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(conn); len(got) > 0 || err != nil {
		t.Errorf("a client from 127.0.0.1 read %q (%v) through an endpoint that denies 127.0.0.0/8", got, err)
	}
	conn.Close()
	a.stopAndWait(t)
	if strings.Contains(a.stderr.String(), `msg=connection`) {
		t.Errorf("a denied connection reached the agent: %s", a.stderr)
	}
}

// TestAgentFailsFast: an agent whose first connection is refused for
// good exits 1 at once (within 2 s, measured from the start) with one
// line that says what is wrong and what to do: an authtoken the server
// refuses (from the flag, or from the configuration file, which the line
// names), or a server certificate its -ca does not sign.
func TestAgentFailsFast(t *testing.T) {
	ts := startTunnelServe(t)
	other := newTestCA(t)
	dir := t.TempDir()
	otherCA := filepath.Join(dir, "other.pem")
	if err := os.WriteFile(otherCA, []byte(other.pem), 0o600); err != nil {
		t.Fatal(err)
	}
	good := ts.api.must(201, "POST", "/credentials", `{"acl":["*"]}`)["token"].(string)
	file := filepath.Join(dir, "agent.yml")
	if err := os.WriteFile(file, []byte("version: 1\nagent:\n  authtoken: ept_revokedOrMistyped\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a wrong authtoken", []string{"-server", ts.agentAddr, "-ca", ts.certFile, "-authtoken", "ept_revokedOrMistyped", "tcp", "22"},
			"edgeplane: the server refused the authtoken: the authtoken is missing, malformed or unknown (ERR_SERVICE_105); give the token of a tunnel credential of the account (POST /credentials makes one) with -authtoken, EDGEPLANE_AUTHTOKEN or edgeplane agent config add-authtoken TOKEN\n"},
		{"a wrong authtoken from the file", []string{"-config", file, "-server", ts.agentAddr, "-ca", ts.certFile, "tcp", "22"},
			"edgeplane: the server refused the authtoken (agent.authtoken in " + file + "): the authtoken is missing, malformed or unknown (ERR_SERVICE_105); give the token"},
		{"an untrusted certificate", []string{"-server", ts.agentAddr, "-ca", otherCA, "-authtoken", good, "tcp", "22"},
			"edgeplane: the tunnel server " + ts.agentAddr + " presented a certificate the agent does not trust: x509: certificate signed by unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr, took := runAgentToExit(t, append([]string{"-inspect-addr", "off"}, tc.args...), nil, 10*time.Second)
			if code != 1 || !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1 and one line starting %q", code, stdout, stderr, tc.want)
			}
			if took > 2*time.Second {
				t.Errorf("exited after %v, want within 2s", took)
			}
			if strings.Contains(stderr, `\n`) || strings.Contains(stderr, "ept_revokedOrMistyped") || strings.Contains(stderr, good) {
				t.Errorf("stderr %q shows a literal \\n or a token", stderr)
			}
			t.Logf("exit %d after %v", code, took.Round(time.Millisecond))
		})
	}
}

// TestAgentRetriesLaterRefusals: once its first session was up, an agent
// keeps retrying whatever the failure, as before: its credential deleted
// (the server closes the session, and refuses the authtoken from then
// on), it logs each refusal on one line (the code in parentheses, no
// literal \n) and runs on until a signal, on which it exits 0.
func TestAgentRetriesLaterRefusals(t *testing.T) {
	ts := startTunnelServe(t)
	ts.api.must(201, "POST", "/reserved_domains", `{"domain":"app.example.com"}`)
	cred := ts.api.must(201, "POST", "/credentials", `{"acl":["bind:app.example.com"]}`)
	a := ts.startAgent(t, cred["token"].(string), "http", "3000", "-domain", "app.example.com", "-scheme", "http")
	ts.api.must(204, "DELETE", "/credentials/"+cred["id"].(string), "")
	refused := regexp.MustCompile(`(?m)^.*msg="session failed; retrying" server=\S+ err=".*\(ERR_SERVICE_105\)"$`)
	if _, ok := within(20*time.Second, func() bool { return len(refused.FindAllString(a.stderr.String(), -1)) >= 2 }); !ok {
		t.Fatalf("no two refusals logged: %s", a.stderr)
	}
	select {
	case code := <-a.done:
		t.Fatalf("the agent exited %d on a refusal after its first session: %s", code, a.stderr)
	default:
	}
	if strings.Contains(a.stderr.String(), `\n`) {
		t.Errorf("a log line holds a literal \\n: %s", a.stderr)
	}
	a.stopAndWait(t)
}

// TestAgentStartPoolsAndBindings: pooling_enabled goes to the server
// with the bind (the SDK's WithPoolingEnabled): a pooled endpoint on the
// URL of an endpoint without pooling is refused, so agent start exits 1
// at once, naming the endpoint and the server's words, on one line.
// (Internal bindings: TestAgentForwardInternal.)
func TestAgentStartPoolsAndBindings(t *testing.T) {
	ts := startTunnelServe(t)
	ts.api.must(201, "POST", "/reserved_domains", `{"domain":"app.example.com"}`)
	token := ts.api.must(201, "POST", "/credentials", `{"acl":["*"]}`)["token"].(string)
	ts.startAgent(t, token, "http", "3000", "-domain", "app.example.com", "-scheme", "http") // without pooling
	dir := t.TempDir()
	for _, tc := range []struct{ name, keys, want string }{
		{"pooled", "    url: http://app.example.com\n    pooling_enabled: true\n", "edgeplane: endpoint web: starting the tunnel: the endpoint 'http://app.example.com' is already online without pooling. Either 1. stop your existing endpoint first, or 2. start both endpoints with pooling enabled to load balance between them (ERR_SERVICE_102)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, tc.name+".yml")
			config := "version: 1\nagent:\n  servers: [" + ts.agentAddr + "]\n  ca: " + ts.certFile + "\n  inspect_addr: 127.0.0.1:0\nendpoints:\n  - name: web\n    upstream: {url: 3000}\n" + tc.keys
			if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr, took := runAgentToExit(t, []string{"-config", file, "-authtoken", token, "start", "web"}, nil, 10*time.Second)
			if code != 1 || !strings.HasSuffix(stderr, "\n"+tc.want) || stdout != "" {
				t.Errorf("exit %d after %v, stdout %q, stderr %q; want 1 and the last line %q", code, took, stdout, stderr, tc.want)
			}
		})
	}
}
