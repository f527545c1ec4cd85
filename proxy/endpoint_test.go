package proxy

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/httpserver"
	"github.com/edgeplane/edgeplane/internal/syncbuf"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// The endpoint tests' endpoints live in fakeEndpoints, an EndpointSource
// in memory, as the Service will keep them (the control plane's side is
// not part of these tests). Each change to one is announced as the
// Service will announce it: a write of a record of kind endpoint to the
// store, whose change the Configs follows through the real feed.

// fakeEndpoints is an EndpointSource over endpoints in memory; bind and
// unbind announce their changes through st's feed. ListEndpoints pages
// by pageSize (2 unless set), newest (highest ID) first.
type fakeEndpoints struct {
	st       store.Store
	pageSize int

	mu    sync.Mutex
	eps   map[string]agents.Endpoint
	gets  int
	lists int
}

var _ EndpointSource = (*fakeEndpoints)(nil)

func newFakeEndpoints(st store.Store) *fakeEndpoints {
	return &fakeEndpoints{st: st, eps: map[string]agents.Endpoint{}}
}

func (f *fakeEndpoints) GetEndpoint(ctx context.Context, accountID, id string) (*agents.Endpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	ep, ok := f.eps[id]
	if !ok || ep.AccountID != accountID {
		return nil, apierr.NotFoundf("endpoint %s not found", id)
	}
	return &ep, nil
}

