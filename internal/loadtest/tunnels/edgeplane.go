package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// apiKey is the admin API key every edgeplane serve of the harness is
// bootstrapped with (EDGEPLANE_API_KEY).
var apiKey = "epk_" + strings.Repeat("l", 40)

// serveProc is an edge node the harness started: an edgeplane serve
// -proxy process on a SQLite file (with the API), or an edgeplane proxy
// process on the same file (no API: api is ""), each with the plain HTTP
// listener of the edges, the tunnel listener for agents and the metrics
// endpoint.
type serveProc struct {
	*proc
	store                           string // the -store spec, for edgeplane admin
	api, proxyHTTP, agents, metrics string // addresses
	node                            string // the edge node's ID (nd_...)
	hop                             string // the hop's listener ("": none)
}

// nodeOptions are what an edge node listens on beyond its HTTP, agents'
// and metrics' listeners, and how it is profiled.
type nodeOptions struct {
	// tcpPorts are the TCP edges' ports, LOW-HIGH ("": none), on
	// tcpHost (default 127.0.0.1).
	tcpPorts, tcpHost string
	// hop says that the node listens for other nodes' hops on 127.0.0.1.
	hop bool
	// cpuprofile, when not "", is the directory the node writes its CPU
	// profile to (NAME.pprof) as it stops (serve only).
	cpuprofile string
}

// startServe starts edgeplane serve -proxy in dir on a new SQLite file:
// the API, the plain HTTP listener of the edges, the tunnel listener
// with the certificate, /metrics and what o asks; without the API's
// rate limit.
func startServe(dir, name, bin, certFile, keyFile string, o nodeOptions) (*serveProc, error) {
	s := &serveProc{store: "sqlite:" + filepath.Join(dir, name+".db")}
	args := []string{"serve", "-addr", "127.0.0.1:0", "-store", s.store, "-metrics-addr", "127.0.0.1:0",
		"-proxy", "-proxy-http-addr", "127.0.0.1:0",
		"-proxy-tunnel-addr", "127.0.0.1:0", "-proxy-tunnel-cert", certFile, "-proxy-tunnel-key", keyFile}
	if o.tcpPorts != "" {
		args = append(args, "-proxy-tcp-ports", o.tcpPorts, "-proxy-tcp-host", cmp.Or(o.tcpHost, "127.0.0.1"))
	}
	if o.hop {
		args = append(args, "-proxy-node-addr", "127.0.0.1:0")
	}
	if o.cpuprofile != "" {
		args = append(args, "-cpuprofile", filepath.Join(o.cpuprofile, name+".pprof"))
	}
	p, err := startProc(dir, name, bin, false, args, "EDGEPLANE_API_KEY="+apiKey, "EDGEPLANE_RATE_LIMIT=0")
	if err != nil {
		return nil, err
	}
	s.proc = p
	// serve prints the proxy's listeners, the agents', the node, the
	// hop's, the metrics' and last the API's, once it serves.
	if err := s.readAddrs(o.hop, &s.api, "listening on http://"); err != nil {
		return nil, err
	}
	return s, nil
}

// startProxy starts edgeplane proxy in dir on the SQLite file of store
// (a serve process's, whose sealing key file lies beside it): the plain
// HTTP listener of the edges, the tunnel listener with the certificate,
// /metrics and what o asks (not cpuprofile).
func startProxy(dir, name, bin, store, certFile, keyFile string, o nodeOptions) (*serveProc, error) {
	s := &serveProc{store: store}
	args := []string{"proxy", "-store", store, "-metrics-addr", "127.0.0.1:0", "-http-addr", "127.0.0.1:0",
		"-tunnel-addr", "127.0.0.1:0", "-tunnel-cert", certFile, "-tunnel-key", keyFile}
	if o.tcpPorts != "" {
		args = append(args, "-tcp-ports", o.tcpPorts, "-tcp-host", cmp.Or(o.tcpHost, "127.0.0.1"))
	}
	if o.hop {
		args = append(args, "-node-addr", "127.0.0.1:0")
	}
	p, err := startProc(dir, name, bin, false, args)
	if err != nil {
		return nil, err
	}
	s.proc = p
	// proxy prints the same lines as serve, but the API's: /metrics's
	// is its last.
	if err := s.readAddrs(o.hop, nil, ""); err != nil {
		return nil, err
	}
	return s, nil
}

// readAddrs reads the node's addresses from its stdout, in the order it
// prints them: the proxy's HTTP listener, the agents', the node's ID,
// the hop's (when hop), the metrics' and then, when last is not nil, the
// line that starts with lastPrefix. It stops the process when one does
// not come, and drains its stdout once all did.
func (s *serveProc) readAddrs(hop bool, last *string, lastPrefix string) error {
	type line struct {
		prefix string
		addr   *string
	}
	lines := []line{{"proxy on http://", &s.proxyHTTP}, {"agents connect to ", &s.agents}, {"edge node ", &s.node}}
	if hop {
		lines = append(lines, line{"other nodes hop to ", &s.hop})
	}
	lines = append(lines, line{"metrics on http://", &s.metrics})
	if last != nil {
		lines = append(lines, line{lastPrefix, last})
	}
	for _, l := range lines {
		v, err := s.await(l.prefix, 30*time.Second)
		if err != nil {
			s.stop()
			return err
		}
		*l.addr, _, _ = strings.Cut(v, " ")
	}
	s.metrics = strings.TrimSuffix(s.metrics, "/metrics")
	s.drain()
	return nil
}

// call sends a request to the API and wants status want; it returns
// the decoded body.
func (s *serveProc) call(want int, method, path, body string) (map[string]any, error) {
	req, err := http.NewRequest(method, "http://"+s.api+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Service-Version", "2")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d %s; want %d", method, path, resp.StatusCode, b, want)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return v, nil
}

