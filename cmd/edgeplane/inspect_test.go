package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// inspected is an upstream reached through forwardInspected, as an
// agent's http endpoint named "web" forwards to it.
type inspected struct {
	ins    *inspector
	target agentTarget
	client *http.Client
	wg     sync.WaitGroup
}

// newInspected returns a client whose requests go through the agent's
// forwarding, captured by ins, to up.
func newInspected(t testing.TB, ins *inspector, up *httptest.Server) *inspected {
	t.Helper()
	x := &inspected{ins: ins, target: agentTarget{"http", strings.TrimPrefix(up.URL, "http://")}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	x.client = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		near, far := tcpPair(t)
		x.wg.Add(1)
		go func() {
			defer x.wg.Done()
			forwardInspected(context.Background(), tunnelConn{near, &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 40000}, "https", false}, x.target, logger, ins, "web")
		}()
		return far, nil
	}}}
	t.Cleanup(func() {
		x.client.CloseIdleConnections()
		x.wg.Wait()
	})
	return x
}

// waitCaptures waits until ins holds n captures (they are added once
// both bodies are read, as the client reads its response) and returns
// them, newest first.
func waitCaptures(t *testing.T, ins *inspector, n int) []*capture {
	t.Helper()
	var got []*capture
	if _, ok := within(5*time.Second, func() bool { got = ins.captures("", 0); return len(got) >= n }); !ok || len(got) != n {
		t.Fatalf("%d captures, want %d", len(got), n)
	}
	return got
}

// echoUpstream answers each request with its body's size and SHA-256
// and then size bytes (?size=N, chunked unless ?cl=1).
func echoUpstream(t testing.TB) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Got", fmt.Sprintf("%d %x", len(body), sha256.Sum256(body)))
		w.Header().Set("Content-Type", "application/octet-stream")
		n, _ := strconv.Atoi(r.URL.Query().Get("size"))
		if r.URL.Query().Get("cl") == "1" {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		w.Write(bytes.Repeat([]byte("r"), n))
	}))
	t.Cleanup(up.Close)
	return up
}

// TestInspectCaptureBodies: a request and its response go through the
// agent unchanged (the upstream gets the whole body, the client the
// whole response) and are captured with bodies cut at 64 KiB, a
// truncated flag and the whole size; chunked bodies are captured
// decoded; a HEAD's response has no body.
func TestInspectCaptureBodies(t *testing.T) {
	up := echoUpstream(t)
	for _, tc := range []struct {
		name             string
		method           string
		reqSize, respSiz int
		chunkedReq       bool
		cl               bool
	}{
		{"empty", "GET", 0, 0, false, true},
		{"small", "POST", 10, 20, false, false},
		{"64 KiB exactly", "POST", 64 << 10, 64 << 10, false, true},
		{"one byte more", "POST", 64<<10 + 1, 64<<10 + 1, false, false},
		{"a megabyte each way, chunked", "PUT", 1 << 20, 1 << 20, true, false},
		{"HEAD", "HEAD", 0, 100, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ins := newInspector(inspectLimits{}, nil)
			x := newInspected(t, ins, up)
			sent := bytes.Repeat([]byte("q"), tc.reqSize)
			var body io.Reader = bytes.NewReader(sent)
			if tc.chunkedReq {
				body = io.MultiReader(body) // no length: chunked
			}
			req, _ := http.NewRequest(tc.method, "http://app.example.com/x?size="+strconv.Itoa(tc.respSiz)+"&cl="+map[bool]string{true: "1"}[tc.cl], body)
			if tc.reqSize == 0 {
				req.Body = nil
			}
			resp, err := x.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := fmt.Sprintf("%d %x", len(sent), sha256.Sum256(sent)); resp.Header.Get("X-Got") != want {
				t.Errorf("the upstream got %q, want %q", resp.Header.Get("X-Got"), want)
			}
			wantResp := tc.respSiz
			if tc.method == "HEAD" {
				wantResp = 0
			}
			if len(got) != wantResp || strings.Trim(string(got), "r") != "" {
				t.Errorf("the client got %d bytes, want %d", len(got), wantResp)
			}
			c := waitCaptures(t, ins, 1)[0]
			checkBody := func(side string, b capturedBody, size int, fill string) {
				t.Helper()
				kept := min(size, 64<<10)
				if b.size != int64(size) || len(b.data) != kept || b.truncated != (size > kept) || strings.Trim(string(b.data), fill) != "" {
					t.Errorf("%s body: %d bytes kept of %d, truncated %v; want %d of %d, truncated %v", side, len(b.data), b.size, b.truncated, kept, size, size > kept)
				}
			}
			checkBody("request", c.req.body, tc.reqSize, "q")
			if c.resp == nil {
				t.Fatal("no response captured")
			}
			checkBody("response", c.resp.body, wantResp, "r")
			if c.req.method != tc.method || !strings.HasPrefix(c.req.uri, "/x?size=") || c.req.header.Get("Host") != "app.example.com" ||
				c.resp.code != 200 || c.remoteAddr != "203.0.113.7:40000" || c.tunnel != "web" {
				t.Errorf("captured %s %s host %q: %d from %s on %s", c.req.method, c.req.uri, c.req.header.Get("Host"), c.resp.code, c.remoteAddr, c.tunnel)
			}
			if tc.chunkedReq && c.req.header.Get("Transfer-Encoding") != "chunked" {
				t.Errorf("a chunked request's headers: %v", c.req.header)
			}
		})
	}
}