func (f *fakeEndpoints) ListEndpoints(ctx context.Context, opts edgeplane.ListOptions) ([]agents.Endpoint, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	var ids []string
	for id := range f.eps {
		if opts.BeforeID == "" || id < opts.BeforeID {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	size := cmp.Or(opts.Limit, f.pageSize, 2)
	next := ""
	if len(ids) > size {
		ids, next = ids[:size], ids[size-1]
	}
	page := make([]agents.Endpoint, 0, len(ids))
	for _, id := range ids {
		page = append(page, f.eps[id])
	}
	return page, next, nil
}

// set keeps ep in the source without announcing it.
func (f *fakeEndpoints) set(ep agents.Endpoint) (existed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, existed = f.eps[ep.ID]
	f.eps[ep.ID] = ep
	return existed
}

// forget removes endpoint id from the source without announcing it.
func (f *fakeEndpoints) forget(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.eps, id)
}

// bind keeps ep and announces it: its record created, or updated when
// it was there.
func (f *fakeEndpoints) bind(t testing.TB, ep agents.Endpoint) {
	t.Helper()
	if f.set(ep) {
		f.touch(t, ep.AccountID, ep.ID)
		return
	}
	if err := f.st.Create(context.Background(), store.Record{Kind: kindEndpoint, AccountID: ep.AccountID, ID: ep.ID, Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
}

// touch announces an update of endpoint id (whatever the source holds).
func (f *fakeEndpoints) touch(t testing.TB, accountID, id string) {
	t.Helper()
	if _, err := f.st.Update(context.Background(), kindEndpoint, accountID, id, func(r *store.Record) error {
		r.Data = []byte(`{"v":` + strconv.FormatInt(time.Now().UnixNano(), 10) + `}`)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// unbind removes endpoint id and announces it (its record deleted).
func (f *fakeEndpoints) unbind(t testing.TB, accountID, id string) {
	t.Helper()
	f.forget(id)
	if err := f.st.Delete(context.Background(), kindEndpoint, accountID, id, store.Note{}); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeEndpoints) calls() (gets, lists int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets, f.lists
}

// epEnv serves the world's edges and the fake source's endpoints: the
// HTTPS port (SplitTLS in front of the Handler's TLS server) on
// addr443, the plain HTTP port (the same Handler) at plainURL, and the
// TCP port tcpPort (for tcp endpoints). Account a has reserved domains
// (IDs in domains, by name), with certificates of ca (serial in
// serials, by name) for those in withCerts; the agents (fa, loopback) answer HTTP
// with rec, and passthrough TLS with agentCA's certificate for
// pass.example.com (serial passSerial).
type epEnv struct {
	*world
	ca, agentCA *testCA
	src         *fakeEndpoints
	fa          *fakeAgents
	rec         *agentRecorder
	c           *Configs
	s           *Streams
	metrics     *Metrics
	reg         *prometheus.Registry
	logs        *syncbuf.Buffer
	addr443     string
	plainURL    string
	tcpPort     int
	serials     map[string]int64
	domains     map[string]string // reserved domain IDs by name
	passSerial  int64
}

var withCerts = []string{"app.example.com", "term.example.com", "both.example.com", "clash.example.com", "*.wild.example.com"}

// newEpEnv builds an epEnv; before, when not nil, runs before the
// Configs starts (to bind endpoints it then loads).
func newEpEnv(t *testing.T, before func(e *epEnv)) *epEnv {
	t.Helper()
	w := newWorld(t, memstore.New())
	e := &epEnv{world: w, ca: newTestCA(t), agentCA: newTestCA(t), src: newFakeEndpoints(w.st), rec: &agentRecorder{},
		logs: &syncbuf.Buffer{}, serials: map[string]int64{}, domains: map[string]string{}}
	for _, name := range append([]string{"plain.example.com", "pass.example.com"}, withCerts...) {
		id := w.reserve(w.a, name)
		e.domains[name] = id
		if slices.Contains(withCerts, name) {
			e.serials[name] = w.attachCert(w.a, e.ca, id, name)
		}
	}
	certPEM, keyPEM, serial := e.agentCA.issue(t, "pass.example.com")
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	w.check(err)
	e.passSerial = serial
	e.fa = &fakeAgents{loopback: true, http: serveAgentHTTP(t, e.rec), passTLS: &tls.Config{Certificates: []tls.Certificate{pair}}}
	held := holdPort(t)
	e.tcpPort = held.port
	if before != nil {
		before(e)
	}

	log := slog.New(slog.NewTextHandler(e.logs, nil))
	e.c = w.start(w.api.Host(), w.st, newHooks(w.api.Host()), Options{Logger: log, Endpoints: e.src})
	e.metrics = NewMetrics(MetricsOptions{})
	e.reg = prometheus.NewRegistry()
	e.reg.MustRegister(e.metrics)
	e.s = NewStreams(e.c, StreamOptions{Clock: w.clock.Now, Metrics: e.metrics, Agents: e.fa, Logger: log, listen: held.listen})
	t.Cleanup(e.s.Close)
	h := NewHandler(e.c, HandlerOptions{Clock: w.clock.Now, Metrics: e.metrics, Agents: e.fa, Logger: log})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	w.check(err)
	e.addr443 = ln.Addr().String()
	srv := h.Server(true, httpserver.Options{})
	split := e.s.SplitTLS(ln)
	go func() { _ = srv.ServeTLS(split, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	plain := httptest.NewServer(h)
	t.Cleanup(plain.Close)
	e.plainURL = plain.URL

	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = e.s.ServeTCP(ctx, "127.0.0.1", e.tcpPort, e.tcpPort)
	}()
	t.Cleanup(func() { cancel(); <-served })
	return e
}

// endpoint returns an endpoint of account a with an ID of its own:
// proto, host (and for tcp the env's port), and the traffic policy doc.
func (e *epEnv) endpoint(id, proto, host, doc string) agents.Endpoint {
	ep := agents.Endpoint{ID: agents.EndpointPrefix + id, AccountID: e.a.AccountID, Proto: proto, Scheme: proto, Host: host,
		TrafficPolicy: doc, Type: agents.EndpointType, TunnelSession: &resource.Ref{ID: agents.SessionPrefix + "laptop"}}
	switch proto {
	case protoHTTPS, protoTLS:
		ep.Port = 443
	case protoHTTP:
		ep.Port = 80
	case protoTCP:
		ep.Port = int64(e.tcpPort)
	}
	ep.Hostport = host + ":" + strconv.FormatInt(ep.Port, 10)
	ep.PublicURL = proto + "://" + ep.Hostport
	ep.URL = ep.PublicURL
	return ep
}

// bind binds ep and waits until the proxy applied it.
func (e *epEnv) bind(ep agents.Endpoint) {
	e.t.Helper()
	e.src.bind(e.t, ep)
	e.applied(e.c)
}

// unbind removes endpoint id and waits until the proxy applied it.
func (e *epEnv) unbind(id string) {
	e.t.Helper()
	e.src.unbind(e.t, e.a.AccountID, id)
	e.applied(e.c)
}

// epResponse is a response read whole, with the client's local address.
type epResponse struct {
	response
	local netip.AddrPort
}

// get sends GET path to host, over TLS to the HTTPS port (the client
// trusting ca) or over plain HTTP, on a connection of its own.
func (e *epEnv) get(t *testing.T, overTLS bool, host, path string, header ...string) (epResponse, error) {
	t.Helper()
	var local atomic.Value // netip.AddrPort
	addr, scheme := strings.TrimPrefix(e.plainURL, "http://"), "http"
	if overTLS {
		addr, scheme = e.addr443, "https"
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.ca.pool}, DisableKeepAlives: true, DisableCompression: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				local.Store(addrPort(c.LocalAddr()))
			}
			return c, err
		}}
	req, err := http.NewRequest(http.MethodGet, scheme+"://"+host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range header {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(k, strings.TrimSpace(v))
	}
	res, err := (&http.Client{Transport: tr, Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return epResponse{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	ap, _ := local.Load().(netip.AddrPort)
	return epResponse{response: response{status: res.StatusCode, header: res.Header, body: string(body)}, local: ap}, nil
}

// mustGet is get that fails the test on an error.
func (e *epEnv) mustGet(t *testing.T, overTLS bool, host, path string, header ...string) epResponse {
	t.Helper()
	res, err := e.get(t, overTLS, host, path, header...)
	if err != nil {
		t.Fatalf("GET %s%s (TLS %v): %v", host, path, overTLS, err)
	}
	return res
}

// metric returns the value of the counter name whose labels are exactly
// labels, as site.metric does.
func (e *epEnv) metric(name string, labels ...string) float64 {
	e.t.Helper()
	s := &site{t: e.t, reg: e.reg}
	return s.metric(name, labels...)
}

// dialTCP connects to the tcp endpoints' port, waiting for its listener.
func (e *epEnv) dialTCP(t testing.TB) net.Conn {
	t.Helper()
	se := &streamEnv{tcpPort: e.tcpPort}
	return se.dialTCP(t)
}

// dialTLS makes a TLS connection to the HTTPS port for serverName.
func (e *epEnv) dialTLS(serverName string, roots *testCA) (*tls.Conn, error) {
	se := &streamEnv{addr443: e.addr443, ca: e.ca}
	return se.dialTLS(serverName, &tls.Config{RootCAs: roots.pool})
}

// connCount returns the connections of kind counted with outcome,
// waiting for want as streamEnv.count does.
func (e *epEnv) connCount(kind, outcome string, want float64) float64 {
	se := &streamEnv{metrics: e.metrics}
	return se.count(kind, outcome, want)
}

// TestEndpointHTTPS: an https endpoint is served on the HTTPS port by
// its host (exact or covered by its wildcard) with the certificate of
// its reserved domain, and the request reaches its agent through
// DialTunnel by the endpoint's ID, told the client's socket address,
// protocol https and edge type none, with the client's Host. The plain
// HTTP port does not serve it. Requests count under the endpoint's ID
// and route "".
func TestEndpointHTTPS(t *testing.T) {
	e := newEpEnv(t, nil)
	for _, tc := range []struct {
		name, host, request, cert string
	}{
		{"exact host", "app.example.com", "app.example.com", "app.example.com"},
		{"wildcard", "*.wild.example.com", "x.wild.example.com", "*.wild.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := e.endpoint(strings.ReplaceAll(tc.name, " ", ""), protoHTTPS, tc.host, "")
			e.bind(ep)
			c, err := e.dialTLS(tc.request, e.ca)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); got != e.serials[tc.cert] {
				t.Errorf("certificate serial %d, want the reserved domain's %d", got, e.serials[tc.cert])
			}
			c.Close()

			res := e.mustGet(t, true, tc.request, "/hello?x=1")
			if res.status != http.StatusOK || res.body != "agent "+ep.ID+" /hello" {
				t.Fatalf("got %d %q, want 200 from the agent of %s", res.status, res.body, ep.ID)
			}
			got := e.rec.last(t)
			want := agents.ConnHeader{ClientAddr: res.local, Proto: "https", EdgeType: agents.EdgeNone}
			if got.dial.tunnelID != ep.ID || got.dial.header != want {
				t.Errorf("DialTunnel(%s, %+v), want (%s, %+v)", got.dial.tunnelID, got.dial.header, ep.ID, want)
			}
			if got.Host != tc.request || got.Path != "/hello" || got.RawQuery != "x=1" || got.Header.Get("X-Forwarded-Proto") != "https" {
				t.Errorf("the agent saw Host %q, path %q, query %q, X-Forwarded-Proto %q", got.Host, got.Path, got.RawQuery, got.Header.Get("X-Forwarded-Proto"))
			}
			if n := e.metric("edgeplane_proxy_requests_total", "edge="+ep.ID, "code=2xx"); n != 1 {
				t.Errorf("requests of the endpoint (route \"\"): %v, want 1", n)
			}

			// Not on the plain HTTP port.
			if res := e.mustGet(t, false, tc.request, "/"); res.status != http.StatusNotFound || res.body != "no edge serves this host\n" {
				t.Errorf("plain HTTP to an https endpoint: %d %q, want 404", res.status, res.body)
			}
		})
	}
	if n := testutil.ToFloat64(e.metrics.agentStreams.WithLabelValues(kindHTTPS, agentOpened)); n != 2 {
		t.Errorf("agent streams opened: %v, want 2", n)
	}
}

// TestEndpointHTTP: an http endpoint is served on the plain HTTP port,
// its agent told protocol http; the HTTPS port has no certificate for
// it (the handshake fails with unrecognized_name). On the plain port it comes before an HTTPS edge of the same host
// (whose hostport is host:443), which keeps the HTTPS port.
func TestEndpointHTTP(t *testing.T) {
	e := newEpEnv(t, nil)
	ep := e.endpoint("plain", protoHTTP, "plain.example.com", "")
	e.bind(ep)
	res := e.mustGet(t, false, "plain.example.com", "/p")
	if res.status != http.StatusOK || res.body != "agent "+ep.ID+" /p" {
		t.Fatalf("got %d %q, want 200 from the agent", res.status, res.body)
	}
	got := e.rec.last(t)
	want := agents.ConnHeader{ClientAddr: res.local, Proto: "http", EdgeType: agents.EdgeNone}
	if got.dial.header != want || got.Host != "plain.example.com" || got.Header.Get("X-Forwarded-Proto") != "http" {
		t.Errorf("DialTunnel header %+v, Host %q, X-Forwarded-Proto %q; want %+v, plain.example.com, http",
			got.dial.header, got.Host, got.Header.Get("X-Forwarded-Proto"), want)
	}
	if _, err := e.get(t, true, "plain.example.com", "/"); err == nil || !strings.Contains(err.Error(), "tls: unrecognized name") {
		t.Errorf("an http endpoint's host on the HTTPS port: %v; want the alert unrecognized_name", err)
	}

	e.serveHosts(e.a, e.a1, "both.example.com:443")
	both := e.endpoint("both", protoHTTP, "both.example.com", "")
	e.bind(both)
	if res := e.mustGet(t, false, "both.example.com", "/"); res.status != http.StatusOK || res.body != "agent "+both.ID+" /" {
		t.Errorf("plain HTTP: %d %q, want the http endpoint's agent", res.status, res.body)
	}
	if res := e.mustGet(t, true, "both.example.com", "/"); res.status != http.StatusServiceUnavailable || res.body != "no online tunnel serves this route\n" {
		t.Errorf("HTTPS: %d %q, want the HTTPS edge's 503 (its backend has no tunnel)", res.status, res.body)
	}
}

// TestEndpointTrafficPolicy: an endpoint's traffic policy runs on each
// of its requests as a route's does (inbound deny and add-headers,
// outbound add-headers, the action that answered in the metrics); a new
// document applies from the next request, while a new version with the
// same document keeps the compiled policy; a document that does not
// compile is answered 503 and logged.
func TestEndpointTrafficPolicy(t *testing.T) {
	e := newEpEnv(t, nil)
	doc := `{"inbound":[
		{"expressions":["req.url.path == '/deny'"],"actions":[{"type":"deny"}]},
		{"actions":[{"type":"add-headers","config":{"headers":{"x-endpoint-in":"${conn.client_ip}"}}}]}],
	 "outbound":[{"actions":[{"type":"add-headers","config":{"headers":{"x-endpoint-out":"${string(res.status_code)}"}}}]}]}`
	ep := e.endpoint("app", protoHTTPS, "app.example.com", doc)
	e.bind(ep)

	if res := e.mustGet(t, true, "app.example.com", "/deny"); res.status != http.StatusForbidden {
		t.Errorf("/deny: %d %q, want 403 from the deny action", res.status, res.body)
	}
	if n := e.metric("edgeplane_proxy_requests_total", "edge="+ep.ID, "action=deny", "code=4xx"); n != 1 {
		t.Errorf("requests answered by deny: %v, want 1", n)
	}
	res := e.mustGet(t, true, "app.example.com", "/ok")
	if res.status != http.StatusOK || res.header.Get("X-Endpoint-Out") != "200" {
		t.Errorf("/ok: %d, X-Endpoint-Out %q; want 200 with the outbound header", res.status, res.header.Get("X-Endpoint-Out"))
	}
	if got := e.rec.last(t).Header.Get("X-Endpoint-In"); got != "127.0.0.1" {
		t.Errorf("the agent saw X-Endpoint-In %q, want 127.0.0.1", got)
	}

	// A new version with the same document keeps its compiled policy.
	compiled := e.c.Endpoint(e.a.AccountID, ep.ID).ep.policy
	ep.Metadata = "v2"
	e.bind(ep)
	if now := e.c.Endpoint(e.a.AccountID, ep.ID); now.Endpoint.Metadata != "v2" || now.ep.policy != compiled {
		t.Errorf("a new version with the same policy: metadata %q, policy recompiled %v", now.Endpoint.Metadata, now.ep.policy != compiled)
	}

	ep.TrafficPolicy = `{"inbound":[{"actions":[{"type":"deny","config":{"status_code":451}}]}]}`
	e.bind(ep)
	if res := e.mustGet(t, true, "app.example.com", "/ok"); res.status != http.StatusUnavailableForLegalReasons {
		t.Errorf("after a new policy: %d, want 451", res.status)
	}

	ep.TrafficPolicy = `{"inbound":[{"actions":[{"type":"no-such-action"}]}]}`
	e.bind(ep)
	dials := len(e.fa.calls())
	if res := e.mustGet(t, true, "app.example.com", "/ok"); res.status != http.StatusServiceUnavailable ||
		res.body != "service unavailable: this endpoint's traffic policy cannot be applied\n" {
		t.Errorf("a policy that does not compile: %d %q, want 503", res.status, res.body)
	}
	if n := len(e.fa.calls()); n != dials {
		t.Errorf("%d streams opened for an endpoint whose policy does not compile", n-dials)
	}
	if !strings.Contains(e.logs.String(), "the traffic policy of an endpoint does not compile") {
		t.Errorf("not logged: %s", e.logs)
	}
}

// TestEndpointIPRestrictions: the account's IP restrictions of type
// endpoints apply to its endpoints of every protocol before anything
// else: 403 for HTTP, connections closed (ip_restricted) for tls and
// tcp, and no agent is dialed.
func TestEndpointIPRestrictions(t *testing.T) {
	e := newEpEnv(t, nil)
	e.bind(e.endpoint("app", protoHTTPS, "app.example.com", ""))
	e.bind(e.endpoint("plain", protoHTTP, "plain.example.com", ""))
	e.bind(e.endpoint("term", protoTLS, "term.example.com", ""))
	e.bind(e.endpoint("tcp", protoTCP, "", ""))
	ipp := e.ipPolicy()
	_, err := e.api.CreateIPPolicyRule(e.ctx, e.a, ipaccess.CreateRuleParams{IPPolicyID: ipp, CIDR: "127.0.0.0/8", Action: "deny"})
	e.check(err)
	_, err = e.api.CreateIPRestriction(e.ctx, e.a, ipaccess.CreateRestrictionParams{Type: ipaccess.TypeEndpoints, Enforced: true, IPPolicyIDs: []string{ipp}})
	e.check(err)
	e.applied(e.c)

	for _, overTLS := range []bool{true, false} {
		host := "plain.example.com"
		if overTLS {
			host = "app.example.com"
		}
		if res := e.mustGet(t, overTLS, host, "/"); res.status != http.StatusForbidden {
			t.Errorf("%s: %d %q, want 403", host, res.status, res.body)
		}
	}
	if c, err := e.dialTLS("term.example.com", e.ca); err == nil {
		c.Close()
		t.Error("tls endpoint: handshake completed despite an enforced endpoints restriction")
	}
	c := e.dialTCP(t)
	wantClosed(t, c, "tcp endpoint under an enforced endpoints restriction")
	c.Close()
	for _, kind := range []string{kindTLS, kindTCP} {
		if n := e.connCount(kind, outcomeIPRestricted, 1); n != 1 {
			t.Errorf("%s ip_restricted: %v, want 1", kind, n)
		}
	}
	if n := len(e.fa.calls()); n != 0 {
		t.Errorf("%d agent streams opened for refused clients", n)
	}
}

// TestEndpointTLS: a tls endpoint is served on the HTTPS port by the
// ClientHello's name. Passed through, the client's TLS (ClientHello
// first) goes to the agent, whose own certificate the client sees;
// terminated, the client sees the reserved domain's certificate and the
// agent reads plaintext. The agent is told protocol tls, edge type none
// and PassthroughTLS accordingly.
func TestEndpointTLS(t *testing.T) {
	e := newEpEnv(t, nil)
	pass := e.endpoint("pass", protoTLS, "pass.example.com", "")
	pass.PassthroughTLS = true
	e.bind(pass)
	term := e.endpoint("term", protoTLS, "term.example.com", "")
	e.bind(term)
	for _, tc := range []struct {
		name, host  string
		ep          agents.Endpoint
		roots       *testCA
		passthrough bool
		wantSerial  int64
	}{
		{name: "terminating", host: "term.example.com", ep: term, roots: e.ca, wantSerial: e.serials["term.example.com"]},
		{name: "passthrough", host: "pass.example.com", ep: pass, roots: e.agentCA, passthrough: true, wantSerial: e.passSerial},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.fa.calls())
			c, err := e.dialTLS(tc.host, tc.roots)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); got != tc.wantSerial {
				t.Errorf("certificate serial %d, want %d", got, tc.wantSerial)
			}
			msg := "hello, endpoint, through " + tc.name
			roundTrip(t, c, msg)
			calls := e.fa.calls()[before:]
			if len(calls) != 1 {
				t.Fatalf("%d calls of DialTunnel, want 1", len(calls))
			}
			d := calls[0]
			want := agents.ConnHeader{ClientAddr: addrPort(c.LocalAddr()), Proto: "tls", EdgeType: agents.EdgeNone, PassthroughTLS: tc.passthrough}
			if d.tunnelID != tc.ep.ID || d.header != want {
				t.Errorf("DialTunnel(%s, %+v), want (%s, %+v)", d.tunnelID, d.header, tc.ep.ID, want)
			}
			first := d.read.bytes()
			switch {
			case tc.passthrough && (len(first) == 0 || first[0] != 0x16): // a TLS handshake record
				t.Errorf("the agent read %q first, want the client's ClientHello", first)
			case !tc.passthrough && string(first) != msg:
				t.Errorf("the agent read %q first, want the plaintext %q", first, msg)
			}
		})
	}
	if n := testutil.ToFloat64(e.metrics.agentStreams.WithLabelValues(kindTLS, agentOpened)); n != 2 {
		t.Errorf("agent streams opened: %v, want 2", n)
	}
	if n := e.connCount(kindTLS, outcomeServed, 2); n != 2 {
		t.Errorf("tls served: %v, want 2", n)
	}
}

// TestEndpointTCP: a tcp endpoint is served on its port, which
// Streams.ServeTCP opens when the endpoint appears: megabytes both ways
// arrive intact (SHA-256), the client's half-close reaches the agent,
// the bytes are counted, and the agent is told protocol tcp and edge
// type none. Unbinding it cuts its open connection and closes the port.
func TestEndpointTCP(t *testing.T) {
	e := newEpEnv(t, nil)
	if ports, _ := e.c.TCPPorts(); len(ports) != 0 {
		t.Fatalf("TCP ports %v before any tcp endpoint", ports)
	}
	ep := e.endpoint("tcp", protoTCP, "tcp.example.com", "")
	e.bind(ep)
	if ports, _ := e.c.TCPPorts(); !slices.Equal(ports, []int{e.tcpPort}) {
		t.Fatalf("TCP ports %v, want [%d]", ports, e.tcpPort)
	}
	c := e.dialTCP(t)
	defer c.Close()
	const size = 4 << 20
	sent := sha256.New()
	errc := make(chan error, 1)
	go func() {
		_, err := io.CopyN(io.MultiWriter(c, sent), rand.Reader, size)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		errc <- err
	}()
	got := sha256.New()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	n, err := io.Copy(got, c) // ends at the agent's half-close, after everything echoed
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n != size || !bytes.Equal(got.Sum(nil), sent.Sum(nil)) {
		t.Errorf("received %d bytes with SHA-256 %x; want %d with %x", n, got.Sum(nil), size, sent.Sum(nil))
	}
	calls := e.fa.calls()
	want := agents.ConnHeader{ClientAddr: addrPort(c.LocalAddr()), Proto: "tcp", EdgeType: agents.EdgeNone}
	if len(calls) != 1 || calls[0].tunnelID != ep.ID || calls[0].header != want {
		t.Fatalf("DialTunnel calls %+v, want one (%s, %+v)", calls, ep.ID, want)
	}
	if n := e.connCount(kindTCP, outcomeServed, 1); n != 1 {
		t.Errorf("tcp served: %v, want 1", n)
	}
	bytesIn := e.metrics.streamBytesVec.WithLabelValues(kindTCP, "in")
	for deadline := time.Now().Add(10 * time.Second); testutil.ToFloat64(bytesIn) != size && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if in := testutil.ToFloat64(bytesIn); in != size {
		t.Errorf("bytes in %v, want %d", in, size)
	}

	// Unbound: the open connection is cut, the port closed.
	open := e.dialTCP(t)
	defer open.Close()
	roundTrip(t, open, "before the unbind")
	e.unbind(ep.ID)
	_ = open.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, open); err != nil {
		t.Errorf("a connection of the unbound endpoint: %v, want closed", err)
	}
	if ports, _ := e.c.TCPPorts(); len(ports) != 0 {
		t.Errorf("TCP ports %v after the unbind, want none", ports)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(e.tcpPort)))
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the unbound endpoint's port still listens")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEndpointRemoved: an endpoint unbound (its record deleted), or gone
// from the source when its change is read (NotFound), is no longer
// served: its host answers as an unknown host does (404, or the alert
// unrecognized_name on the HTTPS port).
func TestEndpointRemoved(t *testing.T) {
	e := newEpEnv(t, nil)
	plain := e.endpoint("plain", protoHTTP, "plain.example.com", "")
	app := e.endpoint("app", protoHTTPS, "app.example.com", "")
	e.bind(plain)
	e.bind(app)
	if res := e.mustGet(t, false, "plain.example.com", "/"); res.status != http.StatusOK {
		t.Fatalf("before: %d %q", res.status, res.body)
	}
	if res := e.mustGet(t, true, "app.example.com", "/"); res.status != http.StatusOK {
		t.Fatalf("before: %d %q", res.status, res.body)
	}

	e.unbind(plain.ID)
	// Gone from the source, its change read as an update: NotFound.
	e.src.forget(app.ID)
	e.src.touch(t, app.AccountID, app.ID)
	e.applied(e.c)

	if res := e.mustGet(t, false, "plain.example.com", "/"); res.status != http.StatusNotFound || res.body != "no edge serves this host\n" {
		t.Errorf("unbound http endpoint: %d %q, want 404", res.status, res.body)
	}
	if _, err := e.get(t, true, "app.example.com", "/"); err == nil || !strings.Contains(err.Error(), "tls: unrecognized name") {
		t.Errorf("an https endpoint gone from its source: %v; want the alert unrecognized_name", err)
	}
	if s := e.c.Stats(); s.Endpoints != 0 || s.Dropped != 0 {
		t.Errorf("stats %+v, want no endpoint (and none dropped as unservable)", s)
	}
	if e.c.Endpoint(e.a.AccountID, app.ID) != nil || e.c.Endpoint(e.a.AccountID, plain.ID) != nil {
		t.Error("Endpoint still returns a removed endpoint")
	}
}

// TestEndpointNoSession: an endpoint whose agent is not connected here
// (DialTunnel fails with ErrNoSession) answers 502 as a failed upstream
// does, counted as an upstream error of the endpoint and by outcome in
// the agent streams.
func TestEndpointNoSession(t *testing.T) {
	e := newEpEnv(t, nil)
	ep := e.endpoint("app", protoHTTPS, "app.example.com", "")
	e.bind(ep)
	e.fa.failing(ep.ID, agents.ErrNoSession)
	res := e.mustGet(t, true, "app.example.com", "/")
	if res.status != http.StatusBadGateway || res.body != "bad gateway: the upstream did not answer\n" {
		t.Errorf("got %d %q, want 502", res.status, res.body)
	}
	if n := testutil.ToFloat64(e.metrics.agentStreams.WithLabelValues(kindHTTPS, agentNoSession)); n != 1 {
		t.Errorf("agent streams no_session: %v, want 1", n)
	}
	if n := e.metric("edgeplane_proxy_upstream_errors_total", "edge="+ep.ID, "route="); n != 1 {
		t.Errorf("upstream errors of the endpoint: %v, want 1", n)
	}
}

// TestEndpointEdgeWins: an edge and an endpoint that claim the same
// hostport (the control plane's keys prevent it) leave it to the edge,
// and the clash is logged; the endpoint gets it when the edge lets go.
func TestEndpointEdgeWins(t *testing.T) {
	e := newEpEnv(t, nil)
	e.serveHosts(e.a, e.a1, "clash.example.com:443")
	ep := e.endpoint("clash", protoHTTPS, "clash.example.com", "")
	e.bind(ep)
	if res := e.mustGet(t, true, "clash.example.com", "/"); res.status != http.StatusServiceUnavailable {
		t.Errorf("got %d %q, want the edge's 503 (its backend has no tunnel)", res.status, res.body)
	}
	if n := len(e.fa.calls()); n != 0 {
		t.Errorf("the endpoint's agent was dialed %d times", n)
	}
	if !strings.Contains(e.logs.String(), "an edge and an endpoint claim the same hostport") {
		t.Errorf("the clash is not logged: %s", e.logs)
	}
	e.serveHosts(e.a, e.a1)
	e.applied(e.c)
	if res := e.mustGet(t, true, "clash.example.com", "/"); res.status != http.StatusOK || res.body != "agent "+ep.ID+" /" {
		t.Errorf("after the edge let go: %d %q, want the endpoint's agent", res.status, res.body)
	}
}

// TestEndpointsLoadedAtStart: the endpoints bound before the Configs
// starts are listed (every page) and served without one read each; an
// endpoint the source cannot serve (an unknown protocol) is left out,
// counted and logged.
func TestEndpointsLoadedAtStart(t *testing.T) {
	var ids []string
	e := newEpEnv(t, func(e *epEnv) {
		for i := range 5 {
			ep := e.endpoint("app"+strconv.Itoa(i), protoHTTP, "h"+strconv.Itoa(i)+".plain.example.com", "")
			ep.Host = "H" + strconv.Itoa(i) + ".Plain.Example.COM." // served in canonical form
			e.src.bind(e.t, ep)
			ids = append(ids, ep.ID)
		}
		bad := e.endpoint("bad", "udp", "bad.example.com", "")
		e.src.bind(e.t, bad)
	})
	gets, lists := e.src.calls()
	if gets != 0 || lists != 3 {
		t.Errorf("%d reads and %d list pages at start, want 0 and 3", gets, lists)
	}
	if s := e.c.Stats(); s.Endpoints != 5 || s.Dropped != 1 {
		t.Errorf("stats %+v, want 5 endpoints and 1 dropped", s)
	}
	for i, id := range ids {
		host := "h" + strconv.Itoa(i) + ".plain.example.com"
		if res := e.mustGet(t, false, host, "/"); res.status != http.StatusOK || res.body != "agent "+id+" /" {
			t.Errorf("%s: %d %q, want the agent of %s", host, res.status, res.body, id)
		}
	}
	if !strings.Contains(e.logs.String(), "the config of an endpoint cannot be built") {
		t.Errorf("the unservable endpoint is not logged: %s", e.logs)
	}
}

// TestEndpointConfigValidation: newEndpointConfig refuses what cannot be
// served, and serves the rest in canonical form.
func TestEndpointConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ep       agents.Endpoint
		wantErr  bool
		hostport string
	}{
		{"https", agents.Endpoint{Proto: "https", Host: "App.Example.com.", Port: 443}, false, "app.example.com:443"},
		{"https without port", agents.Endpoint{Proto: "https", Host: "app.example.com"}, false, "app.example.com:443"},
		{"wildcard", agents.Endpoint{Proto: "tls", Host: "*.example.com", Port: 443}, false, "*.example.com:443"},
		{"http", agents.Endpoint{Proto: "http", Host: "app.example.com", Port: 80}, false, "app.example.com:80"},
		{"tcp", agents.Endpoint{Proto: "tcp", Host: "tcp.example.com", Port: 20001}, false, "tcp.example.com:20001"},
		{"https on another port", agents.Endpoint{Proto: "https", Host: "app.example.com", Port: 8443}, true, ""},
		{"http on 443", agents.Endpoint{Proto: "http", Host: "app.example.com", Port: 443}, true, ""},
		{"tcp without port", agents.Endpoint{Proto: "tcp", Host: "tcp.example.com"}, true, ""},
		{"bad host", agents.Endpoint{Proto: "https", Host: "app example.com"}, true, ""},
		{"empty label", agents.Endpoint{Proto: "https", Host: "app..example.com"}, true, ""},
		{"no host", agents.Endpoint{Proto: "https"}, true, ""},
		{"unknown proto", agents.Endpoint{Proto: "udp", Host: "app.example.com"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.ep.ID = "ep_1"
			cfg, err := newEndpointConfig(nil, &tc.ep, nil)
			switch {
			case tc.wantErr && err == nil:
				t.Errorf("config %+v, want an error", cfg)
			case !tc.wantErr && err != nil:
				t.Errorf("error %v", err)
			case !tc.wantErr && cfg.hostports[0] != tc.hostport:
				t.Errorf("hostport %q, want %q", cfg.hostports[0], tc.hostport)
			case tc.wantErr && apierr.CodeOf(err) != apierr.InvalidArgument:
				t.Errorf("error %v, want invalid argument", err)
			}
		})
	}
}