var apiClient = &http.Client{Timeout: 30 * time.Second}

// create POSTs body to path (201) and returns the field of the answer.
func (s *serveProc) create(path, body, field string) (string, error) {
	v, err := s.call(http.StatusCreated, http.MethodPost, path, body)
	if err != nil {
		return "", err
	}
	id, ok := v[field].(string)
	if !ok {
		return "", fmt.Errorf("POST %s answered no %s: %v", path, field, v)
	}
	return id, nil
}

// backend creates a tunnel group backend selecting app=label and
// returns its ID.
func (s *serveProc) backend(label string) (string, error) {
	return s.create("/backends/tunnel_group", `{"labels":{"app":"`+label+`"}}`, "id")
}

// httpsEdge creates what serves https://host through the backend
// selecting app=label: the reserved domain, the backend, the HTTPS edge
// on host:443 and its route "/".
func (s *serveProc) httpsEdge(host, label string) error {
	if _, err := s.create("/reserved_domains", `{"domain":"`+host+`"}`, "id"); err != nil {
		return err
	}
	bk, err := s.backend(label)
	if err != nil {
		return err
	}
	edge, err := s.create("/edges/https", `{"hostports":["`+host+`:443"]}`, "id")
	if err != nil {
		return err
	}
	_, err = s.create("/edges/https/"+edge+"/routes", `{"match":"/","match_type":"path_prefix","backend":{"backend_id":"`+bk+`"}}`, "id")
	return err
}

// tcpEdge creates a TCP edge on host:port (and host's reserved domain)
// whose backend selects app=label.
func (s *serveProc) tcpEdge(host string, port int, label string) error {
	if _, err := s.create("/reserved_domains", `{"domain":"`+host+`"}`, "id"); err != nil {
		return err
	}
	bk, err := s.backend(label)
	if err != nil {
		return err
	}
	_, err = s.create("/edges/tcp", `{"hostports":["`+host+`:`+strconv.Itoa(port)+`"],"backend":{"backend_id":"`+bk+`"}}`, "id")
	return err
}

// registerTunnel registers a tunnel with edgeplane admin register-tunnel
// on the store: labeled app=label, forwarding to forwardsTo (the proxy
// dials it directly), under a lease longer than any run.
func (s *serveProc) registerTunnel(bin, token, label, forwardsTo string) (string, error) {
	out, err := exec.Command(bin, "admin", "register-tunnel", "-store", s.store, "-token", token, "-labels", "app="+label,
		"-forwards-to", forwardsTo, "-tunnel-lease", "24h").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("admin register-tunnel: %v: %s", err, out)
	}
	m := regexp.MustCompile(`^(tn_\w+)\n`).FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("admin register-tunnel printed %q", out)
	}
	return string(m[1]), nil
}

// scrape returns the process's /metrics.
func (s *serveProc) scrape() (string, error) {
	resp, err := apiClient.Get("http://" + s.metrics + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// metric returns the value of the sample named exactly name (with its
// labels, if any) on the process's /metrics.
func (s *serveProc) metric(name string) (float64, error) {
	b, err := s.scrape()
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(b, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("/metrics has no %s", name)
}

// startAgent starts edgeplane agent with a labeled tunnel app=label
// forwarding to 127.0.0.1:port (an http tunnel: the only kind this
// server serves to agents) over connections sessions (-connections)
// and waits for it to print the tunnel.
func startAgent(dir, name, bin string, s *serveProc, certFile, token string, port int, label string, connections int) (*proc, error) {
	p, err := startProc(dir, name, bin, false, []string{"agent", "-server", s.agents, "-ca", certFile, "-authtoken", token,
		"-connections", strconv.Itoa(connections), "http", strconv.Itoa(port), "-label", "app=" + label})
	if err != nil {
		return nil, err
	}
	if _, err := p.await("tn_", 30*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	p.drain()
	return p, nil
}

// metricSum returns the sum of the samples of the metric name (of any
// labels) whose labels include every one of labels (each as /metrics
// writes it: direction="out"); 0 when there is none.
func (s *serveProc) metricSum(name string, labels ...string) (float64, error) {
	b, err := s.scrape()
	if err != nil {
		return 0, err
	}
	var sum float64
	for line := range strings.SplitSeq(b, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || rest[0] != '{' && rest[0] != ' ' {
			continue
		}
		set, value := "", rest
		if rest[0] == '{' {
			var found bool
			if set, value, found = strings.Cut(rest[1:], "} "); !found {
				continue
			}
		}
		if !allIn(strings.Split(set, ","), labels) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return 0, fmt.Errorf("/metrics: %s: %w", line, err)
		}
		sum += v
	}
	return sum, nil
}

// allIn reports whether every one of want is in set.
func allIn(set, want []string) bool {
	for _, w := range want {
		if !slices.Contains(set, w) {
			return false
		}
	}
	return true
}

// opStats are the count and the total seconds of one store operation,
// from edgeplane_store_operation_duration_seconds.
type opStats struct {
	count int64
	sum   float64
}

func (a opStats) minus(b opStats) opStats { return opStats{a.count - b.count, a.sum - b.sum} }

// mean is the mean duration in seconds.
func (a opStats) mean() float64 {
	if a.count == 0 {
		return 0
	}
	return a.sum / float64(a.count)
}

// storeOp returns the store operation op's figures so far (zero where
// /metrics cannot be read).
func (s *serveProc) storeOp(op string) opStats {
	const name = "edgeplane_store_operation_duration_seconds"
	n, _ := s.metric(name + `_count{op="` + op + `"}`)
	sum, _ := s.metric(name + `_sum{op="` + op + `"}`)
	return opStats{count: int64(n), sum: sum}
}
