package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// goodAgentFile is a configuration file with every key: the agent's
// settings, and an endpoint of each kind (http and https URLs, a domain,
// tls, tcp with and without an address, a labeled tunnel), traffic
// policies inline (YAML and a JSON string) and from a file.
const goodAgentFile = `# the agent beside the app
version: 1
agent:
  authtoken: ept_fileToken   # a tunnel credential's
  servers: [edge-1.example.com:4443, "[::1]:4443"]
  ca: ca.pem
  connections: 1
  inspect: true
  inspect_addr: 127.0.0.1:4041
endpoints:
  - name: web
    url: https://app.example.com
    upstream: {url: 3000}
    traffic_policy:
      on_http_request:
        - name: deny bots
          expressions: ["req.headers['user-agent'][0].contains('bot')"]
          actions: [{type: deny, config: {status_code: 403}}]
    metadata: '{"team":"web"}'
    description: the web app
  - name: plain
    url: http://plain.example.com/
    upstream: {url: "http://localhost:8080"}
    traffic_policy: '{"on_http_request":[{"actions":[{"type":"deny"}]}]}'
  - name: api
    domain: API.example.com
    upstream:
      url: https://127.0.0.1:8443
    traffic_policy_file: policy.yml
    pooling_enabled: true
    bindings: [public]
  - name: secure
    url: tls://tls.example.com:443
    upstream: {url: tls://127.0.0.1:9443}
  - name: db
    url: tcp://tcp.example.com:20001
    upstream: {url: 5432}
  - name: ssh
    url: tcp://
    upstream: {url: "tcp://10.0.0.2:22"}
  - name: group
    labels: {app: web, env: prod}
    upstream: {url: 3001}
`

// writeAgentDir writes files (name to content) into a new directory and
// returns it.
func writeAgentDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestAgentConfigParse: a file with every key reads as written: the
// agent's settings (ca resolved beside the file), each endpoint's kind
// from its url, domain or labels, its upstream, its traffic policy as
// JSON (inline YAML keeps its order; a file's YAML too), pooling and
// bindings.
func TestAgentConfigParse(t *testing.T) {
	ca := newTestCA(t)
	dir := writeAgentDir(t, map[string]string{
		"agent.yml":  goodAgentFile,
		"ca.pem":     ca.pem,
		"policy.yml": "on_http_request:\n  - actions:\n      - type: custom-response\n        config: {status_code: 200, body: ok}\n",
	})
	f, err := readAgentFile(filepath.Join(dir, "agent.yml"), true)
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	want := &agentFile{path: filepath.Join(dir, "agent.yml"), authtoken: "ept_fileToken", servers: []string{"edge-1.example.com:4443", "[::1]:4443"},
		ca: filepath.Join(dir, "ca.pem"), connections: 1, inspect: &yes, inspectAddr: "127.0.0.1:4041",
		endpoints: []agentEndpoint{
			{name: "web", proto: "http", scheme: "https", domain: "app.example.com", target: agentTarget{"http", "127.0.0.1:3000"},
				metadata: `{"team":"web"}`, description: "the web app",
				policy: `{"on_http_request":[{"name":"deny bots","expressions":["req.headers['user-agent'][0].contains('bot')"],"actions":[{"type":"deny","config":{"status_code":403}}]}]}`},
			{name: "plain", proto: "http", scheme: "http", domain: "plain.example.com", target: agentTarget{"http", "localhost:8080"},
				policy: `{"on_http_request":[{"actions":[{"type":"deny"}]}]}`},
			{name: "api", proto: "http", scheme: "https", domain: "api.example.com", target: agentTarget{"https", "127.0.0.1:8443"},
				policy:  `{"on_http_request":[{"actions":[{"type":"custom-response","config":{"status_code":200,"body":"ok"}}]}]}`,
				pooling: true, bindings: []string{"public"}},
			{name: "secure", proto: "tls", domain: "tls.example.com", target: agentTarget{"", "127.0.0.1:9443"}},
			{name: "db", proto: "tcp", remoteAddr: "tcp.example.com:20001", target: agentTarget{"", "127.0.0.1:5432"}},
			{name: "ssh", proto: "tcp", target: agentTarget{"", "10.0.0.2:22"}},
			{name: "group", proto: "http", labels: map[string]string{"app": "web", "env": "prod"}, target: agentTarget{"http", "127.0.0.1:3001"}},
		}}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got  %+v\nwant %+v", f, want)
		for i := range min(len(f.endpoints), len(want.endpoints)) {
			if !reflect.DeepEqual(f.endpoints[i], want.endpoints[i]) {
				t.Errorf("endpoint %d:\ngot  %+v\nwant %+v", i, f.endpoints[i], want.endpoints[i])
			}
		}
	}
	// The same file through the SDK: each endpoint is the Bind (or
	// StartTunnelWithLabel) its keys say.
	for _, tc := range []struct {
		name, proto string
		opts        []string
		extra       map[string]any
	}{
		{"web", "https", []string{`"Domain":"app.example.com"`, `"TrafficPolicy":"{\"on_http_request\"`}, map[string]any{"Name": "web", "Metadata": `{"team":"web"}`, "Description": "the web app"}},
		{"plain", "http", []string{`"Domain":"plain.example.com"`}, map[string]any{"Name": "plain"}},
		{"api", "https", []string{`"Domain":"api.example.com"`}, map[string]any{"PoolingEnabled": true, "Bindings": []string{"public"}}},
		{"secure", "tls", []string{`"Domain":"tls.example.com"`, `"TLSTermination":null`}, nil},
		{"db", "tcp", []string{`"Addr":"tcp.example.com:20001"`}, nil},
		{"ssh", "tcp", []string{`"Addr":""`}, nil},
		{"group", "", []string{"null"}, nil},
	} {
		e, ok := f.endpoint(tc.name)
		if !ok {
			t.Fatalf("no endpoint %s", tc.name)
		}
		cfg := e.tunnelConfig().(sdkConfig)
		opts := mustJSON(t, cfg.Opts())
		if cfg.Proto() != tc.proto || cfg.ForwardsTo() != e.target.String() {
			t.Errorf("%s: proto %q, forwards to %q", tc.name, cfg.Proto(), cfg.ForwardsTo())
		}
		for _, w := range tc.opts {
			if !strings.Contains(opts, w) {
				t.Errorf("%s: options %s lack %s", tc.name, opts, w)
			}
		}
		extra := reflect.ValueOf(cfg).MethodByName("Extra").Call(nil)[0]
		for field, v := range tc.extra {
			if got := extra.FieldByName(field).Interface(); !reflect.DeepEqual(got, v) {
				t.Errorf("%s: Extra.%s = %#v, want %#v", tc.name, field, got, v)
			}
		}
	}
}

