package main

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/policy"
)

// zeroSalts stands in for crypto/rand, so that a hash (and the document
// holding it) is the same each run.
func zeroSalts() io.Reader { return bytes.NewReader(make([]byte, 1<<10)) }

// TestAgentPolicyShortcuts: the shortcuts make one document, their rules
// in a fixed order (restrict-ips, basic-auth, request add-headers;
// response add-headers outbound), on_http_request for http and
// on_tcp_connect for tcp and tls; a policy file's rules follow them, in
// the phase the file names; the document compiles in the policy engine
// the server runs.
func TestAgentPolicyShortcuts(t *testing.T) {
	hash := "$pbkdf2-sha256$100000$AAAAAAAAAAAAAAAAAAAAAA$" + base64.RawStdEncoding.EncodeToString(mustPBKDF2(t, "s3cret", make([]byte, 16)))
	all := policyShortcuts{basicAuth: []string{"alice:s3cret"}, cidrAllow: []string{"203.0.113.0/24", "2001:db8::1"}, cidrDeny: []string{"203.0.113.7"},
		requestHeaders: []string{"X-From: edgeplane agent", "x-user: ${actions.service.basic_auth.username}"}, responseHeaders: []string{"Cache-Control:no-store"}}
	for _, tc := range []struct {
		name, proto, file string
		s                 policyShortcuts
		want              string
	}{
		{"http, every shortcut", "http", "", all,
			`{"on_http_request":[` +
				`{"name":"agent -cidr-allow/-cidr-deny","actions":[{"type":"restrict-ips","config":{"allow":["203.0.113.0/24","2001:db8::1/128"],"deny":["203.0.113.7/32"]}}]},` +
				`{"name":"agent -basic-auth","actions":[{"type":"basic-auth","config":{"credentials":["alice:` + hash + `"]}}]},` +
				`{"name":"agent -request-header-add","actions":[{"type":"add-headers","config":{"headers":{"x-from":"edgeplane agent","x-user":"${actions.service.basic_auth.username}"}}}]}],` +
				`"on_http_response":[{"name":"agent -response-header-add","actions":[{"type":"add-headers","config":{"headers":{"cache-control":"no-store"}}}]}]}`},
		{"tcp", "tcp", "", policyShortcuts{cidrDeny: []string{"198.51.100.0/24"}},
			`{"on_tcp_connect":[{"name":"agent -cidr-allow/-cidr-deny","actions":[{"type":"restrict-ips","config":{"deny":["198.51.100.0/24"]}}]}]}`},
		{"a file alone", "http", `{"on_http_request":[{"actions":[{"type":"deny"}]}]}`, policyShortcuts{},
			`{"on_http_request":[{"actions":[{"type":"deny"}]}]}`},
		{"a file, the shortcuts first", "http", `{"inbound":[{"name":"mine","actions":[{"type":"deny"}]}],"outbound":[]}`, policyShortcuts{basicAuth: []string{"alice:s3cret"}},
			`{"inbound":[{"name":"agent -basic-auth","actions":[{"type":"basic-auth","config":{"credentials":["alice:` + hash + `"]}}]},{"name":"mine","actions":[{"type":"deny"}]}],"outbound":[]}`},
		{"a file of outbound rules", "http", `{"on_http_response":[{"actions":[{"type":"remove-headers","config":{"headers":["server"]}}]}]}`, policyShortcuts{responseHeaders: []string{"X-A: 1"}},
			`{"on_http_response":[{"name":"agent -response-header-add","actions":[{"type":"add-headers","config":{"headers":{"x-a":"1"}}}]},{"actions":[{"type":"remove-headers","config":{"headers":["server"]}}]}]}`},
		{"neither", "tls", "", policyShortcuts{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tunnelPolicy(tc.proto, tc.file, tc.s, zeroSalts())
			if err != nil || got != tc.want {
				t.Fatalf("got  %s, %v\nwant %s", got, err, tc.want)
			}
			if got == "" {
				return
			}
			eng, err := policy.NewEngine(policy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			target := policy.TargetHTTP
			if tc.proto != "http" {
				target = policy.TargetConnection
			}
			if _, err := eng.CompileJSON([]byte(got), policy.CompileOptions{Target: target}); err != nil {
				t.Errorf("the document does not compile: %v", err)
			}
		})
	}
	// With crypto/rand, each password has a salt of its own, and its hash
	// verifies it.
	doc, err := tunnelPolicy("http", "", policyShortcuts{basicAuth: []string{"alice:s3cret", "bob:s3cret"}}, cryptoRand)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		OnHTTPRequest []struct {
			Actions []struct {
				Config struct{ Credentials []string }
			}
		} `json:"on_http_request"`
	}
	if err := json.Unmarshal([]byte(doc), &d); err != nil || len(d.OnHTTPRequest) != 1 {
		t.Fatalf("%s: %v", doc, err)
	}
	creds := d.OnHTTPRequest[0].Actions[0].Config.Credentials
	if len(creds) != 2 || strings.Contains(doc, "s3cret") {
		t.Fatalf("credentials %q", creds)
	}
	var salts []string
	for _, c := range creds {
		parts := strings.Split(c, "$") // user:, pbkdf2-sha256, iterations, salt, key
		salt, _ := base64.RawStdEncoding.DecodeString(parts[3])
		key, _ := base64.RawStdEncoding.DecodeString(parts[4])
		iter, _ := strconv.Atoi(parts[2])
		if iter != agentPBKDF2Iterations || !bytes.Equal(mustPBKDF2(t, "s3cret", salt), key) {
			t.Errorf("%s does not verify s3cret", c)
		}
		salts = append(salts, parts[3])
	}
	if salts[0] == salts[1] {
		t.Errorf("two passwords hashed with one salt: %q", salts)
	}
}