// TestEndpointCertificateFollows: a new certificate of an https or
// terminating tls endpoint's reserved domain is presented from the next
// handshake on, without a new version of the endpoint.
func TestEndpointCertificateFollows(t *testing.T) {
	e := newEpEnv(t, nil)
	e.bind(e.endpoint("app", protoHTTPS, "app.example.com", ""))
	e.bind(e.endpoint("term", protoTLS, "term.example.com", ""))
	gets, _ := e.src.calls()
	for _, host := range []string{"app.example.com", "term.example.com"} {
		serial := e.attachCert(e.a, e.ca, e.domains[host], host)
		e.applied(e.c)
		c, err := e.dialTLS(host, e.ca)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); got != serial {
			t.Errorf("%s: certificate serial %d, want the new one's %d", host, got, serial)
		}
		c.Close()
	}
	if now, _ := e.src.calls(); now != gets {
		t.Errorf("%d reads of endpoints for certificate changes, want none", now-gets)
	}
}

// TestEndpointsCompactedFeed: when the feed no longer holds the changes
// after the applied revision, the endpoints are listed again: one
// unbound meanwhile is removed, one bound meanwhile is served.
func TestEndpointsCompactedFeed(t *testing.T) {
	mem := memstore.New()
	w := newWorld(t, mem)
	src := newFakeEndpoints(mem)
	ep := func(name string) agents.Endpoint {
		return agents.Endpoint{ID: agents.EndpointPrefix + name, AccountID: w.a.AccountID, Proto: protoHTTP, Host: name + ".example.com", Port: 80}
	}
	src.bind(t, ep("kept"))
	src.bind(t, ep("gone"))
	h := newHooks(w.api.Host())
	c := w.start(w.api.Host(), mem, h, Options{Endpoints: src})
	release := h.holdNext(w.a1)
	defer release()

	w.policy(w.a, w.a1, w.a1r, denyAll)
	<-h.entered // the follower is busy with this change
	src.unbind(t, w.a.AccountID, agents.EndpointPrefix+"gone")
	src.bind(t, ep("new"))
	w.check(mem.Compact(w.ctx, w.rev()))
	release()
	w.applied(c)

	for name, want := range map[string]bool{"kept": true, "gone": false, "new": true} {
		if got := c.Endpoint(w.a.AccountID, agents.EndpointPrefix+name) != nil; got != want {
			t.Errorf("endpoint %s served %v, want %v", name, got, want)
		}
		if got := c.sitePlain(name+".example.com") != nil; got != want {
			t.Errorf("host %s.example.com served %v, want %v", name, got, want)
		}
	}
	if s := c.Stats(); s.Reloads != 1 || s.Endpoints != 2 {
		t.Errorf("stats %+v, want 1 reload and 2 endpoints", s)
	}
}

