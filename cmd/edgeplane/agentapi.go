package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.ngrok.com/ngrok"
)

// The agent API: the original agent's local API, read by scripts and
// tools to learn an agent's public URLs, on 127.0.0.1:4040 (-inspect-addr;
// the next free port up to 4049 when 4040 is taken). It answers
//
//	GET /api/tunnels         {"tunnels": [TUNNEL, ...], "uri": "/api/tunnels"}
//	GET /api/tunnels/{name}  TUNNEL
//	GET /api/status          {"status": "online", "server": ..., ...}
//
// with TUNNEL in the original's shape: name, ID, uri, public_url, proto,
// config {addr, inspect}, metrics {conns {count, gauge}}. It has no
// authentication, as the original's: it listens on a loopback address
// only, and answers only requests whose Host is a loopback name, so that
// a web page cannot reach it by pointing a name of its own at 127.0.0.1
// (DNS rebinding). The inspector's routes (captured requests, replay and
// their web page) are inspectapi.go's.

// agentState is what the agent API shows: the session and the tunnels.
// Its methods are safe for concurrent use.
type agentState struct {
	mu       sync.Mutex
	status   string // "connecting", "online" or "reconnecting"
	server   string // the server of the session, once there is one
	sessions int    // sessions established
	tunnels  []*apiTunnel
	// ins keeps the captured requests; nil when inspection is off.
	ins *inspector
}

func newAgentState(n int) *agentState {
	return &agentState{status: "connecting", tunnels: make([]*apiTunnel, 0, n)}
}

// apiTunnel is one tunnel of the agent API.
type apiTunnel struct {
	name   string
	tun    ngrok.Tunnel // its ID (a labeled tunnel's changes on reconnects) and URL
	proto  string
	addr   string
	target agentTarget
	labels map[string]string
	// conns counts the connections accepted, open those open now.
	conns, open atomic.Int64
}

func (t *apiTunnel) opened() { t.conns.Add(1); t.open.Add(1) }
func (t *apiTunnel) closed() { t.open.Add(-1) }

// add shows a tunnel that started.
func (s *agentState) add(ep *agentEndpoint, tun ngrok.Tunnel) *apiTunnel {
	t := &apiTunnel{name: ep.name, tun: tun, proto: tun.Proto(), addr: ep.target.String(), target: ep.target, labels: maps.Clone(ep.labels)}
	s.mu.Lock()
	s.tunnels = append(s.tunnels, t)
	s.mu.Unlock()
	return t
}

// connected records a session established with server.
func (s *agentState) connected(server string) {
	s.mu.Lock()
	s.status, s.server = "online", server
	s.sessions++
	s.mu.Unlock()
}

// disconnected records a failed connection or session.
func (s *agentState) disconnected() {
	s.mu.Lock()
	if s.sessions > 0 {
		s.status = "reconnecting"
	}
	s.mu.Unlock()
}

// apiTunnelJSON is a tunnel as the original agent's API shows it ("ID"
// is spelled so there), and labels, an extension for labeled tunnels.
type apiTunnelJSON struct {
	Name      string            `json:"name"`
	ID        string            `json:"ID"`
	URI       string            `json:"uri"`
	PublicURL string            `json:"public_url"`
	Proto     string            `json:"proto"`
	Config    apiTunnelConfig   `json:"config"`
	Metrics   apiTunnelMetrics  `json:"metrics"`
	Labels    map[string]string `json:"labels,omitempty"`
}

type apiTunnelConfig struct {
	Addr    string `json:"addr"`    // the target
	Inspect bool   `json:"inspect"` // false: requests are not captured
}

type apiTunnelMetrics struct {
	Conns apiConnMetrics `json:"conns"`
}

// apiConnMetrics are the connection counters the agent keeps: of the
// original's (count, gauge, rates and percentiles), the first two.
type apiConnMetrics struct {
	Count int64 `json:"count"` // accepted since the tunnel started
	Gauge int64 `json:"gauge"` // open now
}

type apiTunnelList struct {
	Tunnels []apiTunnelJSON `json:"tunnels"`
	URI     string          `json:"uri"`
}