// TestInspectBounds: the inspector keeps the last 100 requests of each
// endpoint, and drops the oldest of all past its byte bound.
func TestInspectBounds(t *testing.T) {
	mk := func(tunnel string, i, bodySize int) *capture {
		return &capture{tunnel: tunnel, req: capturedRequest{method: "GET", uri: fmt.Sprintf("/%d", i), header: http.Header{},
			body: capturedBody{data: make([]byte, bodySize), size: int64(bodySize)}}}
	}
	for _, tc := range []struct {
		name     string
		limits   inspectLimits
		add      func(ins *inspector)
		want     map[string]int // captures kept per endpoint
		firstURI map[string]string
	}{
		{"100 per endpoint", inspectLimits{}, func(ins *inspector) {
			for i := range 105 {
				ins.add(mk("a", i, 10))
				if i < 3 {
					ins.add(mk("b", i, 10))
				}
			}
		}, map[string]int{"a": 100, "b": 3}, map[string]string{"a": "/5", "b": "/0"}},
		{"byte bound", inspectLimits{bytes: 10 * 1010}, func(ins *inspector) {
			for i := range 25 {
				ins.add(mk("a", i, 1000))
			}
		}, map[string]int{"a": 10}, map[string]string{"a": "/15"}},
		{"byte bound across endpoints", inspectLimits{bytes: 10 * 1010}, func(ins *inspector) {
			for i := range 10 {
				ins.add(mk("a", i, 1000))
			}
			ins.add(mk("b", 0, 5000))
		}, map[string]int{"a": 5, "b": 1}, map[string]string{"a": "/5", "b": "/0"}},
		{"a capture over the bound is not kept", inspectLimits{bytes: 1000}, func(ins *inspector) {
			ins.add(mk("a", 0, 10))
			ins.add(mk("a", 1, 2000))
		}, map[string]int{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ins := newInspector(tc.limits, nil)
			tc.add(ins)
			var total int64
			for _, c := range ins.captures("", 0) {
				total += c.size()
			}
			if total != ins.bytes || total > ins.limits.bytes {
				t.Errorf("bytes %d (counted %d), bound %d", total, ins.bytes, ins.limits.bytes)
			}
			for name, n := range tc.want {
				got := ins.captures(name, 0)
				if len(got) != n {
					t.Errorf("%s: %d captures, want %d", name, len(got), n)
					continue
				}
				if oldest := got[len(got)-1].req.uri; oldest != tc.firstURI[name] {
					t.Errorf("%s: the oldest kept is %s, want %s", name, oldest, tc.firstURI[name])
				}
			}
			if len(tc.want) == 0 && len(ins.captures("", 0)) != 0 {
				t.Errorf("kept %d captures", len(ins.captures("", 0)))
			}
			if got := ins.captures("", 2); len(got) > 2 {
				t.Errorf("limit 2: %d", len(got))
			}
		})
	}
}