// TestEndpointConnectionPolicy: a tls or tcp endpoint's traffic policy
// runs its on_tcp_connect rules on each connection before any byte goes
// back (a deny closes it, counted policy_denied); one that does not
// compile refuses every connection (fail closed).
func TestEndpointConnectionPolicy(t *testing.T) {
	e := newEpEnv(t, nil)
	deny := `{"on_tcp_connect":[{"expressions":["conn.client_ip == '127.0.0.1'"],"actions":[{"type":"deny"}]}]}`
	broken := `{"on_tcp_connect":[{"actions":[{"type":"no-such-action"}]}]}`
	tcp := e.endpoint("tcp", protoTCP, "", deny)
	term := e.endpoint("term", protoTLS, "term.example.com", deny)
	e.bind(tcp)
	e.bind(term)
	refused := func(what string, want float64) {
		t.Helper()
		c := e.dialTCP(t)
		wantClosed(t, c, what+": tcp")
		c.Close()
		if c, err := e.dialTLS("term.example.com", e.ca); err == nil {
			c.Close()
			t.Errorf("%s: tls handshake completed", what)
		}
		for _, kind := range []string{kindTCP, kindTLS} {
			if n := e.connCount(kind, outcomePolicyDenied, want); n != want {
				t.Errorf("%s: %s policy_denied %v, want %v", what, kind, n, want)
			}
		}
	}
	refused("deny", 1)

	tcp.TrafficPolicy, term.TrafficPolicy = broken, broken
	e.bind(tcp)
	e.bind(term)
	refused("a policy that does not compile", 2)
	if n := len(e.fa.calls()); n != 0 {
		t.Errorf("%d agent streams opened for refused connections", n)
	}

	tcp.TrafficPolicy, term.TrafficPolicy = "", ""
	e.bind(tcp)
	e.bind(term)
	c := e.dialTCP(t)
	roundTrip(t, c, "allowed again")
	c.Close()
}

