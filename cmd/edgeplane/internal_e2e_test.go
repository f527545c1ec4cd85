package main

import (
	"context"
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

// TestAgentForwardInternal: edgeplane agent (the SDK unchanged) binds
// an internal endpoint (bindings: [internal], https://api.internal) and
// a public one whose traffic policy forwards to it: a request to the
// public name reaches the internal endpoint's upstream, and no listener
// serves api.internal directly; a forward to a name nothing binds
// answers 404.
func TestAgentForwardInternal(t *testing.T) {
	ts := startTunnelServe(t)
	ts.api.must(201, "POST", "/reserved_domains", `{"domain":"app.example.com"}`)
	token := ts.api.must(201, "POST", "/credentials", `{"acl":["*"]}`)["token"].(string)
	internal, public := newUpstream(t, "internal"), newUpstream(t, "public")
	port := func(u *upstream) string { _, p, _ := net.SplitHostPort(strings.TrimPrefix(u.URL, "http://")); return p }
	file := filepath.Join(t.TempDir(), "agent.yml")
	config := `version: 1
agent:
  servers: [` + ts.agentAddr + `]
  ca: ` + ts.certFile + `
  inspect_addr: 127.0.0.1:0
endpoints:
  - name: api
    url: https://api.internal
    bindings: [internal]
    upstream: {url: ` + port(internal) + `}
  - name: web
    url: http://app.example.com
    upstream: {url: ` + port(public) + `}
    traffic_policy:
      on_http_request:
        - expressions: ["req.url.path.startsWith('/missing')"]
          actions:
            - type: forward-internal
              config: {url: "https://nothing.internal"}
        - actions:
            - type: forward-internal
              config: {url: "https://api.internal"}
`
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgentArgs(t, []string{"-config", file, "-authtoken", token, "start", "-all"}, nil)
	c := through(ts.proxyHTTP, nil)
	if _, ok := within(5*time.Second, func() bool {
		code, body := fetch(c, "http://app.example.com/x", "public")
		return code == 200 && body == "upstream internal /x"
	}); !ok {
		code, body := fetch(c, "http://app.example.com/x", "public")
		t.Fatalf("through the public endpoint: %d %q; want the internal endpoint's upstream; agent log: %s", code, body, a.stderr.String())
	}
	if code, body := fetch(c, "http://app.example.com/missing", "public"); code != http.StatusNotFound || !strings.Contains(body, "offline") {
		t.Errorf("a forward to a name nothing binds: %d %q; want 404", code, body)
	}
	for _, host := range []string{"http://api.internal/x", "http://api.internal:443/x"} {
		if code, body := fetch(c, host, "direct"); code != http.StatusNotFound {
			t.Errorf("%s directly: %d %q; want 404 (no listener serves an internal name)", host, code, body)
		}
	}
	if public.hits["public"] != 0 || internal.hits["direct"] != 0 {
		t.Errorf("hits: public upstream %v, internal upstream %v", public.hits, internal.hits)
	}
	eps := ts.api.must(200, "GET", "/endpoints", "")["endpoints"].([]any)
	bindings := map[string]any{}
	for _, ep := range eps {
		m := ep.(map[string]any)
		bindings[m["url"].(string)] = m["bindings"]
	}
	if len(eps) != 2 || len(bindings["https://api.internal"].([]any)) != 1 || bindings["https://api.internal"].([]any)[0] != "internal" ||
		bindings["http://app.example.com"].([]any)[0] != "public" {
		t.Errorf("endpoints' bindings: %v", bindings)
	}
	a.stopAndWait(t)
}

// TestAgentDomainBase: with serve's -proxy-agent-domain-base, edgeplane
// agent http PORT without -domain, and an endpoint of the configuration
// file with url: http://, get <random>.BASE and serve there;
// without it, the bind is refused with a message that says a domain is
// needed.
func TestAgentDomainBase(t *testing.T) {
	ts := startTunnelServe(t, "-proxy-agent-domain-base", "agents.example.test")
	token := ts.api.must(201, "POST", "/credentials", `{"acl":["bind:*.agents.example.test"]}`)["token"].(string)
	up := newUpstream(t, "local")
	_, upPort, _ := net.SplitHostPort(strings.TrimPrefix(up.URL, "http://"))
	a := ts.startAgent(t, token, "http", upPort, "-scheme", "http")
	if !regexp.MustCompile(`^http://[a-z2-7]{16}\.agents\.example\.test$`).MatchString(a.line) {
		t.Fatalf("the agent printed %q; want http://<random>.agents.example.test", a.line)
	}
	c := through(ts.proxyHTTP, nil)
	if _, ok := within(5*time.Second, func() bool {
		code, body := fetch(c, a.line+"/hello", "picked")
		return code == 200 && body == "upstream local /hello"
	}); !ok {
		code, body := fetch(c, a.line+"/hello", "picked")
		t.Errorf("through the picked name: %d %q", code, body)
	}
	a.stopAndWait(t)

	// The same from the configuration file: url: http:// names no host.
	file := filepath.Join(t.TempDir(), "agent.yml")
	config := "version: 1\nagent: {servers: [" + ts.agentAddr + "], ca: " + ts.certFile + ", inspect_addr: 127.0.0.1:0}\n" +
		"endpoints: [{name: web, url: \"http://\", upstream: {url: " + upPort + "}}]\n"
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	f := startAgentArgs(t, []string{"-config", file, "-authtoken", token, "start", "web"}, nil)
	name, ok := strings.CutPrefix(f.line, "web ")
	if !ok || !regexp.MustCompile(`^http://[a-z2-7]{16}\.agents\.example\.test$`).MatchString(name) || name == a.line {
		t.Fatalf("agent start printed %q; want web http://<another random>.agents.example.test", f.line)
	}
	if _, ok := within(5*time.Second, func() bool {
		code, body := fetch(c, name+"/file", "file")
		return code == 200 && body == "upstream local /file"
	}); !ok {
		code, body := fetch(c, name+"/file", "file")
		t.Errorf("through the name picked for the file's endpoint: %d %q", code, body)
	}
	f.stopAndWait(t)

	plain := startTunnelServe(t)
	token = plain.api.must(201, "POST", "/credentials", `{"acl":["*"]}`)["token"].(string)
	code, stdout, stderr, took := runAgentToExit(t, []string{"-server", plain.agentAddr, "-ca", plain.certFile, "-authtoken", token, "-inspect-addr", "127.0.0.1:0",
		"http", upPort}, nil, 10*time.Second)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "Domain: is required for an https endpoint") || !strings.Contains(stderr, "-agent-domain-base") {
		t.Errorf("without a domain base: exit %d after %v, stdout %q, stderr %q", code, took, stdout, stderr)
	}
}