// originalCaptureShape is a request of GET /api/requests/http as the
// original agent's documentation shows one (ngrok.com/docs/agent/api,
// "List Captured Requests"), its keys' JSON types; truncated and
// body_size are edgeplane's additions.
var originalCaptureShape = map[string]string{
	"uri": "string", "id": "string", "tunnel_name": "string", "remote_addr": "string", "start": "string", "duration": "number",
	"request": "object", "request.method": "string", "request.proto": "string", "request.headers": "object", "request.uri": "string", "request.raw": "string",
	"response": "object", "response.status": "string", "response.status_code": "number", "response.proto": "string", "response.headers": "object", "response.raw": "string",
	"request.truncated": "bool", "request.body_size": "number", "response.truncated": "bool", "response.body_size": "number",
}

// TestInspectAPIGolden: GET /api/requests/http and /api/requests/http/{id}
// answer in the original agent's shape, the exact body here.
func TestInspectAPIGolden(t *testing.T) {
	start := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	st := newAgentState(1)
	st.ins = newInspector(inspectLimits{}, func() time.Time { return start })
	st.ins.prefix = "0123abcd"
	st.ins.add(&capture{tunnel: "web", remoteAddr: "203.0.113.7:40000", start: start, duration: 1500 * time.Microsecond,
		req: capturedRequest{method: "POST", uri: "/hook?x=1", proto: "HTTP/1.1", header: http.Header{"Host": {"app.example.com"}, "Content-Type": {"application/json"}},
			body: capturedBody{data: []byte(`{"a":1}`), size: 7}},
		resp: &capturedResponse{status: "201 Created", code: 201, proto: "HTTP/1.1", header: http.Header{"Content-Length": {"2"}},
			body: capturedBody{data: []byte("ok"), size: 2}}})
	srv := httptest.NewServer(st.handler())
	defer srv.Close()

	one := `{"uri":"/api/requests/http/0123abcd00000001","id":"0123abcd00000001","tunnel_name":"web","remote_addr":"203.0.113.7:40000","start":"2026-12-04T10:00:00Z","duration":1500000,` +
		`"request":{"method":"POST","proto":"HTTP/1.1","headers":{"Content-Type":["application/json"],"Host":["app.example.com"]},"uri":"/hook?x=1","raw":"UE9TVCAvaG9vaz94PTEgSFRUUC8xLjENCkNvbnRlbnQtVHlwZTogYXBwbGljYXRpb24vanNvbg0KSG9zdDogYXBwLmV4YW1wbGUuY29tDQoNCnsiYSI6MX0=","truncated":false,"body_size":7},` +
		`"response":{"status":"201 Created","status_code":201,"proto":"HTTP/1.1","headers":{"Content-Length":["2"]},"raw":"SFRUUC8xLjEgMjAxIENyZWF0ZWQNCkNvbnRlbnQtTGVuZ3RoOiAyDQoNCm9r","truncated":false,"body_size":2}}`
	for _, tc := range []struct{ path, want string }{
		{"/api/requests/http", `{"uri":"/api/requests/http","requests":[` + one + `]}` + "\n"},
		{"/api/requests/http?tunnel_name=web&limit=1", `{"uri":"/api/requests/http","requests":[` + one + `]}` + "\n"},
		{"/api/requests/http?tunnel_name=other", `{"uri":"/api/requests/http","requests":[]}` + "\n"},
		{"/api/requests/http/0123abcd00000001", one + "\n"},
	} {
		code, _, body := apiGet(t, "GET", srv.URL, tc.path, "")
		if code != 200 || body != tc.want {
			t.Errorf("GET %s: %d\n%s\nwant\n%s", tc.path, code, body, tc.want)
		}
	}
	_, _, body := apiGet(t, "GET", srv.URL, "/api/requests/http/0123abcd00000001", "")
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	for path, want := range originalCaptureShape {
		if v, ok := lookup(m, path); !ok || jsonType(v) != want {
			t.Errorf("%s: %v (%s), want a %s", path, v, jsonType(v), want)
		}
	}
	if code, _, body := apiGet(t, "GET", srv.URL, "/api/requests/http/nope", ""); code != 404 || !strings.Contains(body, `"status_code":404`) {
		t.Errorf("an unknown ID: %d %s", code, body)
	}
	if code, _, _ := apiGet(t, "GET", srv.URL, "/api/requests/http?limit=0", ""); code != 400 {
		t.Errorf("limit=0: %d", code)
	}
}

