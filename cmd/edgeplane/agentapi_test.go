package main

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.ngrok.com/ngrok"
)

// fakeTunnel is the part of a tunnel of the SDK the agent API reads.
type fakeTunnel struct {
	ngrok.Tunnel
	id, url, proto string
}

func (t fakeTunnel) ID() string    { return t.id }
func (t fakeTunnel) URL() string   { return t.url }
func (t fakeTunnel) Proto() string { return t.proto }

// originalTunnelShape is a tunnel of GET /api/tunnels as the original
// agent's documentation shows one (ngrok.com/docs/agent/api, "List
// tunnels"), its keys' JSON types: the agent API's golden shape. ("ID"
// is spelled so in the original's newer agents.)
var originalTunnelShape = map[string]string{
	"name": "string", "ID": "string", "uri": "string", "public_url": "string", "proto": "string",
	"config": "object", "config.addr": "string", "config.inspect": "bool",
	"metrics": "object", "metrics.conns": "object", "metrics.conns.count": "number", "metrics.conns.gauge": "number",
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case float64:
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return "null"
}

// lookup returns the value at a dotted path of a decoded object.
func lookup(m map[string]any, path string) (any, bool) {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = o[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// apiGet requests path of the agent API at base with the Host header
// host ("" for the URL's), and returns the status and body.
func apiGet(t *testing.T, method, base, path, host string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// TestAgentAPIGolden: GET /api/tunnels, /api/tunnels/{name} and
// /api/status answer in the original agent's shape: the exact bodies
// here, each tunnel's keys of the types the original documents; an
// unknown name is a 404 in the original's error shape.
func TestAgentAPIGolden(t *testing.T) {
	st := newAgentState(2)
	web := st.add(&agentEndpoint{name: "web", target: agentTarget{"http", "127.0.0.1:3000"}}, fakeTunnel{id: "ep_1", url: "https://app.example.com", proto: "https"})
	st.add(&agentEndpoint{name: "group", labels: map[string]string{"app": "web"}, target: agentTarget{"http", "127.0.0.1:3001"}}, fakeTunnel{id: "tn_2"})
	web.opened()
	web.opened()
	web.closed()
	srv := httptest.NewServer(st.handler())
	defer srv.Close()

	code, _, body := apiGet(t, "GET", srv.URL, "/api/status", "")
	if want := `{"uri":"/api/status","status":"connecting","server":"","sessions":0,"tunnels":2}` + "\n"; code != 200 || body != want {
		t.Errorf("status before a session: %d %s", code, body)
	}
	st.connected("127.0.0.1:4443")
	st.disconnected()
	st.connected("127.0.0.2:4443")

	webJSON := `{"name":"web","ID":"ep_1","uri":"/api/tunnels/web","public_url":"https://app.example.com","proto":"https","config":{"addr":"http://127.0.0.1:3000","inspect":false},"metrics":{"conns":{"count":2,"gauge":1}}}`
	groupJSON := `{"name":"group","ID":"tn_2","uri":"/api/tunnels/group","public_url":"","proto":"","config":{"addr":"http://127.0.0.1:3001","inspect":false},"metrics":{"conns":{"count":0,"gauge":0}},"labels":{"app":"web"}}`
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/api/tunnels", 200, `{"tunnels":[` + webJSON + `,` + groupJSON + `],"uri":"/api/tunnels"}`},
		{"/api/tunnels/web", 200, webJSON},
		{"/api/tunnels/group", 200, groupJSON},
		{"/api/tunnels/nope", 404, `{"error_code":404,"status_code":404,"msg":"no tunnel named \"nope\""}`},
		{"/api/status", 200, `{"uri":"/api/status","status":"online","server":"127.0.0.2:4443","sessions":2,"tunnels":2}`},
		{"/api/requests/http", 404, `{"error_code":404,"status_code":404,"msg":"no such resource: the agent API serves GET /api/tunnels, /api/tunnels/{name} and /api/status"}`},
	} {
		code, h, body := apiGet(t, "GET", srv.URL, tc.path, "")
		if code != tc.code || body != tc.want+"\n" || h.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: %d %s %s\nwant %d %s", tc.path, code, h.Get("Content-Type"), body, tc.code, tc.want)
		}
	}

	_, _, body = apiGet(t, "GET", srv.URL, "/api/tunnels", "")
	var list struct {
		Tunnels []map[string]any `json:"tunnels"`
		URI     string           `json:"uri"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil || list.URI != "/api/tunnels" || len(list.Tunnels) != 2 {
		t.Fatalf("%s: %v", body, err)
	}
	for _, tun := range list.Tunnels {
		for path, typ := range originalTunnelShape {
			if v, ok := lookup(tun, path); !ok || jsonType(v) != typ {
				t.Errorf("tunnel %v: %s is %s (present %v), want %s", tun["name"], path, jsonType(v), ok, typ)
			}
		}
	}
}

// TestAgentAPIGuard: the agent API answers only requests to a loopback
// name (a page of another site, its name pointed at 127.0.0.1, sends its
// own: DNS rebinding), and only GET.
func TestAgentAPIGuard(t *testing.T) {
	srv := httptest.NewServer(newAgentState(0).handler())
	defer srv.Close()
	for _, tc := range []struct {
		host string
		code int
	}{
		{"localhost:4040", 200},
		{"LOCALHOST", 200},
		{"127.0.0.1", 200},
		{"127.1.2.3:80", 200},
		{"[::1]:4040", 200},
		{"[::1]", 200},
		{"evil.example.com", 403},
		{"evil.example.com:4040", 403},
		{"localhost.evil.example.com:4040", 403},
		{"0.0.0.0:4040", 403},
		{"192.0.2.1", 403},
	} {
		code, _, body := apiGet(t, "GET", srv.URL, "/api/tunnels", tc.host)
		if code != tc.code {
			t.Errorf("Host %q: %d %s, want %d", tc.host, code, body, tc.code)
		}
		if code == 403 && !strings.Contains(body, `"msg":"the agent API answers requests to a loopback name only`) {
			t.Errorf("Host %q: %s", tc.host, body)
		}
	}
	for _, m := range []string{"POST", "PUT", "DELETE"} {
		code, h, body := apiGet(t, m, srv.URL, "/api/tunnels", "")
		if code != 405 || h.Get("Allow") != "GET, HEAD" || !strings.Contains(body, m+" is not served") {
			t.Errorf("%s /api/tunnels: %d %v %s", m, code, h, body)
		}
	}
}