// mustJSON returns v in JSON.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// aliasBomb is a YAML mapping of a few lines whose aliases name 10^7
// strings.
var aliasBomb = func() string {
	var b strings.Builder
	b.WriteString("      x0: &a0 [" + strings.TrimSuffix(strings.Repeat("aaaaaaaaaa, ", 10), ", ") + "]\n")
	for i := 1; i < 7; i++ {
		fmt.Fprintf(&b, "      x%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	return b.String()
}()

// TestAgentConfigErrors: every mistake is an error naming the file, the
// line and column, and the key's path, with what is allowed; a file with
// several mistakes lists them all.
func TestAgentConfigErrors(t *testing.T) {
	ca := newTestCA(t)
	dir := writeAgentDir(t, map[string]string{"ca.pem": ca.pem, "notpem.txt": "hello", "bad-policy.yml": "on_request: []\n"})
	const head = "version: 1\n"
	ep := func(body string) string { return head + "endpoints:\n  - name: e\n" + body }
	var hundredOne strings.Builder
	hundredOne.WriteString(head + "endpoints:\n")
	for i := range maxAgentEndpoints + 1 {
		fmt.Fprintf(&hundredOne, "  - {name: e%d, url: 'tcp://', upstream: {url: %d}}\n", i, 1000+i)
	}
	for _, tc := range []struct {
		name, file string
		want       []string // each an issue's text after the file's name
	}{
		{"unknown key deep", head + "endpoints:\n  - {name: a, url: 'tcp://', upstream: {url: 1}}\n  - {name: b, url: 'tcp://', upstream: {url: 2}}\n  - name: c\n    url: tcp://\n    upstream:\n      ur: 5432\n",
			[]string{":8:7: endpoints[2].upstream.ur: unknown key; want url", ":8:7: endpoints[2].upstream.url: is required"}},
		{"unknown key at the top", head + "tunnels: {}\n", []string{":2:1: tunnels: unknown key; want agent, endpoints, version"}},
		{"unknown agent key", head + "agent:\n  server_addr: x:1\n", []string{":3:3: agent.server_addr: unknown key; want authtoken, ca, connections, inspect, inspect_addr, servers"}},
		{"no version", "agent: {authtoken: x}\n", []string{":1:1: version: is required: version: 1"}},
		{"the original's version", "version: 3\n", []string{":1:10: version: must be 1, the version of edgeplane's agent configuration"}},
		{"version as text", "version: '1'\n", []string{"version: must be 1"}},
		{"a key twice", head + "agent:\n  authtoken: a\n  authtoken: b\n", []string{":4:3: agent.authtoken: given twice (first on line 3)"}},
		{"not YAML", head + "agent: [\n", []string{": not valid YAML: line 2: did not find expected node content"}},
		{"empty", "", []string{": the file is empty: it needs at least version: 1"}},
		{"not a mapping", "- 1\n", []string{":1:1: must be a mapping (key: value lines), not a list"}},
		{"authtoken with a space", head + "agent: {authtoken: 'ept x'}\n", []string{"agent.authtoken: must be a tunnel credential's token"}},
		{"authtoken a list", head + "agent: {authtoken: [a]}\n", []string{"agent.authtoken: must be text, not a list"}},
		{"servers not a list", head + "agent: {servers: a.example.com:1}\n", []string{"agent.servers: must be a list ([a, b] or - lines), not text"}},
		{"server without a port", head + "agent: {servers: [a.example.com]}\n", []string{`:2:19: agent.servers[0]: "a.example.com": want HOST:PORT`}},
		{"server twice", head + "agent: {servers: [a.example.com:1, A.example.com:01]}\n", []string{`agent.servers[1]: "A.example.com:01": the same server as agent.servers[0]`}},
		{"seventeen servers", head + "agent: {servers: [" + strings.Repeat("a.example.com:1, ", 16) + "b.example.com:1]}\n", []string{"agent.servers: has 17 servers; at most 16 are allowed"}},
		{"ca missing", head + "agent: {ca: missing.pem}\n", []string{"agent.ca: open " + filepath.Join(dir, "missing.pem") + ": no such file or directory"}},
		{"ca not PEM", head + "agent: {ca: notpem.txt}\n", []string{"agent.ca: " + filepath.Join(dir, "notpem.txt") + ": no PEM certificate in the file"}},
		{"too many connections", head + "agent: {connections: 17}\n", []string{"agent.connections: must be from 1 to 16"}},
		{"inspect as text", head + "agent: {inspect: 'no'}\n", []string{"agent.inspect: must be true or false, not text"}},
		{"inspect on a public address", head + "agent: {inspect_addr: '0.0.0.0:4040'}\n", []string{`agent.inspect_addr: "0.0.0.0:4040": must be a loopback address`}},
		{"endpoints not a list", head + "endpoints: {}\n", []string{"endpoints: must be a list"}},
		{"101 endpoints", hundredOne.String(), []string{":3:3: endpoints: has 101 endpoints; at most 100 are allowed"}},
		{"no name", head + "endpoints:\n  - {url: 'tcp://', upstream: {url: 1}}\n", []string{":3:5: endpoints[0].name: is required"}},
		{"bad name", ep("    url: tcp://\n    upstream: {url: 1}\n") + "  - {name: 'a b', url: 'tcp://', upstream: {url: 1}}\n", []string{`endpoints[1].name: "a b": may contain only letters, digits, '-', '_' and '.', not ' '`}},
		{"a name twice", head + "endpoints:\n  - {name: a, url: 'tcp://', upstream: {url: 1}}\n  - {name: a, url: 'tcp://', upstream: {url: 2}}\n", []string{`:4:12: endpoints[1].name: "a" is the name of endpoints[0] too`}},
		{"no address", ep("    upstream: {url: 1}\n"), []string{"endpoints[0]: needs one of url (https://NAME, http://NAME, tls://NAME or tcp://HOST:PORT), domain"}},
		{"url and domain", ep("    url: https://a.example.com\n    domain: a.example.com\n    upstream: {url: 1}\n"), []string{"endpoints[0]: give one of url, domain and labels, not 2"}},
		{"url without a scheme", ep("    url: a.example.com\n    upstream: {url: 1}\n"), []string{`endpoints[0].url: "a.example.com": want https://NAME, http://NAME, tls://NAME or tcp://HOST:PORT`}},
		{"url of another scheme", ep("    url: ftp://a.example.com\n    upstream: {url: 1}\n"), []string{`endpoints[0].url: "ftp://a.example.com": the scheme must be https, http, tls or tcp`}},
		{"https on another port", ep("    url: https://a.example.com:8443\n    upstream: {url: 1}\n"), []string{`endpoints[0].url: "https://a.example.com:8443": a https endpoint serves port 443`}},
		{"url with a path", ep("    url: https://a.example.com/app\n    upstream: {url: 1}\n"), []string{`endpoints[0].url: "https://a.example.com/app": give the scheme and the address only`}},
		{"tls without a name", ep("    url: tls://\n    upstream: {url: 1}\n"), []string{`endpoints[0].url: "tls://": a tls endpoint needs its name`}},
		{"tcp without a port", ep("    url: tcp://db.example.com\n    upstream: {url: 1}\n"), []string{`endpoints[0].url: "tcp://db.example.com": want HOST:PORT`}},
		{"bad domain", ep("    domain: a_b.example.com\n    upstream: {url: 1}\n"), []string{`endpoints[0].domain: "a_b.example.com": may contain only letters, digits, hyphens and dots`}},
		{"bad label", ep("    labels: {'my app': web}\n    upstream: {url: 1}\n"), []string{`endpoints[0].labels: labels["my app"]: label key may contain only`}},
		{"labels not a mapping", ep("    labels: [app]\n    upstream: {url: 1}\n"), []string{"endpoints[0].labels: must be a mapping of labels (app: web), not a list"}},
		{"no upstream", ep("    url: tcp://\n"), []string{"endpoints[0].upstream: is required: upstream: {url: ...}"}},
		{"http upstream HOST:PORT", ep("    url: https://a.example.com\n    upstream: {url: 'localhost:3000'}\n"), []string{`endpoints[0].upstream.url: "localhost:3000": want a PORT (3000) or an http:// or https:// URL`}},
		{"tcp upstream a URL", ep("    url: tcp://\n    upstream: {url: 'http://localhost:3000'}\n"), []string{`endpoints[0].upstream.url: "http://localhost:3000": want a PORT (22) or HOST:PORT (127.0.0.1:22), or tcp://HOST:PORT`}},
		{"upstream port 0", ep("    url: tcp://\n    upstream: {url: 0}\n"), []string{`endpoints[0].upstream.url: "0": the port must be a number from 1 to 65535`}},
		{"policy a list", ep("    url: https://a.example.com\n    upstream: {url: 1}\n    traffic_policy: [deny]\n"), []string{"endpoints[0].traffic_policy: must be a traffic policy document: a mapping (on_http_request: ...) or a string holding its JSON, not a list"}},
		{"policy of an unknown phase", ep("    url: https://a.example.com\n    upstream: {url: 1}\n    traffic_policy: {on_request: []}\n"), []string{`:6:21: endpoints[0].traffic_policy: on_request: unknown phase "on_request"`}},
		{"policy of a bad rule", ep("    url: https://a.example.com\n    upstream: {url: 1}\n    traffic_policy: {on_http_request: [{actions: [{type: deny, cfg: {}}]}]}\n"), []string{`endpoints[0].traffic_policy: on_http_request[0].actions[0].cfg: unknown field "cfg"`}},
		{"policy JSON not JSON", ep("    url: https://a.example.com\n    upstream: {url: 1}\n    traffic_policy: '{\"on_http_request\": ['\n"), []string{"endpoints[0].traffic_policy: neither JSON nor YAML"}},
		{"policy file missing", ep("    url: https://a.example.com\n    upstream: {url: 1}\n    traffic_policy_file: missing.yml\n"), []string{"endpoints[0].traffic_policy_file: open " + filepath.Join(dir, "missing.yml")}},
		{"policy file of an unknown phase", ep("    url: https://a.example.com\n    upstream: {url: 1}\n    traffic_policy_file: bad-policy.yml\n"), []string{"endpoints[0].traffic_policy_file: " + filepath.Join(dir, "bad-policy.yml") + `: on_request: unknown phase "on_request"`}},
		{"policy and its file", ep("    url: https://a.example.com\n    upstream: {url: 1}\n    traffic_policy: {}\n    traffic_policy_file: bad-policy.yml\n"), []string{"endpoints[0]: give one of traffic_policy and traffic_policy_file"}},
		{"policy on a labeled tunnel", ep("    labels: {app: web}\n    upstream: {url: 1}\n    traffic_policy: {}\n"), []string{"endpoints[0]: a labeled tunnel carries no traffic policy"}},
		{"pooling a labeled tunnel", ep("    labels: {app: web}\n    upstream: {url: 1}\n    pooling_enabled: true\n"), []string{"endpoints[0].pooling_enabled: a labeled tunnel is not pooled"}},
		{"pooling as text", ep("    url: tcp://\n    upstream: {url: 1}\n    pooling_enabled: yes\n"), []string{"endpoints[0].pooling_enabled: must be true or false, not text"}},
		{"a binding unknown", ep("    url: tcp://\n    upstream: {url: 1}\n    bindings: [private]\n"), []string{`endpoints[0].bindings[0]: "private": want public or internal`}},
		{"two bindings", ep("    url: tcp://\n    upstream: {url: 1}\n    bindings: [public, internal]\n"), []string{"endpoints[0].bindings: has 2 bindings; give one"}},
		{"internal outside .internal", ep("    url: https://a.example.com\n    upstream: {url: 1}\n    bindings: [internal]\n"), []string{`endpoints[0].bindings: an internal endpoint's url must name a host ending in .internal, not "a.example.com"`}},
		{"internal tcp outside .internal", ep("    url: tcp://db.example.com:5432\n    upstream: {url: 1}\n    bindings: [internal]\n"), []string{`endpoints[0].bindings: an internal endpoint's url must name a host ending in .internal, not "db.example.com"`}},
		{"internal, the server to pick", ep("    url: tcp://\n    upstream: {url: 1}\n    bindings: [internal]\n"), []string{`endpoints[0].bindings: an internal endpoint's url must name a host ending in .internal, not ""`}},
		{"metadata too long", ep("    url: tcp://\n    upstream: {url: 1}\n    metadata: " + strings.Repeat("m", 4097) + "\n"), []string{"endpoints[0].metadata: must be at most 4096 bytes, got 4097"}},
		{"description too long", ep("    url: tcp://\n    upstream: {url: 1}\n    description: " + strings.Repeat("d", 256) + "\n"), []string{"endpoints[0].description: must be at most 255 bytes, got 256"}},
		{"several at once", head + "agent: {servers: [x], inspect: 1}\nendpoints:\n  - {name: a, url: 'ftp://x', upstream: {url: 1}, extra: 1}\n",
			[]string{"agent.servers[0]", "agent.inspect", "endpoints[0].extra: unknown key", "endpoints[0].url"}},
		{"an alias inside the node it names", ep("    url: https://a.example.com\n    upstream: {url: 1}\n    traffic_policy: {on_http_request: &x [*x]}\n"), []string{
			"endpoints[0].traffic_policy: line 6: the document nests deeper than 64 levels"}},
		{"aliases that expand past the bound", ep("    url: https://a.example.com\n    upstream: {url: 1}\n    traffic_policy:\n" + aliasBomb), []string{
			"endpoints[0].traffic_policy: the document is larger than 1048576 bytes once its aliases are expanded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, "agent.yml")
			_, err := parseAgentFile(file, []byte(tc.file), readBounded)
			ce, ok := err.(*configError)
			if !ok {
				t.Fatalf("%v (%T), want a *configError", err, err)
			}
			text := err.Error()
			for _, w := range tc.want {
				needle := ": " + w
				if strings.HasPrefix(w, ":") {
					needle = "\n  " + file + w
				}
				if !strings.Contains(text, needle) {
					t.Errorf("the error lacks %q:\n%s", needle, text)
				}
			}
			if len(ce.issues) < len(tc.want) {
				t.Errorf("%d issues, want at least %d:\n%s", len(ce.issues), len(tc.want), text)
			}
		})
	}
}

// TestAgentConfigBounds: a file of 1 MiB is read, one byte more is
// refused unread; 100 endpoints are accepted, 101 refused (above).
func TestAgentConfigBounds(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("version: 1\nendpoints:\n")
	for i := range maxAgentEndpoints {
		fmt.Fprintf(&b, "  - {name: e%d, url: 'tcp://', upstream: {url: %d}}\n", i, 1000+i)
	}
	pad := maxAgentConfigBytes - b.Len()
	file := filepath.Join(dir, "agent.yml")
	for _, tc := range []struct {
		extra int
		ok    bool
	}{{0, true}, {1, false}} {
		data := b.String() + "#" + strings.Repeat("x", pad-2+tc.extra) + "\n"
		if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := readAgentFile(file, true)
		switch {
		case tc.ok && (err != nil || len(f.endpoints) != maxAgentEndpoints):
			t.Errorf("a file of %d bytes: %v", len(data), err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), "the file is larger than 1048576 bytes")):
			t.Errorf("a file of %d bytes: %v, want it refused", len(data), err)
		}
	}
	if _, err := parseAgentFile(file, make([]byte, maxAgentConfigBytes+1), readBounded); err == nil || !strings.Contains(err.Error(), "the file is 1048577 bytes; at most 1048576 (1 MiB) are allowed") {
		t.Errorf("parse of 1 MiB + 1: %v", err)
	}
}

