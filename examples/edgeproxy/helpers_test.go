package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/policy"
)

// syncBuffer is a goroutine-safe log destination.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// seen is a request as the upstream received it.
type seen struct {
	Method, Path, RawQuery, Host string
	Header                       http.Header
	RemoteAddr                   string
}

// upstream is an httptest server that records what reaches it. Paths:
// /status/<code> answers that code; /text answers 2 KiB of text/plain;
// /png 2 KiB of image/png; /small a tiny text/plain body; anything else a
// short text/plain body naming the upstream and the path, with the
// headers X-Upstream and X-Secret.
type upstream struct {
	*httptest.Server
	name string
	mu   sync.Mutex
	reqs []seen
}

func newUpstream(t testing.TB, name string) *upstream {
	u := &upstream{name: name}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.reqs = append(u.reqs, seen{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Host: r.Host,
			Header: r.Header.Clone(), RemoteAddr: r.RemoteAddr})
		u.mu.Unlock()
		w.Header().Set("X-Upstream", name)
		w.Header().Set("X-Secret", "s3cret")
		switch {
		case strings.HasPrefix(r.URL.Path, "/status/"):
			code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
			w.WriteHeader(code)
		case r.URL.Path == "/text":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, strings.Repeat("all work and no play makes jack a dull boy\n", 50))
		case r.URL.Path == "/png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 512))
		case r.URL.Path == "/small":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "tiny")
		default:
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, "upstream "+name+" "+r.URL.Path)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// requests returns what reached the upstream so far.
func (u *upstream) requests() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seen(nil), u.reqs...)
}

// last returns the last request that reached the upstream.
func (u *upstream) last(t testing.TB) seen {
	t.Helper()
	rs := u.requests()
	if len(rs) == 0 {
		t.Fatal("nothing reached the upstream")
	}
	return rs[len(rs)-1]
}

func (u *upstream) url(t testing.TB) *url.URL {
	v, err := url.Parse(u.URL)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// env is a proxy under test behind a real HTTP server.
type env struct {
	t     testing.TB
	proxy *Proxy
	url   string // the proxy's base URL
	up    *upstream
	clock *fakeClock
	logs  *syncBuffer
	log   *slog.Logger
}

// newLogger returns a logger writing text to a buffer.
func newLogger() (*slog.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	return slog.New(slog.NewTextHandler(buf, nil)), buf
}

// standalone starts a standalone proxy running doc (none when empty) in
// front of a fresh upstream.
func standalone(t testing.TB, doc string, trusted ...string) *env {
	t.Helper()
	e := &env{t: t, up: newUpstream(t, "a"), clock: newFakeClock()}
	e.log, e.logs = newLogger()
	engine, err := policy.NewEngine(policy.Options{Sink: policy.NewSlogSink(e.log), Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var pol *policy.Policy
	if doc != "" {
		if pol, err = engine.CompileJSON([]byte(doc), policy.CompileOptions{Target: policy.TargetHTTP, Scope: "test"}); err != nil {
			t.Fatalf("compile: %v", err)
		}
	}
	tp, err := parseTrustedProxies(strings.Join(trusted, ","))
	if err != nil {
		t.Fatal(err)
	}
	e.proxy, err = New(context.Background(), Options{Upstream: e.up.url(t), Policy: pol, Clock: e.clock.Now, Logger: e.log, TrustedProxies: tp})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.proxy)
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

// serviceEnv is a Service-mode proxy: the Service on a versioned memstore,
// its management API over HTTP, and the proxy serving the bootstrapped
// edge, whose tunnel forwards to up.
type serviceEnv struct {
	*env
	svc   *edgeplane.Service
	store *memstore.Store
	p     edgeplane.Principal
	b     *bootstrapped
	api   string
}

func service(t testing.TB) *serviceEnv {
	t.Helper()
	ctx := context.Background()
	e := &env{t: t, up: newUpstream(t, "a"), clock: newFakeClock()}
	e.log, e.logs = newLogger()
	s := &serviceEnv{env: e, store: memstore.New()}
	// The Service and the proxy share the fake clock; the tests advance it
	// by rate-limit windows, so the tunnel's lease is long
	// (TestExpiredTunnelGetsNoTraffic tests leases).
	s.svc = edgeplane.New(s.store, edgeplane.Options{Logger: e.log, Clock: e.clock.Now, TunnelLease: 24 * time.Hour})
	b, err := bootstrap(ctx, s.svc, "", e.up.URL)
	if err != nil {
		t.Fatal(err)
	}
	s.b = b
	pr, err := s.svc.Authenticate(ctx, b.key)
	if err != nil {
		t.Fatal(err)
	}
	s.p = pr
	e.proxy, err = New(ctx, Options{Service: s.svc, AccountID: b.accountID, EdgeID: b.edgeID, Version: storeRevision(s.store),
		Clock: e.clock.Now, Logger: e.log})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.proxy)
	t.Cleanup(srv.Close)
	e.url = srv.URL
	h, err := httpapi.New(s.svc, httpapi.Options{Logger: e.log, RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(h)
	t.Cleanup(api.Close)
	s.api = api.URL
	return s
}

// call makes a request to the management API and returns the status and
// body; want, when not 0, is the status the test requires.
func (s *serviceEnv) call(method, path string, body any, want int) (int, []byte) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.api+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.b.key)
	req.Header.Set("Service-Version", "2")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if want != 0 && resp.StatusCode != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, data, want)
	}
	return resp.StatusCode, data
}

// routePath is the API path of a module of the bootstrapped route.
func (s *serviceEnv) routePath(module string) string {
	return "/edges/https/" + s.b.edgeID + "/routes/" + s.b.routeID + "/" + module
}

// setPolicy replaces the bootstrapped route's traffic policy through the
// API.
func (s *serviceEnv) setPolicy(doc string) {
	s.t.Helper()
	s.call("PUT", s.routePath("traffic_policy"), map[string]any{"value": doc}, 200)
}

// client returns an HTTP client that connects from local address ip (any
// loopback address works on Linux), shows responses as sent (no
// transparent gunzip) and does not follow redirects.
func client(ip string) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if ip != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(ip)}
	}
	return &http.Client{
		Transport: &http.Transport{DialContext: d.DialContext, DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
		Timeout: 10 * time.Second,
	}
}

// response is a response read whole.
type response struct {
	status int
	header http.Header
	body   string
}

// do sends a request through the proxy from client c (nil: 127.0.0.1) and
// reads the whole response. header lines are "Name: value".
func (e *env) do(c *http.Client, method, path string, header ...string) response {
	e.t.Helper()
	if c == nil {
		c = defaultClient
	}
	req, err := http.NewRequest(method, e.url+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, h := range header {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(k, strings.TrimSpace(v))
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

func (e *env) get(path string, header ...string) response {
	e.t.Helper()
	return e.do(nil, "GET", path, header...)
}

var defaultClient = client("")

// metric returns a counter's value from the proxy's /metrics text.
func (e *env) metric(name string) string {
	e.t.Helper()
	rec := httptest.NewRecorder()
	e.proxy.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for line := range strings.SplitSeq(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	e.t.Fatalf("no metric %s in\n%s", name, rec.Body.String())
	return ""
}