// FuzzEndpointHost: a host an endpoint is served under is lower-case,
// without a trailing dot, of DNS name bytes with at most a leading "*."
// wildcard label, no longer than a host name, and its own canonical
// form; or it is refused.
func FuzzEndpointHost(f *testing.F) {
	for _, s := range []string{"app.example.com", "App.Example.COM.", "*.example.com", "*.", "*.*.example.com", "a b", "", ".", "a..", "a..b", ".a", "ÄÖ.example.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		host, ok := endpointHost(in)
		if !ok {
			if host != "" {
				t.Fatalf("endpointHost(%q) = %q, not ok", in, host)
			}
			return
		}
		rest := strings.TrimPrefix(host, "*.")
		if rest == "" || len(host) > maxHostBytes || strings.HasSuffix(host, ".") || strings.HasPrefix(rest, ".") || strings.Contains(rest, "..") {
			t.Fatalf("endpointHost(%q) = %q", in, host)
		}
		for i := 0; i < len(rest); i++ {
			if c := rest[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._", c) >= 0) {
				t.Fatalf("endpointHost(%q) = %q: byte %q", in, host, c)
			}
		}
		if again, ok := endpointHost(host); !ok || again != host {
			t.Fatalf("endpointHost(%q) = %q, not its own canonical form (%q, %v)", in, host, again, ok)
		}
	})
}