type apiStatus struct {
	URI      string `json:"uri"`
	Status   string `json:"status"`   // connecting, online or reconnecting
	Server   string `json:"server"`   // the server of the last session, "" before the first
	Sessions int    `json:"sessions"` // sessions established: 1, then one more each reconnect
	Tunnels  int    `json:"tunnels"`
}

// apiError is an error as the original agent's API answers one.
type apiError struct {
	ErrorCode  int    `json:"error_code"`
	StatusCode int    `json:"status_code"`
	Msg        string `json:"msg"`
}

// json returns t as the API shows it; inspect says whether requests
// are captured.
func (t *apiTunnel) json(inspect bool) apiTunnelJSON {
	return apiTunnelJSON{Name: t.name, ID: t.tun.ID(), URI: "/api/tunnels/" + url.PathEscape(t.name), PublicURL: t.tun.URL(), Proto: t.proto,
		Config: apiTunnelConfig{Addr: t.addr, Inspect: inspect && t.target.scheme != ""}, Metrics: apiTunnelMetrics{Conns: apiConnMetrics{Count: t.conns.Load(), Gauge: t.open.Load()}},
		Labels: t.labels}
}

// handler returns the agent API's handler, every route registered here.
func (s *agentState) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/tunnels", func(w http.ResponseWriter, r *http.Request) {
		list := apiTunnelList{Tunnels: []apiTunnelJSON{}, URI: "/api/tunnels"}
		s.mu.Lock()
		for _, t := range s.tunnels {
			list.Tunnels = append(list.Tunnels, t.json(s.ins != nil))
		}
		s.mu.Unlock()
		writeAPI(w, http.StatusOK, list)
	})
	mux.HandleFunc("GET /api/tunnels/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, t := range s.tunnels {
			if t.name == name {
				writeAPI(w, http.StatusOK, t.json(s.ins != nil))
				return
			}
		}
		writeAPIError(w, http.StatusNotFound, fmt.Sprintf("no tunnel named %q", name))
	})
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		st := apiStatus{URI: "/api/status", Status: s.status, Server: s.server, Sessions: s.sessions, Tunnels: len(s.tunnels)}
		s.mu.Unlock()
		writeAPI(w, http.StatusOK, st)
	})
	if s.ins != nil {
		s.inspectRoutes(mux)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == "/api/tunnels" || p == "/api/status" || strings.HasPrefix(p, "/api/tunnels/") {
			w.Header().Set("Allow", "GET, HEAD")
			writeAPIError(w, http.StatusMethodNotAllowed, r.Method+" is not served: the agent API is read-only (GET)")
			return
		}
		writeAPIError(w, http.StatusNotFound, "no such resource: the agent API serves GET /api/tunnels, /api/tunnels/{name} and /api/status")
	})
	return loopbackHostOnly(mux)
}

// loopbackHostOnly refuses requests whose Host is not a loopback name
// (localhost, 127.0.0.1, [::1], ...): a page of another site whose name
// was made to resolve to 127.0.0.1 sends its own name.
func loopbackHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopbackHost(r.Host) {
			writeAPIError(w, http.StatusForbidden, "the agent API answers requests to a loopback name only (localhost, 127.0.0.1, [::1])")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isLoopbackHost says whether a Host header names a loopback address:
// localhost or a loopback IP address, with or without a port.
func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func writeAPI(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeAPIError(w http.ResponseWriter, code int, msg string) {
	writeAPI(w, code, apiError{ErrorCode: code, StatusCode: code, Msg: msg})
}

// listenAgentAPI listens for the agent API at addr; "" is def, or when
// its port is taken the next free one of the n ports from it.
func listenAgentAPI(addr, def string, n int) (net.Listener, error) {
	if addr != "" {
		return net.Listen("tcp", addr)
	}
	host, port, err := net.SplitHostPort(def)
	if err != nil {
		return nil, err
	}
	first, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	for p := first; p < first+n; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err == nil {
			return ln, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("the ports %d to %d of %s are all in use", first, first+n-1, host)
}