func mustPBKDF2(t *testing.T, password string, salt []byte) []byte {
	t.Helper()
	k, err := pbkdf2.Key(sha256.New, password, salt, agentPBKDF2Iterations, 32)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestAgentPolicyFlags: the shortcuts and -traffic-policy-file as agent's
// flags: each mistake exits 2 (1 for a file that cannot be used) with a
// message naming the flag, never showing a password; a labeled tunnel
// takes none; the flags are defined on the tunnels they apply to.
func TestAgentPolicyFlags(t *testing.T) {
	dir := writeAgentDir(t, map[string]string{
		"policy.yml":  "on_http_request:\n  - actions:\n      - type: deny\n",
		"bad.yml":     "on_http_request:\n  - actions:\n      - typ: deny\n",
		"notyaml.yml": "on_http_request: [\n",
	})
	base := []string{"agent", "-server", "tunnel.example.com:4443", "-authtoken", agentToken}
	with := func(args ...string) []string { return append(append([]string{}, base...), args...) }
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"basic-auth without a password", with("http", "3000", "-basic-auth", "alice"), 2, "-basic-auth (the 1st one): want USER:PASSWORD, both non-empty"},
		{"basic-auth empty password", with("http", "3000", "-basic-auth", "bob:x", "-basic-auth", "alice:"), 2, "-basic-auth (the 2nd one): want USER:PASSWORD"},
		{"basic-auth user twice", with("http", "3000", "-basic-auth", "alice:pw1secret", "-basic-auth", "alice:pw2secret"), 2, `-basic-auth: the user "alice" is given twice`},
		{"bad CIDR", with("tcp", "22", "-cidr-allow", "10.0.0.0/33"), 2, `-cidr-allow "10.0.0.0/33": want ADDRESS/BITS (10.0.0.0/8, 2001:db8::/32) or an address`},
		{"bad header", with("http", "3000", "-request-header-add", "X-A"), 2, `-request-header-add "X-A": want "Name: value"`},
		{"bad header name", with("http", "3000", "-response-header-add", "X A: 1"), 2, `-response-header-add "X A: 1": the name must be letters, digits`},
		{"header twice", with("http", "3000", "-request-header-add", "X-A: 1", "-request-header-add", "x-a: 2"), 2, "-request-header-add: the header x-a is given twice"},
		{"basic-auth on tcp", with("tcp", "22", "-basic-auth", "a:b"), 2, "tcp: flag provided but not defined: -basic-auth"},
		{"headers on tls", with("tls", "8443", "-domain", "a.example.com", "-request-header-add", "X: 1"), 2, "tls: flag provided but not defined: -request-header-add"},
		{"policy on a labeled tunnel", with("http", "3000", "-label", "app=web", "-basic-auth", "a:b"), 2, "-label: a labeled tunnel carries no traffic policy"},
		{"policy file missing", with("http", "3000", "-traffic-policy-file", filepath.Join(dir, "none.yml")), 1, "-traffic-policy-file: open " + filepath.Join(dir, "none.yml")},
		{"policy file not YAML", with("http", "3000", "-traffic-policy-file", filepath.Join(dir, "notyaml.yml")), 1, "-traffic-policy-file " + filepath.Join(dir, "notyaml.yml") + ": neither JSON nor YAML"},
		{"policy file of a bad action", with("http", "3000", "-traffic-policy-file", filepath.Join(dir, "bad.yml")), 1, "-traffic-policy-file " + filepath.Join(dir, "bad.yml") + `: on_http_request[0].actions[0].typ: unknown field "typ"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code := run(t.Context(), tc.args, func(string) string { return "" }, &out, &out, nil)
			if code != tc.code || !strings.Contains(out.String(), tc.out) {
				t.Errorf("exit %d, want %d; output %q lacks %q", code, tc.code, out.String(), tc.out)
			}
			for _, secret := range []string{"pw1secret", "pw2secret", agentToken} {
				if strings.Contains(out.String(), secret) {
					t.Errorf("%s is printed: %q", secret, out.String())
				}
			}
		})
	}
	// A good command line: the file's rules after the shortcuts', sent
	// with the bind.
	c, err := parseAgentArgs([]string{"-server", "t.example.com:443", "-authtoken", "tok", "http", "3000", "-domain", "app.example.com",
		"-cidr-deny", "192.0.2.1", "-traffic-policy-file", filepath.Join(dir, "policy.yml")}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"on_http_request":[{"name":"agent -cidr-allow/-cidr-deny","actions":[{"type":"restrict-ips","config":{"deny":["192.0.2.1/32"]}}]},{"actions":[{"type":"deny"}]}]}`
	if c.policy != want {
		t.Errorf("policy %s\nwant   %s", c.policy, want)
	}
	opts := mustJSON(t, c.tunnelConfig().(sdkConfig).Opts())
	if !strings.Contains(opts, `"TrafficPolicy":`+strconv.Quote(want)) {
		t.Errorf("the bind's options %s lack the policy", opts)
	}
	if _, err := os.Stat(filepath.Join(dir, "policy.yml")); err != nil {
		t.Fatal(err)
	}
}

// FuzzAgentPolicyShortcuts: the shortcuts never panic; what they accept
// makes a document the policy engine compiles (unless a header's value
// holds a ${...} template it cannot: the server says so, naming the
// shortcut's rule), which holds no password in clear.
func FuzzAgentPolicyShortcuts(f *testing.F) {
	f.Add("alice:s3cret", "10.0.0.0/8", "2001:db8::1", "X-A: 1", "Cache-Control: no-store")
	f.Add("a:b:c", "1.2.3.4", "::ffff:1.2.3.4", "X: ${conn.client_ip}", "Y:")
	f.Add(":x", "10.0.0.0/33", "fe80::1%eth0", "bad name: 1", "X-B: \x00")
	f.Add("bob:pw", "0.0.0.0/0", "::/0", "X-C: ${nope", "X-D: ${req.host}")
	eng, err := policy.NewEngine(policy.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, basic, allow, deny, reqH, respH string) {
		s := policyShortcuts{basicAuth: []string{basic}, cidrAllow: []string{allow}, cidrDeny: []string{deny},
			requestHeaders: []string{reqH}, responseHeaders: []string{respH}}
		doc, err := tunnelPolicy("http", "", s, zeroSalts())
		if err != nil {
			if _, ok := err.(usageError); !ok {
				t.Fatalf("%T: %v", err, err)
			}
			return
		}
		if _, err := eng.CompileJSON([]byte(doc), policy.CompileOptions{}); err != nil &&
			(!strings.Contains(reqH+respH, "${") || !strings.Contains(err.Error(), `rule "agent -re`)) {
			t.Fatalf("%q: %v", doc, err)
		}
		if _, password, _ := strings.Cut(basic, ":"); len(password) >= 4 && strings.Contains(doc, password) {
			t.Fatalf("the password %q is in the document %s", password, doc)
		}
	})
}
