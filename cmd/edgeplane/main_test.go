package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/internal/syncbuf"
)

// server is a serve run in progress.
type server struct {
	addr           string
	stdout, stderr *syncbuf.Buffer
	stop           func() int
}

func startServe(t *testing.T, args []string, env map[string]string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}}
	ready := make(chan string, 1)
	done := make(chan int, 1)
	if !slices.Contains(args, "-store") {
		args = append([]string{"-store", "sqlite:" + filepath.Join(t.TempDir(), "edgeplane.db")}, args...)
	}
	go func() {
		done <- run(ctx, append([]string{"serve", "-addr", "127.0.0.1:0"}, args...), func(k string) string { return env[k] }, s.stdout, s.stderr, ready)
	}()
	select {
	case s.addr = <-ready:
	case code := <-done:
		cancel()
		t.Fatalf("serve exited with %d: %s %s", code, s.stdout, s.stderr)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("serve not ready")
	}
	stopped := false
	s.stop = func() int {
		if stopped {
			return 0
		}
		stopped = true
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(20 * time.Second):
			t.Fatal("no graceful shutdown")
			return -1
		}
	}
	t.Cleanup(func() { s.stop() })
	return s
}

func get(t *testing.T, url string, header http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestServe(t *testing.T) {
	s := startServe(t, []string{"-metrics-addr", "127.0.0.1:0"}, map[string]string{"EDGEPLANE_RATE_LIMIT": "0"})
	out := s.stdout.String()
	key := regexp.MustCompile(`admin API key \(shown once\): (epk_\S+)`).FindStringSubmatch(out)
	if key == nil || !strings.Contains(out, "sealing key: created ") || !strings.Contains(out, "listening on http://"+s.addr) {
		t.Fatalf("stdout: %s", out)
	}
	base := "http://" + s.addr
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(t, base+path, nil); code != 200 || body != "ok\n" {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	auth := http.Header{"Authorization": {"Bearer " + key[1]}, "Service-Version": {"2"}}
	if code, body := get(t, base+"/credentials", auth); code != 200 || !strings.Contains(body, `"credentials":[]`) {
		t.Errorf("GET /credentials: %d %s", code, body)
	}
	if code, _ := get(t, base+"/credentials", nil); code != 401 && code != 400 {
		t.Errorf("without a key: %d", code)
	}
	// A method of the client's own invention is counted as "other": each
	// would be a new series.
	brew, err := http.NewRequest("BREW", base+"/credentials", nil)
	if err != nil {
		t.Fatal(err)
	}
	brew.Header = auth
	if resp, err := http.DefaultClient.Do(brew); err != nil || resp.StatusCode != 405 {
		t.Errorf("BREW /credentials: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	metricsAddr := regexp.MustCompile(`metrics on http://(\S+)/metrics`).FindStringSubmatch(out)
	if metricsAddr == nil {
		t.Fatalf("no metrics address: %s", out)
	}
	_, metrics := get(t, "http://"+metricsAddr[1]+"/metrics", nil)
	if strings.Contains(metrics, "BREW") {
		t.Errorf("metrics name the method BREW")
	}
	for _, want := range []string{`edgeplane_http_requests_total{code="200",method="GET",route="GET /credentials"} 1`,
		`edgeplane_http_requests_total{code="400",method="GET",route="GET /credentials"} 1`,
		`edgeplane_http_requests_total{code="405",method="other",route="/credentials"} 1`,
		`edgeplane_http_request_duration_seconds_bucket{route="GET /credentials"`, `edgeplane_store_operation_duration_seconds_count{op="get"}`,
		"edgeplane_event_delivery_leader", "go_goroutines"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// serve exports only what it runs: not the counters of an in-process
	// sink it never uses, which would stay 0 beside the deliveries.
	for _, gone := range []string{"edgeplane_event_queue_depth", "edgeplane_event_delivered_total", "edgeplane_event_dropped_total"} {
		if strings.Contains(metrics, gone) {
			t.Errorf("metrics show %s, which counts nothing serve runs", gone)
		}
	}
	if code := s.stop(); code != 0 || !strings.Contains(s.stdout.String(), "shut down") {
		t.Errorf("stop: exit %d, %s", code, s.stdout)
	}
}

func TestServeFromEnvironment(t *testing.T) {
	key := "epk_" + strings.Repeat("e", 40)
	s := startServe(t, nil, map[string]string{"EDGEPLANE_API_KEY": key, "EDGEPLANE_SEAL_KEY": "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=",
		"EDGEPLANE_LOG_FORMAT": "json"})
	if out := s.stdout.String(); !strings.Contains(out, "admin API key: from EDGEPLANE_API_KEY") || strings.Contains(out, "sealing key (shown once") {
		t.Errorf("stdout: %s", out)
	}
	auth := http.Header{"Authorization": {"Bearer " + key}, "Service-Version": {"2"}}
	if code, _ := get(t, "http://"+s.addr+"/credentials", auth); code != 200 {
		t.Errorf("with EDGEPLANE_API_KEY: %d", code)
	}
	s.stop()
	if !strings.Contains(s.stderr.String(), `"msg":`) {
		t.Errorf("EDGEPLANE_LOG_FORMAT=json not applied: %s", s.stderr)
	}
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		code int
		out  string // in stdout+stderr
	}{
		{"no command", nil, nil, 2, "usage: edgeplane COMMAND"},
		{"help", []string{"-h"}, nil, 0, "Commands:"},
		{"unknown command", []string{"frobnicate"}, nil, 2, `unknown command "frobnicate"`},
		{"serve -h", []string{"serve", "-h"}, nil, 0, "-rate-window"},
		{"bad flag", []string{"serve", "-nope"}, nil, 2, "flag provided but not defined: -nope"},
		{"bad env", []string{"serve"}, map[string]string{"EDGEPLANE_RATE_LIMIT": "many"}, 2, `EDGEPLANE_RATE_LIMIT="many" (the flag -rate-limit): want a whole number, such as 120`},
		{"bad env bool", []string{"serve", "-store", "memory:"}, map[string]string{"EDGEPLANE_PROXY": "yes"}, 2, `EDGEPLANE_PROXY="yes" (the flag -proxy): want true or false (or 1, 0, t, f)`},
		{"bad env duration", []string{"proxy"}, map[string]string{"EDGEPLANE_IDLE_TIMEOUT": "5"}, 2, `EDGEPLANE_IDLE_TIMEOUT="5" (the flag -idle-timeout): want a duration: a number and a unit (ms, s, m, h), such as 5m0s or 1h30m`},
		{"bad flag value", []string{"serve", "-rate-window", "soon"}, nil, 2, `-rate-window "soon": want a duration`},
		{"bad admin env", []string{"admin", "create-user", "-store", "memory:"}, map[string]string{"EDGEPLANE_ADMIN": "sure"}, 2, `EDGEPLANE_ADMIN="sure" (the flag -admin): want true or false`},
		{"bad log format", []string{"serve", "-log-format", "xml"}, nil, 2, `-log-format "xml"`},
		{"half TLS", []string{"serve", "-tls-cert", "c.pem"}, nil, 2, "-tls-cert and -tls-key go together"},
		{"bad store", []string{"serve", "-store", "mongodb://u:secret@x"}, nil, 2, `-store "mongodb://…"`},
		{"bad seal key", []string{"serve", "-store", "memory:"}, map[string]string{"EDGEPLANE_SEAL_KEY": "short"}, 1, "EDGEPLANE_SEAL_KEY: want the standard base64 of 32 bytes"},
		{"admin without command", []string{"admin"}, nil, 2, "which command"},
		{"admin help", []string{"admin", "-h"}, nil, 0, "create-api-key"},
		{"admin unknown", []string{"admin", "drop-everything"}, nil, 2, `unknown command "drop-everything"`},
		{"admin create-account", []string{"admin", "create-account", "-store", "memory:", "-name", "acme"}, nil, 0, "acct_"},
		{"admin create-account without name", []string{"admin", "create-account", "-store", "memory:"}, nil, 1, "edgeplane: -name: is required\n"},
		{"admin create-api-key without owner", []string{"admin", "create-api-key", "-store", "memory:", "-account", "acct_x"}, nil, 1, "edgeplane: -owner: is required\n"},
		{"proxy -h", []string{"proxy", "-h"}, nil, 0, "-https-addr"},
		{"proxy without a listener", []string{"proxy", "-store", "memory:"}, nil, 2, "-http-addr or -https-addr (or both) is required"},
		{"proxy on memory:", []string{"proxy", "-http-addr", ":0", "-store", "memory:"}, nil, 2, "-store memory: is this process's alone"},
		{"proxy on a missing file", []string{"proxy", "-http-addr", ":0", "-store", "sqlite:/nonexistent/edgeplane.db"}, nil, 1, "the file does not exist; start edgeplane serve on it first"},
		{"proxy bad trusted proxies", []string{"proxy", "-https-addr", ":0", "-trusted-proxies", "10.0.0.0/99"}, nil, 2, "-trusted-proxies"},
		{"proxy bad write timeout", []string{"proxy", "-https-addr", ":0", "-write-timeout", "0s"}, nil, 2, "-write-timeout 0s: want a positive duration"},
		{"proxy bad upstream timeout", []string{"proxy", "-https-addr", ":0"}, map[string]string{"EDGEPLANE_UPSTREAM_TIMEOUT": "-1s"}, 2, "-upstream-timeout -1s"},
		{"proxy small response header bound", []string{"proxy", "-https-addr", ":0", "-max-response-header-bytes", "100"}, nil, 2, "-max-response-header-bytes 100: want at least 1024"},
		{"serve -proxy small response header bound", []string{"serve", "-store", "memory:", "-proxy", "-proxy-max-response-header-bytes", "0"}, nil, 2, "-proxy-max-response-header-bytes 0: want at least 1024"},
		{"proxy store unreachable", []string{"proxy", "-http-addr", "127.0.0.1:0", "-store", "postgres://u:secret@127.0.0.1:1/db?connect_timeout=5"}, map[string]string{"EDGEPLANE_SEAL_KEY": "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="}, 1, "connect: connection refused"},
		{"proxy -node-addr without agents", []string{"proxy", "-http-addr", ":0", "-node-addr", "127.0.0.1:0"}, nil, 2, "-node-addr needs -tunnel-addr"},
		{"proxy -node-addr on every interface", []string{"proxy", "-http-addr", ":0", "-tunnel-addr", ":0", "-node-addr", ":7443"}, nil, 2, "give -node-advertise"},
		{"proxy bad -node-advertise", []string{"proxy", "-http-addr", ":0", "-tunnel-addr", ":0", "-node-addr", ":7443", "-node-advertise", "edge-1.example.com"}, nil, 2, `-node-advertise "edge-1.example.com": want HOST:PORT`},
		{"proxy -node-advertise alone", []string{"proxy", "-http-addr", ":0", "-node-advertise", "edge-1.example.com:7443"}, nil, 2, "-node-advertise needs -node-addr"},
		{"proxy short -node-lease", []string{"proxy", "-http-addr", ":0", "-node-lease", "1s"}, nil, 2, "-node-lease 1s: want at least 3s"},
		{"proxy short -resume-token-ttl", []string{"proxy", "-http-addr", ":0", "-resume-token-ttl", "10ms"}, nil, 2, "-resume-token-ttl 10ms: want at least 1s"},
		{"serve -proxy without a listener", []string{"serve", "-store", "memory:", "-proxy", "-proxy-http-addr", ""}, nil, 2, "-proxy-http-addr or -proxy-https-addr (or both) is required"},
		{"serve -proxy bad trusted proxies", []string{"serve", "-store", "memory:", "-proxy", "-proxy-trusted-proxies", "nope"}, nil, 2, "-proxy-trusted-proxies"},
		{"register-tunnel bad labels", []string{"admin", "register-tunnel", "-store", "memory:", "-token", "x", "-labels", "app"}, nil, 2, `-labels: "app" is not key=value`},
		{"register-tunnel bad lease", []string{"admin", "register-tunnel", "-store", "memory:", "-token", "x", "-tunnel-lease", "0s"}, nil, 2, "-tunnel-lease 0s"},
		{"register-tunnel bad token", []string{"admin", "register-tunnel", "-store", "memory:", "-token", "ept_nope", "-labels", "app=a"}, nil, 1, "the authtoken is missing, malformed or unknown"},
		{"admin revoke unknown key", []string{"admin", "revoke-api-key", "-store", "memory:", "-account", "acct_x", "-id", "ak_x"}, nil, 1, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a command that should have failed but serves ends
			defer cancel()
			code := run(ctx, tc.args, func(k string) string { return tc.env[k] }, &out, &out, nil)
			if code != tc.code || !strings.Contains(out.String(), tc.out) {
				t.Errorf("exit %d, want %d; output %q lacks %q", code, tc.code, out.String(), tc.out)
			}
			if strings.Contains(strings.Join(tc.args, " "), ":secret@") && strings.Contains(out.String(), "secret") {
				t.Errorf("the store URL's password is echoed: %q", out.String())
			}
		})
	}
}

// TestServeTLS: -tls-cert and -tls-key serve HTTPS; a crypto/tls client
// that trusts the certificate reaches the API.
func TestServeTLS(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(priv)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)

	s := startServe(t, []string{"-tls-cert", certFile, "-tls-key", keyFile}, nil)
	if !strings.Contains(s.stdout.String(), "listening on https://"+s.addr) {
		t.Errorf("stdout: %s", s.stdout)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	resp, err := client.Get("https://" + s.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Errorf("HTTPS /healthz: %d, TLS %v", resp.StatusCode, resp.TLS != nil)
	}
}

// TestServeRestartKeepsState: on a SQLite store, data and keys survive a
// restart; the second start bootstraps nothing and reuses the key file; a
// start with another sealing key refuses; admin commands onboard a tenant
// on the same file.
func TestServeRestartKeepsState(t *testing.T) {
	dir := t.TempDir()
	spec := "sqlite:" + filepath.Join(dir, "edgeplane.db")
	s := startServe(t, []string{"-store", spec}, map[string]string{"EDGEPLANE_RATE_LIMIT": "0"})
	key := regexp.MustCompile(`admin API key \(shown once\): (epk_\S+)`).FindStringSubmatch(s.stdout.String())
	if key == nil {
		t.Fatalf("stdout: %s", s.stdout)
	}
	req, _ := http.NewRequest("POST", "http://"+s.addr+"/credentials", strings.NewReader(`{"description":"survivor"}`))
	req.Header.Set("Authorization", "Bearer "+key[1])
	req.Header.Set("Service-Version", "2")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("stop: %d", code)
	}
	info, err := os.Stat(filepath.Join(dir, "edgeplane.db.sealkey"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", info, err)
	}

	again := startServe(t, []string{"-store", spec}, nil)
	if out := again.stdout.String(); !strings.Contains(out, "store in use") || strings.Contains(out, "admin API key") || strings.Contains(out, "sealing key: created") {
		t.Errorf("restart stdout: %s", out)
	}
	auth := http.Header{"Authorization": {"Bearer " + key[1]}, "Service-Version": {"2"}}
	if code, body := get(t, "http://"+again.addr+"/credentials", auth); code != 200 || !strings.Contains(body, "survivor") {
		t.Errorf("after the restart: %d %s", code, body)
	}
	again.stop()

	var out bytes.Buffer
	other := map[string]string{"EDGEPLANE_SEAL_KEY": "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="}
	if code := run(context.Background(), []string{"serve", "-addr", "127.0.0.1:0", "-store", spec}, func(k string) string { return other[k] }, &out, &out, nil); code != 1 ||
		!strings.Contains(out.String(), "sealed under another sealing key") {
		t.Errorf("another key: exit %d, %s", code, out.String())
	}

	admin := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if code := run(context.Background(), append([]string{"admin", args[0], "-store", spec}, args[1:]...), func(string) string { return "" }, &out, &out, nil); code != 0 {
			t.Fatalf("admin %v: exit %d, %s", args, code, out.String())
		}
		return strings.TrimSpace(out.String())
	}
	acct := admin("create-account", "-name", "second tenant")
	bot := admin("create-bot", "-account", acct, "-name", "ci")
	secret := regexp.MustCompile(`secret \(shown once\): (epk_\S+)`).FindStringSubmatch(admin("create-api-key", "-account", acct, "-owner", bot))
	if secret == nil {
		t.Fatal("no secret printed")
	}
	if list := admin("list-accounts"); !strings.Contains(list, acct) || !strings.Contains(list, "default") {
		t.Errorf("list-accounts: %s", list)
	}
	third := startServe(t, []string{"-store", spec}, nil)
	tenant := http.Header{"Authorization": {"Bearer " + secret[1]}, "Service-Version": {"2"}}
	if code, body := get(t, "http://"+third.addr+"/credentials", tenant); code != 200 || strings.Contains(body, "survivor") {
		t.Errorf("the new tenant's key: %d %s (must not see the first account's credential)", code, body)
	}
}

// TestServeCPUProfile: -cpuprofile writes a CPU profile (gzipped
// protocol buffers) of the run when the server stops, and a file that
// cannot be created stops serve before it listens.
func TestServeCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	s := startServe(t, []string{"-cpuprofile", path}, nil)
	if code, _ := get(t, "http://"+s.addr+"/healthz", nil); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no profile file while serving: %v", err)
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("serve exited with %d: %s", code, s.stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("the profile is not gzipped: % x", b[:min(len(b), 8)])
	}
	var out bytes.Buffer
	code := run(context.Background(), []string{"serve", "-addr", "127.0.0.1:0", "-store", "memory:", "-cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir", "cpu.pprof")}, func(string) string { return "" }, &out, &out, nil)
	if code == 0 || !strings.Contains(out.String(), "-cpuprofile") {
		t.Fatalf("an uncreatable profile file: exit %d, %s", code, out.String())
	}
}