// inspectDo sends a request with a body and headers to the agent API.
func inspectDo(t *testing.T, method, url, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = nil, 0
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestInspectReplay: POST /api/requests/http replays a captured request
// against the upstream, where it arrives as the original did, and the
// replay is captured as a second request; modifications change the
// method, URI, headers and body; a truncated body is replayed only with
// a body given.
func TestInspectReplay(t *testing.T) {
	type hit struct{ method, uri, body, header string }
	var mu sync.Mutex
	var hits []hit
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		hits = append(hits, hit{r.Method, r.RequestURI, string(b), r.Header.Get("X-Sig")})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"n":%d}`, len(b))
	}))
	defer up.Close()
	st := newAgentState(1)
	st.ins = newInspector(inspectLimits{}, nil)
	x := newInspected(t, st.ins, up)
	st.add(&agentEndpoint{name: "web", target: x.target}, fakeTunnel{id: "ep_1", url: "https://app.example.com", proto: "https"})
	api := httptest.NewServer(st.handler())
	defer api.Close()

	req, _ := http.NewRequest("POST", "http://app.example.com/hook?x=1", strings.NewReader(`{"event":"paid"}`))
	req.Header.Set("X-Sig", "abc")
	resp, err := x.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	first := waitCaptures(t, st.ins, 1)[0]
	jsonCT := map[string]string{"Content-Type": "application/json"}

	if code, body := inspectDo(t, "POST", api.URL+"/api/requests/http", `{"id":"`+first.id+`"}`, jsonCT); code != 204 {
		t.Fatalf("replay: %d %s", code, body)
	}
	got := st.ins.captures("", 0)
	if len(got) != 2 || got[0].id == first.id || got[0].req.uri != "/hook?x=1" || got[0].resp == nil || got[0].resp.code != 200 ||
		string(got[0].req.body.data) != `{"event":"paid"}` || string(got[0].resp.body.data) != `{"n":16}` || got[0].tunnel != "web" {
		t.Fatalf("after the replay: %d captures, newest %+v", len(got), got[0])
	}
	mods := `{"id":"` + first.id + `","tunnel_name":"web","modifications":{"method":"PUT","uri":"/other","headers":{"X-Sig":["def"],"Content-Type":["text/plain"]},"body":"changed"}}`
	if code, body := inspectDo(t, "POST", api.URL+"/api/requests/http", mods, jsonCT); code != 204 {
		t.Fatalf("replay with changes: %d %s", code, body)
	}
	mu.Lock()
	want := []hit{{"POST", "/hook?x=1", `{"event":"paid"}`, "abc"}, {"POST", "/hook?x=1", `{"event":"paid"}`, "abc"}, {"PUT", "/other", "changed", "def"}}
	if fmt.Sprint(hits) != fmt.Sprint(want) {
		t.Errorf("the upstream got %v, want %v", hits, want)
	}
	mu.Unlock()
	if got := st.ins.captures("", 0); len(got) != 3 || got[0].req.method != "PUT" || got[0].req.header.Get("Host") != "app.example.com" {
		t.Errorf("the changed replay's capture: %+v", got[0].req)
	}

	for _, tc := range []struct {
		name, body string
		code       int
		msg        string
	}{
		{"unknown ID", `{"id":"nope"}`, 404, "no captured request"},
		{"unknown tunnel", `{"id":"` + first.id + `","tunnel_name":"api"}`, 404, "tunnel_name"},
		{"bad method", `{"id":"` + first.id + `","modifications":{"method":"GET /x"}}`, 400, "modifications.method"},
		{"bad uri", `{"id":"` + first.id + `","modifications":{"uri":"http://x/ y"}}`, 400, "modifications.uri"},
		{"bad header", `{"id":"` + first.id + `","modifications":{"headers":{"X":["a\r\nInjected: 1"]}}}`, 400, "modifications.headers.X"},
		{"unknown field", `{"id":"` + first.id + `","modification":{}}`, 400, "unknown field"},
	} {
		if code, body := inspectDo(t, "POST", api.URL+"/api/requests/http", tc.body, jsonCT); code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: %d %s; want %d with %q", tc.name, code, body, tc.code, tc.msg)
		}
	}

	// A body cut at capture is not replayed cut.
	big := strings.Repeat("b", 64<<10+10)
	resp, err = x.client.Post("http://app.example.com/big", "text/plain", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	cut := waitCaptures(t, st.ins, 4)[0]
	if code, body := inspectDo(t, "POST", api.URL+"/api/requests/http", `{"id":"`+cut.id+`"}`, jsonCT); code != 400 || !strings.Contains(body, "modifications.body") {
		t.Errorf("replay of a truncated body: %d %s", code, body)
	}
	if code, body := inspectDo(t, "POST", api.URL+"/api/requests/http", `{"id":"`+cut.id+`","modifications":{"body":"short"}}`, jsonCT); code != 204 {
		t.Errorf("replay of a truncated body with a body: %d %s", code, body)
	}

	if code, _ := inspectDo(t, "DELETE", api.URL+"/api/requests/http", "", nil); code != 204 || len(st.ins.captures("", 0)) != 0 {
		t.Errorf("DELETE: %d, %d left", code, len(st.ins.captures("", 0)))
	}
}

// TestInspectGuard: the inspector's API and page answer loopback names
// only; POST and DELETE must be JSON (DELETE may have no body) and are
// refused when a browser says a page of another site sent them.
func TestInspectGuard(t *testing.T) {
	st := newAgentState(1)
	st.ins = newInspector(inspectLimits{}, nil)
	st.ins.add(&capture{tunnel: "web", req: capturedRequest{method: "GET", uri: "/", proto: "HTTP/1.1", header: http.Header{}}})
	id := st.ins.captures("", 0)[0].id
	srv := httptest.NewServer(st.handler())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	replay := `{"id":"` + id + `","tunnel_name":"none"}` // 404 once past the guard: nothing is sent
	for _, tc := range []struct {
		name, method, path, body string
		header                   map[string]string
		code                     int
	}{
		{"list from another name", "GET", "/api/requests/http", "", map[string]string{"Host": "evil.example:" + strings.Split(host, ":")[1]}, 403},
		{"page from another name", "GET", "/inspect/http", "", map[string]string{"Host": "evil.example"}, 403},
		{"replay from another name", "POST", "/api/requests/http", replay, map[string]string{"Host": "evil.example", "Content-Type": "application/json"}, 403},
		{"cross-site Origin", "POST", "/api/requests/http", replay, map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, 403},
		{"cross-site fetch", "POST", "/api/requests/http", replay, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site is not same-origin", "POST", "/api/requests/http", replay, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"}, 403},
		{"null Origin", "DELETE", "/api/requests/http", "", map[string]string{"Origin": "null"}, 403},
		{"a form's body", "POST", "/api/requests/http", "id=" + id, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"text", "POST", "/api/requests/http", replay, map[string]string{"Content-Type": "text/plain"}, 415},
		{"DELETE with a form", "DELETE", "/api/requests/http", "x=1", map[string]string{"Content-Type": "text/plain"}, 415},
		{"same origin", "POST", "/api/requests/http", replay, map[string]string{"Content-Type": "application/json", "Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}, 404},
		{"curl", "POST", "/api/requests/http", replay, map[string]string{"Content-Type": "application/json; charset=utf-8"}, 404},
		{"the page", "GET", "/inspect/http", "", nil, 200},
		{"the root", "GET", "/", "", nil, 200}, // redirected to the page
	} {
		code, body := inspectDo(t, tc.method, srv.URL+tc.path, tc.body, tc.header)
		if code != tc.code {
			t.Errorf("%s: %d %s; want %d", tc.name, code, body, tc.code)
		}
	}
	if len(st.ins.captures("", 0)) != 1 {
		t.Error("a refused request changed the captures")
	}
	req, _ := http.NewRequest("GET", srv.URL+"/inspect/http", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("the page can be framed: %v", resp.Header)
	}
}

// TestInspectOff: with inspection off, nothing is captured, the
// inspector's paths are 404s, and the tunnels say inspect: false;
// agent.inspect: false and -inspect=false turn it off, the flag winning.
func TestInspectOff(t *testing.T) {
	var hits int
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++; io.WriteString(w, "ok") }))
	defer up.Close()
	st := newAgentState(1) // no inspector
	x := newInspected(t, st.ins, up)
	st.add(&agentEndpoint{name: "web", target: x.target}, fakeTunnel{id: "ep_1", url: "https://app.example.com", proto: "https"})
	resp, err := x.client.Get("http://app.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" || hits != 1 {
		t.Errorf("through the agent: %q, %d hits", b, hits)
	}
	srv := httptest.NewServer(st.handler())
	defer srv.Close()
	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/requests/http"}, {"GET", "/api/requests/http/x"}, {"POST", "/api/requests/http"}, {"DELETE", "/api/requests/http"}, {"GET", "/inspect/http"},
	} {
		if code, body := inspectDo(t, tc.method, srv.URL+tc.path, "", map[string]string{"Content-Type": "application/json"}); code != 404 {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, code, body)
		}
	}
	if _, _, body := apiGet(t, "GET", srv.URL, "/api/tunnels/web", ""); !strings.Contains(body, `"inspect":false`) {
		t.Errorf("the tunnel: %s", body)
	}
	st.ins = newInspector(inspectLimits{}, nil)
	on := httptest.NewServer(st.handler())
	defer on.Close()
	if _, _, body := apiGet(t, "GET", on.URL, "/api/tunnels/web", ""); !strings.Contains(body, `"inspect":true`) {
		t.Errorf("the tunnel, inspected: %s", body)
	}

	file := t.TempDir() + "/agent.yml"
	if err := os.WriteFile(file, []byte("version: 1\nagent:\n  inspect: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"-server", "x.example.com:4443", "-authtoken", "ept_x", "-config", file}
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"http", "3000"}, false},
		{[]string{"-inspect", "http", "3000"}, true},
		{[]string{"-inspect=false", "http", "3000"}, false},
	} {
		c, err := parseAgentArgs(append(append([]string{}, base...), tc.args...), func(string) string { return "" }, io.Discard)
		if err != nil || c.inspect.or(true) != tc.want || c.inspectAddr != "" {
			t.Errorf("%v: inspect %v (addr %q), %v; want %v", tc.args, c.inspect.or(true), c.inspectAddr, err, tc.want)
		}
	}
}

// TestInspectAddrLoopbackOnly: captured bodies never leave the loopback
// listener: -inspect-addr and agent.inspect_addr refuse an address that
// is not loopback, and the default listener is loopback.
func TestInspectAddrLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:4040", "[::]:4040", "192.0.2.1:4040", ":4040", "example.com:4040"} {
		_, err := parseAgentArgs([]string{"-server", "x.example.com:4443", "-authtoken", "ept_x", "-inspect-addr", addr, "http", "3000"}, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("-inspect-addr %s: %v", addr, err)
		}
	}
	ln, err := listenAgentAPI("", "127.0.0.1:0", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		t.Errorf("the default listener: %s", ln.Addr())
	}
}

// TestInspectStreamingAndUpgrade: capture does not hold back a
// streamed response (the client reads its first part before the
// upstream writes the rest), and an Upgrade is captured as its request
// and 101 response, the bytes after it passed through uncaptured.
func TestInspectStreamingAndUpgrade(t *testing.T) {
	next := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "echo" {
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
			brw.Flush()
			io.Copy(conn, brw) // echo until the client closes
			return
		}
		io.WriteString(w, "first;")
		http.NewResponseController(w).Flush()
		<-next
		io.WriteString(w, "second")
	}))
	defer up.Close()
	ins := newInspector(inspectLimits{}, nil)
	x := newInspected(t, ins, up)

	resp, err := x.client.Get("http://app.example.com/stream")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len("first;"))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first;" {
		t.Fatalf("the first part: %q, %v", buf, err)
	}
	close(next)
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(rest) != "second" {
		t.Errorf("the rest: %q", rest)
	}
	if c := waitCaptures(t, ins, 1)[0]; c.resp == nil || string(c.resp.body.data) != "first;second" || c.resp.header.Get("Transfer-Encoding") != "chunked" {
		t.Errorf("the streamed response's capture: %+v", c.resp)
	}

	req, _ := http.NewRequest("GET", "http://app.example.com/ws", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	resp, err = x.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rw, ok := resp.Body.(io.ReadWriteCloser)
	if resp.StatusCode != 101 || !ok {
		t.Fatalf("upgrade: %d, %T", resp.StatusCode, resp.Body)
	}
	msg := "GET /not-a-request HTTP/1.1\r\n\r\n" // what follows is not parsed as HTTP
	io.WriteString(rw, msg)
	echo := make([]byte, len(msg))
	if _, err := io.ReadFull(rw, echo); err != nil || string(echo) != msg {
		t.Errorf("echo through the upgraded connection: %q, %v", echo, err)
	}
	rw.Close()
	got := waitCaptures(t, ins, 2)
	if c := got[0]; c.req.uri != "/ws" || c.resp == nil || c.resp.code != 101 || c.resp.body.size != 0 {
		t.Errorf("the upgrade's capture: %+v %+v", c.req, c.resp)
	}
}

// FuzzReplayModifications: whatever the modifications, a replay is
// refused or is exactly one HTTP/1.1 request with the method, URI and
// body given: no header or request can be smuggled in.
func FuzzReplayModifications(f *testing.F) {
	f.Add("PUT", "/x?y=1", "X-Sig", "abc", "body")
	f.Add("GET", "/\r\nX: 1", "X", "a\r\nB: 1", "")
	f.Add("POST /x HTTP/1.1\r\n", "/", "Host", "evil", "GET / HTTP/1.1\r\n\r\n")
	c := &capture{req: capturedRequest{method: "GET", uri: "/", proto: "HTTP/1.1", header: http.Header{"Host": {"app.example.com"}}}}
	f.Fuzz(func(t *testing.T, method, uri, name, value, body string) {
		mods := &replayModifications{Method: &method, URI: &uri, Headers: map[string][]string{name: {value}}, Body: &body}
		raw, m, err := replayMessage(c, mods)
		if err != nil {
			return
		}
		br := bufio.NewReader(bytes.NewReader(raw))
		req, err := http.ReadRequest(br)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		got, _ := io.ReadAll(req.Body)
		if req.Method != method || m != method || req.RequestURI != uri || string(got) != body {
			t.Fatalf("%q: %s %s %q", raw, req.Method, req.RequestURI, got)
		}
		if rest, _ := io.ReadAll(br); len(rest) != 0 {
			t.Fatalf("%q: %q after the request", raw, rest)
		}
	})
}

// BenchmarkInspectedRequest: one request and its answer through the
// agent's forwarding (a fresh connection each, as a proxied connection
// is), with 4 KiB bodies each way, captured by the inspector or not
// (ins nil): what capture adds to the agent's hot path.
func BenchmarkInspectedRequest(b *testing.B) {
	up := echoUpstream(b)
	body := bytes.Repeat([]byte("q"), 4<<10)
	for _, tc := range []struct {
		name string
		ins  *inspector
	}{{"capture off", nil}, {"capture on", newInspector(inspectLimits{}, nil)}} {
		b.Run(tc.name, func(b *testing.B) {
			x := newInspected(b, tc.ins, up)
			x.client.Transport.(*http.Transport).DisableKeepAlives = true
			b.ReportAllocs()
			b.SetBytes(2 * int64(len(body)))
			for b.Loop() {
				resp, err := x.client.Post("http://app.example.com/x?size=4096&cl=1", "application/octet-stream", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