// TestDomainBaseFlags: -agent-domain-base must be a DNS name and needs
// the tunnel listener; its certificate and key go together and must
// cover the names under it.
func TestDomainBaseFlags(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeTunnelCert(t, dir)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a wildcard", []string{"-proxy-tunnel-addr", "127.0.0.1:0", "-proxy-agent-domain-base", "*.agents.example.test"}, `-proxy-agent-domain-base "*.agents.example.test": must be the base name without the wildcard`},
		{"a port", []string{"-proxy-tunnel-addr", "127.0.0.1:0", "-proxy-agent-domain-base", "agents.example.test:443"}, `-proxy-agent-domain-base "agents.example.test:443": must be a DNS name`},
		{"no tunnel listener", []string{"-proxy-agent-domain-base", "agents.example.test"}, "-proxy-agent-domain-base needs -proxy-tunnel-addr"},
		{"a certificate without its key", []string{"-proxy-tunnel-addr", "127.0.0.1:0", "-proxy-agent-domain-base", "agents.example.test", "-proxy-agent-domain-cert", certFile},
			"-proxy-agent-domain-cert and -proxy-agent-domain-key go together"},
		{"a certificate of other names", []string{"-proxy-tunnel-addr", "127.0.0.1:0", "-proxy-agent-domain-base", "agents.example.test", "-proxy-agent-domain-cert", certFile,
			"-proxy-agent-domain-key", keyFile}, "-proxy-agent-domain-cert: the certificate does not cover the names under agents.example.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"serve", "-store", "sqlite:" + filepath.Join(dir, "x.db"), "-addr", "127.0.0.1:0", "-proxy", "-proxy-http-addr", "127.0.0.1:0"}, tc.args...)
			env := map[string]string{"EDGEPLANE_API_KEY": "epk_" + strings.Repeat("a", 40)}
			var stdout, stderr syncbuf.Buffer
			code := run(context.Background(), args, func(k string) string { return env[k] }, &stdout, &stderr, nil)
			if code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 saying %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// TestAgentInternalPool: two edgeplane agents (the SDK unchanged, with
// WithPoolingEnabled and WithBindings("internal")) bind api.internal
// with pooling enabled; a public endpoint's forward-internal reaches
// both of their upstreams; once one agent stops, every request is
// answered by the other.
func TestAgentInternalPool(t *testing.T) {
	ts := startTunnelServe(t)
	ts.api.must(201, "POST", "/reserved_domains", `{"domain":"app.example.com"}`)
	token := ts.api.must(201, "POST", "/credentials", `{"acl":["*"]}`)["token"].(string)
	one, two, public := newUpstream(t, "one"), newUpstream(t, "two"), newUpstream(t, "public")
	port := func(u *upstream) string { _, p, _ := net.SplitHostPort(strings.TrimPrefix(u.URL, "http://")); return p }
	dir := t.TempDir()
	file := func(name, endpoints string) string {
		f := filepath.Join(dir, name+".yml")
		config := "version: 1\nagent: {servers: [" + ts.agentAddr + "], ca: " + ts.certFile + ", inspect_addr: 127.0.0.1:0}\nendpoints:\n" + endpoints
		if err := os.WriteFile(f, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	internal := func(u *upstream) string {
		return "  - {name: api, url: https://api.internal, bindings: [internal], pooling_enabled: true, upstream: {url: " + port(u) + "}}\n"
	}
	web := "  - name: web\n    url: http://app.example.com\n    upstream: {url: " + port(public) + "}\n" +
		"    traffic_policy: {on_http_request: [{actions: [{type: forward-internal, config: {url: \"https://api.internal\"}}]}]}\n"
	a := startAgentArgs(t, []string{"-config", file("a", internal(one)+web), "-authtoken", token, "start", "-all"}, nil)
	b := startAgentArgs(t, []string{"-config", file("b", internal(two)), "-authtoken", token, "start", "-all"}, nil)
	c := through(ts.proxyHTTP, nil)
	if _, ok := within(5*time.Second, func() bool {
		fetch(c, "http://app.example.com/x", "pool")
		one.mu.Lock()
		two.mu.Lock()
		defer one.mu.Unlock()
		defer two.mu.Unlock()
		return one.hits["pool"] > 0 && two.hits["pool"] > 0
	}); !ok {
		t.Fatalf("the pool's upstreams got %v and %v; want both; agent logs:\n%s\n%s", one.hits, two.hits, a.stderr.String(), b.stderr.String())
	}
	b.stopAndWait(t)
	for i := range 10 {
		if code, body := fetch(c, "http://app.example.com/y", "after"); code != 200 || body != "upstream one /y" {
			t.Fatalf("request %d after one member stopped: %d %q", i, code, body)
		}
	}
	public.mu.Lock()
	if len(public.hits) != 0 {
		t.Errorf("the public upstream got %v", public.hits)
	}
	public.mu.Unlock()
	a.stopAndWait(t)
}