// prefaulting reports whether a goroutine of this process populates the
// heap (package prefault's Heap.Run).
func prefaulting() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "internal/prefault.(*Heap).Run")
}

// TestServePrefault: serve populates the heap's growth only when its
// operator asks (-prefault or EDGEPLANE_PREFAULT=true), and stops doing so
// when it returns.
func TestServePrefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		on   bool
	}{
		{"default", nil, nil, false},
		{"flag", []string{"-prefault"}, nil, true},
		{"env", nil, map[string]string{"EDGEPLANE_PREFAULT": "true"}, true},
		{"flag false", []string{"-prefault=false"}, nil, false},
		{"env false", nil, map[string]string{"EDGEPLANE_PREFAULT": "false"}, false},
		{"flag over env", []string{"-prefault=false"}, map[string]string{"EDGEPLANE_PREFAULT": "true"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if prefaulting() {
				t.Fatal("a goroutine populates the heap before serve runs")
			}
			s := startServe(t, append([]string{"-store", "memory:"}, tc.args...), tc.env)
			if tc.on && strings.Contains(s.stderr.String(), "heap prefault off") {
				s.stop()
				t.Skip(s.stderr.String())
			}
			if got := prefaulting(); got != tc.on {
				t.Errorf("a goroutine populates the heap while serve runs: %v, want %v", got, tc.on)
			}
			if code := s.stop(); code != 0 {
				t.Fatalf("serve exited with %d: %s", code, s.stderr)
			}
			if prefaulting() {
				t.Error("a goroutine populates the heap after serve returned")
			}
		})
	}
}