// FuzzAgentConfig: parseAgentFile never panics, and what it accepts
// keeps the bounds: at most 100 endpoints, each with a name, a known
// protocol and a target.
func FuzzAgentConfig(f *testing.F) {
	f.Add([]byte(goodAgentFile))
	f.Add([]byte("version: 1\nendpoints: [{name: a, labels: {x: y}, upstream: {url: tcp://h:1}}]\n"))
	f.Add([]byte("version: 1\nagent: &a {servers: [*a]}\n"))
	f.Add([]byte("version: 1\nendpoints:\n  - name: e\n    url: https://a.example.com\n    upstream: {url: 1}\n    traffic_policy: {on_http_request: &x [*x]}\n"))
	read := func(string, int) ([]byte, error) { return nil, fs.ErrNotExist }
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parseAgentFile("agent.yml", data, read)
		if err != nil {
			if _, ok := err.(*configError); !ok {
				t.Fatalf("%T: %v", err, err)
			}
			return
		}
		if len(cfg.endpoints) > maxAgentEndpoints {
			t.Fatalf("%d endpoints", len(cfg.endpoints))
		}
		for _, e := range cfg.endpoints {
			if e.name == "" || e.target.addr == "" || (e.proto != "http" && e.proto != "tcp" && e.proto != "tls") {
				t.Fatalf("endpoint %+v", e)
			}
		}
	})
}