// TestAgentAPIPorts: without an address the agent API takes the first
// free port of the ten from its default; when all are taken it says so;
// an address given must be free.
func TestAgentAPIPorts(t *testing.T) {
	var first int
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	hold := func(p int) bool {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		held = append(held, l)
		return true
	}
	for range 100 { // three consecutive ports below the ephemeral range (see freePort), the first held
		p := 20000 + rand.IntN(11000)
		if hold(p) {
			if c, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+1)); err == nil {
				c.Close()
				first = p
				break
			}
		}
	}
	if first == 0 {
		t.Fatal("no free ports")
	}
	def := "127.0.0.1:" + strconv.Itoa(first)
	ln, err := listenAgentAPI("", def, 3)
	if err != nil || ln.Addr().String() != "127.0.0.1:"+strconv.Itoa(first+1) {
		t.Fatalf("%v, %v; want the next port, %d", ln, err, first+1)
	}
	held = append(held, ln)
	if !hold(first + 2) {
		t.Skipf("port %d was taken meanwhile", first+2)
	}
	if _, err := listenAgentAPI("", def, 3); err == nil || err.Error() != "the ports "+strconv.Itoa(first)+" to "+strconv.Itoa(first+2)+" of 127.0.0.1 are all in use" {
		t.Errorf("all taken: %v", err)
	}
	if _, err := listenAgentAPI(def, defaultInspectAddr, defaultInspectPorts); err == nil {
		t.Errorf("an address given that is taken: no error")
	}
	// The agent ends at once, before connecting, naming the flag (or the
	// file's key) that gave the address.
	file := filepath.Join(t.TempDir(), "agent.yml")
	if err := os.WriteFile(file, []byte("version: 1\nagent:\n  inspect_addr: "+def+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-inspect-addr", def}, "edgeplane: -inspect-addr " + def + ": listen tcp " + def + ": bind: address already in use (give another address, or off)\n"},
		{[]string{"-config", file}, "edgeplane: agent.inspect_addr in " + file + " " + def + ": listen tcp " + def + ": bind: address already in use (give another address, or off)\n"},
	} {
		code, _, stderr, _ := runAgentToExit(t, append(tc.args, "-server", "127.0.0.1:1", "-authtoken", agentToken, "tcp", "22"), nil, 10*time.Second)
		if code != 1 || stderr != tc.want {
			t.Errorf("%v: exit %d, %q; want 1, %q", tc.args, code, stderr, tc.want)
		}
	}
}

// FuzzAgentAPIHost: the Host guard never panics, and admits only a Host
// whose host part is localhost or a loopback address.
func FuzzAgentAPIHost(f *testing.F) {
	for _, s := range []string{"localhost:4040", "127.0.0.1", "[::1]:4040", "[::1]", "evil.example.com", "127.0.0.1.evil.example.com", "[::ffff:127.0.0.1]:1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if !isLoopbackHost(host) {
			return
		}
		h := host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			h = hh
		}
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if ip := net.ParseIP(h); !strings.EqualFold(h, "localhost") && (ip == nil || !ip.IsLoopback()) {
			t.Fatalf("%q admitted", host)
		}
	})
}
