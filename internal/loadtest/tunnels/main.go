// Command tunnels is the load harness of agents' tunnels (package
// tunnel, and the proxy that dials them): in one run, over loopback, it
// measures
//
//  1. HTTP through an agent's tunnel against the same HTTP with the
//     proxy dialing the upstream itself: one edgeplane serve -proxy
//     process (SQLite file store, the tunnel listener with a self-signed
//     certificate, no API rate limit) serves two HTTPS edges,
//     direct.example.com, whose backend selects a tunnel registered with
//     edgeplane admin register-tunnel -forwards-to the upstream, and
//     agent.example.com, whose backend selects the labeled tunnel
//     (app=agent) of an edgeplane agent process forwarding to the same
//     upstream. wrk sends GET / to the proxy's plain HTTP listener with
//     Host: direct.example.com:443 or agent.example.com:443 (an HTTPS
//     edge's hostport is named by the Host header there), interleaved
//     rounds. Targets: req/s agent/direct >= 0.6, p99 agent/direct <= 2x.
//  2. TCP bytes/s through a tunnel against the direct relay: two TCP
//     edges of the same process, one whose tunnel forwards to
//     tcp://127.0.0.1:SINK (the proxy dials it), one whose tunnel is a
//     second agent's labeled tunnel (app=tcpagent) forwarding to the same
//     sink. A labeled tunnel is protocol-agnostic: the agent relays the
//     bytes of every connection it is handed to its target, and writes
//     nothing of its own (its 502 page is only for an http or https
//     connection whose target cannot be dialed; the TCP edge tells it
//     "tcp"). The agent's tcp tunnel (an endpoint bind) is not served by
//     this server, so "edgeplane agent http SINKPORT -label" is the way.
//     One connection moves -bytes to the sink (upload: the sink answers
//     the count once the client half-closes) and from it (download).
//     Target: MiB/s agent/direct >= 0.5 each way. Last, the floor
//     (floor.go): a bare crypto/tls relay in a process of its own copies
//     -bytes plain to TLS and TLS to plain, and its CPU s/GB is printed
//     beside the tunnel server's and the agent's.
//  3. Idle agent sessions on one proxy: a fresh serve process, -tools
//     processes of this binary (-serve sessions) open -sessions sessions
//     with the SDK (golang.ngrok.com/ngrok: sessions only, no tunnel),
//     hold them idle for -hold, then sample -sample of them with
//     Session.Heartbeat. It reports the serve process's VmRSS per session
//     (before and after, from /proc; target <= 64 KiB), its
//     edgeplane_tunnel_sessions gauge (want -sessions), the heartbeats
//     the SDK's own timer sent during the hold, the sessions the SDK saw
//     fail (want none), and the store updates during the hold (the
//     node's one lease, renewed every 20 s whatever the sessions: want
//     at most one per 20 s).
//  4. Two edge nodes and the hop between them (-parts nodes): node A, an
//     edgeplane serve -proxy process with -proxy-node-addr, and node B,
//     an edgeplane proxy process on the same SQLite file (it reads the
//     sealing key from the key file serve keeps beside it) with
//     -node-addr; each has its tunnel, hop, plain HTTP and metrics
//     listeners, and the TCP edge's port on a loopback address of its
//     own (A 127.0.0.1, B 127.0.0.2). Two agents hold their sessions on
//     A: the labeled tunnel of the HTTPS edge agent.example.com to the
//     upstream (as in 1) and that of a TCP edge to the sink (as in 2). B
//     holds no agent: it carries what it receives for them to A over the
//     hop (its edgeplane_hop_streams_total says how many streams). wrk
//     through A's HTTP listener and through B's, with the same Host,
//     interleaved rounds; then -bytes each way through the TCP edge at
//     A's address and at B's. Targets: req/s B/A >= 0.7 (p99 B/A is
//     shown) and MiB/s B/A >= 0.7 each way. Last, the store writes of
//     both nodes (create, update, replace, delete, from each one's
//     /metrics) during a -hold with no idle tunnel, then during one with
//     -node-tunnels idle SDK sessions each with one labeled tunnel
//     (app=idle), half on each node, opened by -tools tool processes
//     (half per node). Target: independent of the tunnels, at most the
//     larger of the baseline and the two nodes' lease renewals (one per
//     node every 20 s); and each node's sessions and tunnels gauges as
//     opened, no session failing during the hold.
//
// With -parts heap (not in the default run) it also opens -sessions
// idle sessions on a tunnel.Server alone in a process (memstore, no
// proxy, no SQLite) and prints the live heap per session with the
// allocation sites that hold it (go tool pprof -top of a heap profile).
//
// Every server runs in a process of its own: edgeplane serve (and
// proxy), each agent, the upstream and the sink (this binary again,
// with -serve), the session tools; wrk and the transfers' client are
// apart from them. The
// harness raises its open-files limit to the hard limit, which the
// processes it starts inherit. edgeplane is built once into a temporary
// directory (or -edgeplane names a binary).
//
//	go run ./internal/loadtest/tunnels                            # the default run, about 6 minutes (the nodes part 3 to 4)
//	go run ./internal/loadtest/tunnels -rounds 7 -duration 10s -conns 32
//	go run ./internal/loadtest/tunnels -parts sessions -sessions 20000 -hold 60s
//	go run ./internal/loadtest/tunnels -parts nodes -node-tunnels 1000 -rounds 3 -hold 20s
//	go run ./internal/loadtest/tunnels -parts heap -sessions 4000 -hold 15s -heapprofile /tmp/heap
//	go run ./internal/loadtest/tunnels -parts http,tcp -cpuprofile /tmp/prof   # serve's CPU profile
//	go run ./internal/loadtest/tunnels -parts tcp -rounds 3 -connections 4 -streams 8   # the agent on 4 sessions, 8 parallel TCP connections
//
// It prints one row per round and case (with the CPU time of the serve
// process, the agent and the upstream from /proc/PID/stat, and their
// write system calls from /proc/PID/io), then the medians and the
// per-round ratios agent/direct with their targets, and a summary. On a
// 2-core machine the agent shares the cores with the proxy, the
// upstream and the load generator, so the ratios measure the whole CPU
// cost of the extra hop, not the proxy's alone. Processes' stderr goes to files in the temporary directory (kept with
// -keep): edgeplane logs every request and connection there.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	mode := flag.String("serve", "", "internal: run one server (upstream, sink) or the sessions tool (sessions) instead of the harness")
	server := flag.String("server", "", "internal: the sessions tool's tunnel server")
	caFile := flag.String("ca", "", "internal: the sessions tool's CA file")
	authtoken := flag.String("authtoken", "", "internal: the sessions tool's authtoken")
	n := flag.Int("n", 0, "internal: the sessions one tool opens")
	label := flag.String("label", "", "internal: KEY=VALUE, the label of the one tunnel each of the sessions tool's sessions starts (default: none, sessions only)")
	keyFile := flag.String("key", "", "internal: the tunnel server's key file (tunnelheap)")

	parts := flag.String("parts", "http,tcp,sessions,nodes", "comma-separated parts to run: http, tcp, sessions, nodes, and heap (not by default: "+
		"where an idle session's memory goes, on a tunnel.Server alone in a process, with a heap profile)")
	rounds := flag.Int("rounds", 5, "measured rounds of the HTTP and TCP parts; each round runs every case once")
	duration := flag.Duration("duration", 5*time.Second, "wrk duration of one HTTP measurement")
	conns := flag.Int("conns", 64, "wrk connections")
	threads := flag.Int("threads", 2, "wrk threads")
	bytes := flag.Int64("bytes", 256<<20, "bytes of one TCP transfer (with -streams, of all its streams together)")
	connections := flag.Int("connections", 1, "the TCP part's agent runs with -connections N (sessions to the server; issue 46 measures 1 and 4)")
	streams := flag.Int("streams", 1, "parallel TCP connections of one TCP transfer, each moving -bytes/N")
	sessions := flag.Int("sessions", 10000, "idle agent sessions")
	tools := flag.Int("tools", 4, "processes the sessions are opened from")
	parallel := flag.Int("parallel", 16, "sessions one tool process connects at a time")
	hold := flag.Duration("hold", 30*time.Second, "how long the sessions idle before they are measured")
	sample := flag.Int("sample", 100, "sessions whose heartbeat is sampled")
	nodeTunnels := flag.Int("node-tunnels", 10000, "idle agent sessions of the nodes part, each with one labeled tunnel, half on each of the two nodes")
	edgeplaneBin := flag.String("edgeplane", "", "the edgeplane binary (default: built from this module)")
	keep := flag.Bool("keep", false, "keep the temporary directory (stores, logs)")
	heapprofile := flag.String("heapprofile", "", "where -parts heap writes its heap profiles (default: the temporary directory)")
	addr := flag.String("addr", "", "internal: the address the floor's source or sink dials")
	overTLS := flag.Bool("tls", false, "internal: the floor's source or sink dials with TLS")
	certFlag := flag.String("cert", "", "internal: the floor relay's certificate file")
	cpuprofile := flag.String("cpuprofile", "", "write the CPU profile of each serve process (its whole run) into this directory: serve.pprof, serve-sessions.pprof")
	flag.Parse()
	log.SetFlags(0)
	var err error
	switch *mode {
	case "":
		err = harness(options{parts: *parts, rounds: *rounds, duration: *duration, conns: *conns, threads: *threads, bytes: *bytes,
			connections: *connections, streams: *streams,
			sessions:    sessionsConfig{n: *sessions, tools: *tools, parallel: *parallel, hold: *hold, sample: *sample},
			nodeTunnels: *nodeTunnels, edgeplane: *edgeplaneBin, keep: *keep, cpuprofile: *cpuprofile, heapprofile: *heapprofile})
	case "sessions":
		err = runSessionsTool(*server, *caFile, *authtoken, *label, *n, *parallel)
	case "tunnelheap":
		err = runTunnelHeap(*caFile, *keyFile)
	case "floor":
		self, serr := os.Executable()
		if serr != nil {
			log.Fatal(serr)
		}
		err = runFloor(self, *bytes, *certFlag, *keyFile)
	case "floorsource":
		err = runFloorSource(*addr, *bytes, *overTLS)
	case "floorsink":
		err = runFloorSink(*addr, *overTLS)
	default:
		err = runServer(*mode)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// runServer runs the upstream or the sink on 127.0.0.1, prints
// "listening ADDR" once it accepts connections, and returns when its
// standard input ends (the harness exited or closed it).
func runServer(kind string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	switch kind {
	case "upstream":
		go func() { _ = http.Serve(ln, serveUpstream()) }()
	case "sink":
		go func() { _ = serveSink(ln) }()
	default:
		return fmt.Errorf("unknown server %q", kind)
	}
	fmt.Printf("listening %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return ln.Close()
}

// startServer starts this binary as the server kind (upstream, sink),
// named name, adds it to ps, and returns it with its address and port
// once it listens.
func startServer(dir, name, self, kind string, ps *procs) (p *proc, addr string, port int, err error) {
	if p, err = startProc(dir, name, self, true, []string{"-serve", kind}); err != nil {
		return nil, "", 0, err
	}
	ps.add(p)
	if addr, err = p.await("listening ", 10*time.Second); err != nil {
		return nil, "", 0, err
	}
	_, portText, _ := net.SplitHostPort(addr)
	port, err = strconv.Atoi(portText)
	if err != nil {
		return nil, "", 0, fmt.Errorf("%s listens on %q", name, addr)
	}
	return p, addr, port, nil
}

// options are the harness's flags.
type options struct {
	parts                  string
	rounds, conns, threads int
	duration               time.Duration
	bytes                  int64
	connections, streams   int
	sessions               sessionsConfig
	nodeTunnels            int
	edgeplane, cpuprofile  string
	heapprofile            string
	keep                   bool
}

func harness(o options) error {
	want := map[string]bool{}
	for p := range strings.SplitSeq(o.parts, ",") {
		switch p {
		case "http", "tcp", "sessions", "nodes", "heap":
			want[p] = true
		default:
			return fmt.Errorf("-parts: unknown part %q: want http, tcp, sessions, nodes, heap", p)
		}
	}
	if o.connections < 1 || o.connections > 16 || o.streams < 1 || o.streams > 64 || o.bytes < int64(o.streams) {
		return errors.New("-connections must be from 1 to 16, -streams from 1 to 64, -bytes at least -streams")
	}
	if o.rounds < 1 || o.sessions.tools < 1 || o.sessions.n < o.sessions.tools || o.sessions.sample < o.sessions.tools || o.sessions.parallel < 1 {
		return errors.New("-rounds, -tools, -parallel must be at least 1, -sessions and -sample at least -tools")
	}
	if want["nodes"] && o.nodeTunnels < max(2, o.sessions.tools) {
		return errors.New("-node-tunnels must be at least 2 and at least -tools: half of the tools open half of the tunnels on each node")
	}
	if _, err := exec.LookPath("wrk"); err != nil && (want["http"] || want["nodes"]) {
		return errors.New("wrk not found: apt-get install wrk")
	}
	if want["sessions"] || want["heap"] {
		if err := raiseOpenFiles(uint64(o.sessions.n) + 1024); err != nil {
			return err
		}
	}
	if want["nodes"] {
		// Each node holds half of the tunnels' sessions.
		if err := raiseOpenFiles(uint64(o.nodeTunnels-o.nodeTunnels/2) + 1024); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "tunnels-load")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintf(os.Stderr, "keeping %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bin := o.edgeplane
	if bin == "" {
		t0 := time.Now()
		if bin, err = buildEdgeplane(dir); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "built edgeplane in %v\n", time.Since(t0).Round(time.Millisecond))
	}
	if o.cpuprofile != "" {
		if err := os.MkdirAll(o.cpuprofile, 0o755); err != nil {
			return err
		}
	}
	certFile, keyFile, err := writeCert(dir)
	if err != nil {
		return err
	}
	met := map[string]bool{}
	if want["http"] || want["tcp"] {
		if err := dataPlane(dir, bin, self, certFile, keyFile, o, want, met); err != nil {
			return err
		}
	}
	if want["sessions"] {
		fmt.Printf("\n## Idle agent sessions\n\n")
		ok, err := measureSessions(dir, bin, self, certFile, keyFile, o.cpuprofile, o.sessions)
		if err != nil {
			return err
		}
		met["idle sessions (KiB per session, gauge, heartbeats)"] = ok
	}
	if want["nodes"] {
		fmt.Printf("\n## Two edge nodes: the hop\n\n")
		if err := measureNodes(dir, bin, self, certFile, keyFile, o, met); err != nil {
			return err
		}
	}
	if want["heap"] {
		fmt.Printf("\n## Where an idle session's memory goes\n\n")
		profDir := o.heapprofile
		if profDir == "" {
			profDir = dir
		} else if err := os.MkdirAll(profDir, 0o755); err != nil {
			return err
		}
		if err := measureHeap(dir, self, certFile, keyFile, profDir, o.sessions); err != nil {
			return err
		}
	}
	fmt.Printf("\n## Targets\n\n")
	for _, k := range slices.Sorted(maps.Keys(met)) {
		fmt.Printf("%s: %s\n", k, verdict(met[k]))
	}
	return nil
}

// dataPlane runs the HTTP and TCP parts on one serve process.
func dataPlane(dir, bin, self, certFile, keyFile string, o options, want, met map[string]bool) error {
	var ps procs
	defer ps.stopAll()
	up, upAddr, upP, err := startServer(dir, "upstream", self, "upstream", &ps)
	if err != nil {
		return err
	}
	_, sinkAddr, sinkP, err := startServer(dir, "sink", self, "sink", &ps)
	if err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	lo, hi := min(ports[0], ports[1]), max(ports[0], ports[1])
	t0 := time.Now()
	s, err := startServe(dir, "serve", bin, certFile, keyFile, nodeOptions{tcpPorts: fmt.Sprintf("%d-%d", lo, hi), cpuprofile: o.cpuprofile})
	if err != nil {
		return err
	}
	ps.add(s.proc)

	// Through the API: the edges, their backends and one credential that
	// may bind every label; the direct tunnels through edgeplane admin.
	if err := s.httpsEdge("direct.example.com", "direct"); err != nil {
		return err
	}
	if err := s.httpsEdge("agent.example.com", "agent"); err != nil {
		return err
	}
	if err := s.tcpEdge("tcpdirect.example.com", ports[0], "tcpdirect"); err != nil {
		return err
	}
	if err := s.tcpEdge("tcpagent.example.com", ports[1], "tcpagent"); err != nil {
		return err
	}
	token, err := s.create("/credentials", `{"acl":["bind:app=direct","bind:app=agent","bind:app=tcpdirect","bind:app=tcpagent"]}`, "token")
	if err != nil {
		return err
	}
	if _, err := s.registerTunnel(bin, token, "direct", "http://"+upAddr); err != nil {
		return err
	}
	if _, err := s.registerTunnel(bin, token, "tcpdirect", "tcp://"+sinkAddr); err != nil {
		return err
	}
	httpAgent, err := startAgent(dir, "agent-http", bin, s, certFile, token, upP, "agent", 1)
	if err != nil {
		return err
	}
	ps.add(httpAgent)
	tcpAgent, err := startAgent(dir, "agent-tcp", bin, s, certFile, token, sinkP, "tcpagent", o.connections)
	if err != nil {
		return err
	}
	ps.add(tcpAgent)
	for _, h := range []string{"direct.example.com:443", "agent.example.com:443"} {
		if err := awaitHTTP(s.proxyHTTP, h); err != nil {
			return err
		}
	}
	tcpDirect, tcpThrough := "127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1])
	for _, a := range []string{tcpDirect, tcpThrough} {
		if err := awaitTCP(a); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "serve, upstream, sink and two agents ready in %v\n", time.Since(t0).Round(time.Millisecond))

	if want["http"] {
		fmt.Printf("## HTTP: through an agent's tunnel vs the proxy dialing the upstream\n\n")
		ok, err := measureHTTP(s, up, []httpCase{{"direct", "direct.example.com:443", nil}, {"agent", "agent.example.com:443", httpAgent}},
			o.rounds, o.duration, o.conns, o.threads)
		if err != nil {
			return err
		}
		met["HTTP through the agent (req/s >= 0.6x, p99 <= 2x)"] = ok
	}
	if want["tcp"] {
		fmt.Printf("\n## TCP: through an agent's tunnel vs the proxy's direct relay\n\n")
		ok, through, err := measureTCP(s, []tcpCase{{"direct", tcpDirect, nil}, {"agent", tcpThrough, tcpAgent}}, o.rounds, o.bytes, o.streams, o.connections)
		if err != nil {
			return err
		}
		met["TCP through the agent (MiB/s >= 0.5x)"] = ok
		floor, err := measureFloor(self, o.rounds, o.bytes, certFile, keyFile)
		if err != nil {
			return err
		}
		printAgainstFloor(through, floor)
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// median returns the median of f over rs.
func median[T any](rs []T, f func(T) float64) float64 {
	v := make([]float64, 0, len(rs))
	for _, r := range rs {
		v = append(v, f(r))
	}
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