// TestAgentConfigDefaultPath: $XDG_CONFIG_HOME/edgeplane/agent.yml, else
// $HOME/.config/edgeplane/agent.yml (a relative XDG_CONFIG_HOME is
// ignored, as the XDG specification says), else none.
func TestAgentConfigDefaultPath(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_CONFIG_HOME": "/x/config", "HOME": "/home/u"}, "/x/config/edgeplane/agent.yml"},
		{map[string]string{"XDG_CONFIG_HOME": "config", "HOME": "/home/u"}, "/home/u/.config/edgeplane/agent.yml"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.config/edgeplane/agent.yml"},
		{nil, ""},
	} {
		if got := defaultAgentConfigPath(func(k string) string { return tc.env[k] }); got != filepath.FromSlash(tc.want) {
			t.Errorf("%v: %q, want %q", tc.env, got, tc.want)
		}
	}
}

// agentCLI runs edgeplane agent in this process with env and returns the
// exit code and the output (stdout, then stderr).
func agentCLI(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"agent"}, args...), func(k string) string { return env[k] }, &stdout, &stderr, nil)
	return code, stdout.String(), stderr.String()
}

// TestAgentConfigWrite: config add-authtoken makes the file (mode 0600)
// and its directory (0700) at the default path, and prints where, never
// the token; a second token replaces the first; add-server adds servers
// once each (however spelled); the file keeps its other keys and
// comments; one of another mode becomes 0600; and what they wrote reads
// back as the agent's settings.
func TestAgentConfigWrite(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	path := filepath.Join(home, ".config", "edgeplane", "agent.yml")
	mode := func(p string) fs.FileMode {
		t.Helper()
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode().Perm()
	}
	code, out, errOut := agentCLI(t, env, "config", "add-authtoken", "ept_firstSecretToken")
	if code != 0 || out != "authtoken saved to "+path+"\n" || errOut != "" {
		t.Fatalf("add-authtoken: exit %d, %q %q", code, out, errOut)
	}
	if m := mode(path); m != 0o600 {
		t.Errorf("the file's mode is %v, want 0600", m)
	}
	if m := mode(filepath.Dir(path)); m != 0o700 {
		t.Errorf("its directory's mode is %v, want 0700", m)
	}
	for _, args := range [][]string{
		{"config", "add-authtoken", "ept_secondSecretToken"},
		{"config", "add-server", "edge-1.example.com:4443"},
		{"config", "add-server", "EDGE-1.example.com:04443"}, // the same server
		{"config", "add-server", "[::1]:4443"},
	} {
		if code, out, errOut := agentCLI(t, env, args...); code != 0 || strings.Contains(out+errOut, "SecretToken") {
			t.Fatalf("%v: exit %d, %q %q", args, code, out, errOut)
		} else if args[1] == "add-server" && args[2] == "EDGE-1.example.com:04443" && !strings.Contains(out, "is in "+path+" already") {
			t.Errorf("the same server again: %q", out)
		}
	}
	want := "version: 1\nagent:\n  authtoken: ept_secondSecretToken\n  servers:\n    - edge-1.example.com:4443\n    - '[::1]:4443'\n"
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Errorf("the file:\n%s\nwant\n%s", got, want)
	}
	f, err := readAgentFile(path, true)
	if err != nil || f.authtoken != "ept_secondSecretToken" || !reflect.DeepEqual(f.servers, []string{"edge-1.example.com:4443", "[::1]:4443"}) {
		t.Errorf("read back: %+v, %v", f, err)
	}

	// A file of the user's, with comments, other keys and mode 0644.
	mine := filepath.Join(t.TempDir(), "mine.yml")
	orig := "# my agent\nversion: 1\nagent:\n  authtoken: old # replace me\n  inspect: false\nendpoints:\n  # the app\n  - name: web\n    url: https://app.example.com\n    upstream: {url: 3000}\n"
	if err := os.WriteFile(mine, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := agentCLI(t, env, "config", "add-authtoken", "-config", mine, "ept_third"); code != 0 {
		t.Fatalf("add-authtoken -config: exit %d, %q %q", code, out, errOut)
	}
	got, _ := os.ReadFile(mine)
	for _, keep := range []string{"# my agent\n", "authtoken: ept_third # replace me\n", "inspect: false\n", "  # the app\n", "- name: web\n", "upstream: {url: 3000}\n"} {
		if !strings.Contains(string(got), keep) {
			t.Errorf("the file lost %q:\n%s", keep, got)
		}
	}
	if m := mode(mine); m != 0o600 {
		t.Errorf("the rewritten file's mode is %v, want 0600", m)
	}

	// What the file holds is the agent's default; a flag or variable wins.
	c, err := parseAgentArgs([]string{"http", "3000"}, func(k string) string { return env[k] }, nil)
	if err != nil || c.authtoken != "ept_secondSecretToken" || c.server != "edge-1.example.com:4443,[::1]:4443" || len(c.servers) != 2 {
		t.Errorf("from the file: %+v, %v", c, err)
	}
	env2 := map[string]string{"HOME": home, "EDGEPLANE_AUTHTOKEN": "ept_fromEnv"}
	c, err = parseAgentArgs([]string{"-server", "flag.example.com:1", "-config", mine, "http", "3000"}, func(k string) string { return env2[k] }, nil)
	if err != nil || c.authtoken != "ept_fromEnv" || c.server != "flag.example.com:1" || c.inspectAddr != "" || c.inspect.or(true) {
		t.Errorf("flags and variables over -config's file: %+v, %v", c, err)
	}

	// Refusals: no token, a bad server, a file that is not YAML.
	broken := filepath.Join(t.TempDir(), "broken.yml")
	os.WriteFile(broken, []byte("agent: [\n"), 0o600)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"config", "add-authtoken"}, 2, "config add-authtoken: give one TOKEN"},
		{[]string{"config", "add-authtoken", "ept a"}, 2, "the token must have no spaces"},
		{[]string{"config", "add-server", "edge.example.com"}, 2, `config add-server "edge.example.com": want HOST:PORT`},
		{[]string{"config", "add-server", "-config", broken, "a.example.com:1"}, 1, broken + ": not valid YAML: line 1: "},
		{[]string{"config", "add-token", "x"}, 2, `config: unknown command "add-token": want add-authtoken, add-server or check`},
		{[]string{"config"}, 2, "config: which command?"},
	} {
		code, out, errOut := agentCLI(t, env, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q %q; want %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
	if code, _, errOut := agentCLI(t, nil, "config", "add-authtoken", "ept_x"); code != 2 || !strings.Contains(errOut, "give -config FILE: the default path needs $XDG_CONFIG_HOME or $HOME") {
		t.Errorf("no default path: exit %d, %q", code, errOut)
	}
}

// TestAgentConfigCheck: config check prints the file's settings and
// endpoints with their traffic policies (exit 0), or every error with
// its line and path (exit 1); with a tunnel's command line it prints the
// policy the flags make, the file optional.
func TestAgentConfigCheck(t *testing.T) {
	ca := newTestCA(t)
	dir := writeAgentDir(t, map[string]string{
		"agent.yml":  goodAgentFile,
		"ca.pem":     ca.pem,
		"policy.yml": "on_http_request: []\n",
		"bad.yml":    "version: 1\nendpoints:\n  - name: a\n    url: https://a.example.com\n    upstream:\n      ur: 3000\n  - name: b\n",
	})
	code, out, errOut := agentCLI(t, nil, "-config", filepath.Join(dir, "agent.yml"), "config", "check")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	for _, want := range []string{
		filepath.Join(dir, "agent.yml") + ": ok\n",
		"authtoken: set\n",
		"servers: edge-1.example.com:4443, [::1]:4443\n",
		"agent API: 127.0.0.1:4041\n",
		"endpoint web: https://app.example.com -> http://127.0.0.1:3000\n  traffic policy:\n  {\n    \"on_http_request\": [\n      {\n        \"name\": \"deny bots\",",
		"endpoint api: https://api.example.com -> https://127.0.0.1:8443\n  pooling enabled\n  bindings: public\n  traffic policy:\n  {\n    \"on_http_request\": []\n  }\n",
		"endpoint ssh: tcp:// (the server picks the address) -> 10.0.0.2:22\n",
		"endpoint group: labels app=web,env=prod -> http://127.0.0.1:3001\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("config check's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ept_fileToken") {
		t.Errorf("the token is printed: %s", out)
	}

	bad := filepath.Join(dir, "bad.yml")
	code, out, errOut = agentCLI(t, map[string]string{"EDGEPLANE_CONFIG": bad}, "config", "check")
	want := "edgeplane: " + bad + ": 4 errors\n" +
		"  " + bad + ":6:7: endpoints[0].upstream.ur: unknown key; want url\n" +
		"  " + bad + ":6:7: endpoints[0].upstream.url: is required: a PORT, an http:// or https:// URL, or HOST:PORT\n" +
		"  " + bad + ":7:5: endpoints[1]: needs one of url (https://NAME, http://NAME, tls://NAME or tcp://HOST:PORT), domain (an https endpoint's NAME) or labels (a labeled tunnel)\n" +
		"  " + bad + ":7:5: endpoints[1].upstream: is required: upstream: {url: ...}, where the agent forwards the endpoint's connections\n"
	if code != 1 || out != "" || errOut != want {
		t.Errorf("a bad file: exit %d, %q\n%s\nwant\n%s", code, out, errOut, want)
	}
	if code, _, errOut := agentCLI(t, nil, "config", "check", "-config", filepath.Join(dir, "none.yml")); code != 1 || !strings.Contains(errOut, "config check: no configuration file at "+filepath.Join(dir, "none.yml")) {
		t.Errorf("a missing file: exit %d, %q", code, errOut)
	}

	// A tunnel's command line, without a file: its endpoint and the
	// policy its flags make.
	code, out, errOut = agentCLI(t, nil, "config", "check", "tcp", "22", "-cidr-deny", "198.51.100.7")
	if code != 0 || out != "endpoint command_line: tcp:// (the server picks the address) -> 127.0.0.1:22\n  traffic policy:\n  {\n    \"on_tcp_connect\": [\n      {\n        \"name\": \"agent -cidr-allow/-cidr-deny\",\n        \"actions\": [\n          {\n            \"type\": \"restrict-ips\",\n            \"config\": {\n              \"deny\": [\n                \"198.51.100.7/32\"\n              ]\n            }\n          }\n        ]\n      }\n    ]\n  }\n" {
		t.Errorf("check of a tunnel: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := agentCLI(t, nil, "config", "check", "http", "3000", "-basic-auth", "alice"); code != 2 || !strings.Contains(errOut, "-basic-auth (the 1st one): want USER:PASSWORD") {
		t.Errorf("check of a bad tunnel: exit %d, %q", code, errOut)
	}
}

// TestAgentStartArgs: agent start runs the endpoints named, in the
// order given, or all of them (-all), from the file; an unknown name,
// both or neither, and a missing file are refused with what to do.
func TestAgentStartArgs(t *testing.T) {
	ca := newTestCA(t)
	dir := writeAgentDir(t, map[string]string{"agent.yml": goodAgentFile, "ca.pem": ca.pem, "policy.yml": "{}\n"})
	cfg := filepath.Join(dir, "agent.yml")
	env := map[string]string{"EDGEPLANE_CONFIG": cfg}
	parse := func(env map[string]string, args ...string) (agentRun, error) {
		c, fs, rest, err := parseAgentFlags(args, func(k string) string { return env[k] }, nil)
		if err != nil {
			return agentRun{}, err
		}
		return parseAgentStart(c, fs, rest[1:], func(k string) string { return env[k] }, nil)
	}
	names := func(r agentRun) []string {
		var out []string
		for _, e := range r.endpoints {
			out = append(out, e.name)
		}
		return out
	}
	r, err := parse(env, "start", "db", "web")
	if err != nil || !reflect.DeepEqual(names(r), []string{"db", "web"}) || !r.named || r.c.authtoken != "ept_fileToken" || r.c.ca != filepath.Join(dir, "ca.pem") || len(r.c.servers) != 2 {
		t.Errorf("start db web: %v %+v, %v", names(r), r.c, err)
	}
	r, err = parse(env, "-authtoken", "ept_flag", "start", "-all")
	if err != nil || len(r.endpoints) != 7 || r.c.authtoken != "ept_flag" {
		t.Errorf("start -all: %v, %v", names(r), err)
	}
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{env, []string{"start"}, "start: which endpoints? give their names, or -all"},
		{env, []string{"start", "-all", "web"}, "start: give endpoint names or -all, not both"},
		{env, []string{"start", "web", "web"}, `start: "web" is given twice`},
		{env, []string{"start", "nope"}, `start: ` + cfg + ` has no endpoint named "nope" (it has: web, plain, api, secure, db, ssh, group)`},
		{env, []string{"start", "web", "-server", "x:1"}, "start: -server is the agent's flag: give it before start"},
		{map[string]string{"HOME": dir}, []string{"start", "web"}, "start: no configuration file at " + filepath.Join(dir, ".config", "edgeplane", "agent.yml")},
		{nil, []string{"-config", filepath.Join(dir, "none.yml"), "start", "-all"}, "-config " + filepath.Join(dir, "none.yml") + ": the file does not exist"},
	} {
		if _, err := parse(tc.env, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// docBlocks returns the fenced blocks of docs/agent.md whose info string
// is lang.
func docBlocks(t *testing.T, lang string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	parts := strings.Split(string(data), "```")
	for i := 1; i < len(parts); i += 2 {
		if info, body, ok := strings.Cut(parts[i], "\n"); ok && info == lang {
			blocks = append(blocks, body)
		}
	}
	return blocks
}

// TestAgentDocs: docs/agent.md's example file is a good file (its ca
// and policy file stood in for), and each agent command of its shell
// blocks runs as written: the config commands against a new home
// directory, the tunnel's command line parsed with the file they wrote
// (nothing connects).
func TestAgentDocs(t *testing.T) {
	ca := newTestCA(t)
	yamls := docBlocks(t, "yaml")
	if len(yamls) == 0 {
		t.Fatal("no yaml blocks in docs/agent.md, want the example file first")
	}
	read := func(p string, n int) ([]byte, error) {
		switch filepath.Base(p) {
		case "tunnel-ca.pem":
			return []byte(ca.pem), nil
		case "api-policy.yml":
			return []byte("on_http_request: []\n"), nil
		}
		return nil, fs.ErrNotExist
	}
	f, err := parseAgentFile("agent.yml", []byte(yamls[0]), read)
	if err != nil {
		t.Fatalf("docs/agent.md's example: %v", err)
	}
	if len(f.endpoints) != 5 || len(f.servers) != 2 || f.authtoken != "ept_..." {
		t.Errorf("docs/agent.md's example reads as %+v", f)
	}
	for i, y := range yamls[1:] { // the other examples are good files too
		if _, err := parseAgentFile("agent.yml", []byte(y), read); err != nil {
			t.Errorf("docs/agent.md's yaml block %d: %v", i+2, err)
		}
	}

	env := map[string]string{"HOME": t.TempDir()}
	ran := 0
	for _, block := range docBlocks(t, "sh") {
		for _, line := range strings.Split(block, "\n") {
			cmd, _, _ := strings.Cut(line, "#")
			words := strings.Fields(cmd)
			if len(words) < 2 || words[0] != "edgeplane" || words[1] != "agent" {
				continue
			}
			ran++
			if words[2] == "config" {
				if code, out, errOut := agentCLI(t, env, words[2:]...); code != 0 {
					t.Errorf("%s: exit %d, %s %s", cmd, code, out, errOut)
				}
				continue
			}
			if _, err := parseAgentArgs(words[2:], func(k string) string { return env[k] }, io.Discard); err != nil {
				t.Errorf("%s: %v", cmd, err)
			}
		}
	}
	if ran < 5 {
		t.Errorf("%d agent commands in docs/agent.md's shell blocks", ran)
	}
}
