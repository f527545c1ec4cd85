package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane/internal/loadtest/loadkit"
)

// renewEvery is how often an edge node renews its lease at the default
// -node-lease (60 s, renewed every third of it): one store update per
// node, whatever it holds.
const renewEvery = 20 * time.Second

// hopTarget is the least the hop may keep, B/A, of the rate through the
// node that holds the agent.
const hopTarget = 0.7

// measureNodes runs the two-node part: node A (edgeplane serve -proxy)
// holds the agents' sessions; node B (edgeplane proxy on the same SQLite
// file) reaches them over the hop. It compares HTTP and TCP through B
// with the same through A, then counts both nodes' store writes while
// o.nodeTunnels idle labeled tunnels, half on each node, are held. It
// records each target's verdict in met.
func measureNodes(dir, bin, self, certFile, keyFile string, o options, met map[string]bool) error {
	var ps procs
	defer ps.stopAll()
	t0 := time.Now()
	up, _, upPort, err := startServer(dir, "nodes-upstream", self, "upstream", &ps)
	if err != nil {
		return err
	}
	_, _, sinkPort, err := startServer(dir, "nodes-sink", self, "sink", &ps)
	if err != nil {
		return err
	}
	// One TCP edge, on the same port of two loopback addresses: A's and
	// B's listeners.
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	tcpPorts := fmt.Sprintf("%d-%d", ports[0], ports[0])
	a, err := startServe(dir, "node-a", bin, certFile, keyFile, nodeOptions{tcpPorts: tcpPorts, tcpHost: "127.0.0.1", hop: true})
	if err != nil {
		return err
	}
	// Both nodes are killed at the end: the store is thrown away, and a
	// graceful shutdown would close thousands of sessions' records.
	a.hard = true
	ps.add(a.proc)
	if err := a.httpsEdge("agent.example.com", "agent"); err != nil {
		return err
	}
	if err := a.tcpEdge("tcpagent.example.com", ports[0], "tcpagent"); err != nil {
		return err
	}
	token, err := a.create("/credentials", `{"acl":["bind:app=agent","bind:app=tcpagent","bind:app=idle"]}`, "token")
	if err != nil {
		return err
	}
	b, err := startProxy(dir, "node-b", bin, a.store, certFile, keyFile, nodeOptions{tcpPorts: tcpPorts, tcpHost: "127.0.0.2", hop: true})
	if err != nil {
		return err
	}
	b.hard = true
	ps.add(b.proc)
	httpAgent, err := startAgent(dir, "nodes-agent-http", bin, a, certFile, token, upPort, "agent", 1)
	if err != nil {
		return err
	}
	ps.add(httpAgent)
	tcpAgent, err := startAgent(dir, "nodes-agent-tcp", bin, a, certFile, token, sinkPort, "tcpagent", 1)
	if err != nil {
		return err
	}
	ps.add(tcpAgent)
	const host = "agent.example.com:443"
	for _, n := range []*serveProc{a, b} {
		if err := awaitHTTP(n.proxyHTTP, host); err != nil {
			return fmt.Errorf("%s: %w", n.name, err)
		}
	}
	tcpA, tcpB := "127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.2:"+strconv.Itoa(ports[0])
	for _, addr := range []string{tcpA, tcpB} {
		if err := awaitTCP(addr); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "nodes A and B, upstream, sink and two agents ready in %v\n", time.Since(t0).Round(time.Millisecond))

	fmt.Printf("node A: edgeplane serve -proxy, %s; node B: edgeplane proxy on the same SQLite file, %s. "+
		"The agents' sessions are on A; B reaches them over the hop (mutual TLS, one muxado connection to A).\n", a.node, b.node)

	fmt.Printf("\n### HTTP: through B (the hop) vs through A\n\n")
	ok, err := measureNodesHTTP(a, b, up, httpAgent, host, o.rounds, o.duration, o.conns, o.threads)
	if err != nil {
		return err
	}
	met[fmt.Sprintf("two nodes: HTTP through the hop (req/s B/A >= %.1fx)", hopTarget)] = ok

	fmt.Printf("\n### TCP: through B (the hop) vs through A\n\n")
	ok, err = measureNodesTCP(a, b, tcpAgent, []nodeCase{{"A", tcpA, a}, {"B (hop)", tcpB, b}}, o.rounds, o.bytes)
	if err != nil {
		return err
	}
	met[fmt.Sprintf("two nodes: TCP through the hop (MiB/s B/A >= %.1fx)", hopTarget)] = ok

	fmt.Printf("\n### Store writes with idle tunnels on two nodes\n\n")
	ok, err = measureNodeWrites(dir, self, certFile, token, a, b, o, &ps)
	if err != nil {
		return err
	}
	met["two nodes: idle tunnels (store writes: the leases' renewals alone; gauges; no failures)"] = ok
	return nil
}

// nodeCase is one case of the two-node comparison: the node the client
// connects to, at addr.
type nodeCase struct {
	name, addr string
	node       *serveProc
}

// nodeCPU is the CPU time of the processes of the two-node part, at one
// moment or over a run.
type nodeCPU struct{ a, b, agent, up time.Duration }

func readNodeCPU(a, b *serveProc, agent, up *proc) nodeCPU {
	c := nodeCPU{a: loadkit.CPUTime(a.pid()), b: loadkit.CPUTime(b.pid()), agent: loadkit.CPUTime(agent.pid())}
	if up != nil {
		c.up = loadkit.CPUTime(up.pid())
	}
	return c
}

func (c nodeCPU) minus(d nodeCPU) nodeCPU {
	return nodeCPU{c.a - d.a, c.b - d.b, c.agent - d.agent, c.up - d.up}
}

// hopStreams returns the streams n forwarded over the hop so far.
func hopStreams(n *serveProc) (float64, error) {
	return n.metricSum("edgeplane_hop_streams_total", `direction="out"`)
}

// measureNodesHTTP runs wrk with the Host header host against A's and
// B's plain HTTP listeners: warm-up, then rounds of both cases (each
// round starts with the other case), one row each, then the medians and
// the ratios B/A. It reports whether the target was met.
func measureNodesHTTP(a, b *serveProc, up, agent *proc, host string, rounds int, d time.Duration, conns, threads int) (bool, error) {
	cases := []nodeCase{{"A", a.proxyHTTP, a}, {"B (hop)", b.proxyHTTP, b}}
	for _, c := range cases {
		if _, err := runWrk(c.addr, host, time.Second, conns, threads); err != nil {
			return false, err
		}
	}
	type result struct {
		httpResult
		cpu nodeCPU
	}
	fmt.Printf("wrk -t%d -c%d -d%v against each node's plain HTTP listener (Host: %s), %d rounds, interleaved\n\n", threads, conns, d, host, rounds)
	fmt.Println("| round | case | req/s | p50 | p99 | node A CPU µs/req | node B CPU µs/req | agent CPU µs/req | upstream CPU µs/req | non-2xx |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	results := map[string][]result{}
	var hopped, throughB float64
	for round := 1; round <= rounds; round++ {
		for k := range cases {
			c := cases[(k+round-1)%len(cases)]
			cpu0 := readNodeCPU(a, b, agent, up)
			hop0, err := hopStreams(b)
			if err != nil {
				return false, err
			}
			r, err := runWrk(c.addr, host, d, conns, threads)
			if err != nil {
				return false, err
			}
			cpu := readNodeCPU(a, b, agent, up).minus(cpu0)
			hop1, err := hopStreams(b)
			if err != nil {
				return false, err
			}
			if c.node == b {
				hopped, throughB = hopped+hop1-hop0, throughB+r.requests
			}
			results[c.name] = append(results[c.name], result{r, cpu})
			fmt.Printf("| %d | %s | %.0f | %v | %v | %.1f | %.1f | %.1f | %.1f | %d%s |\n", round, c.name, r.rps, r.p50, r.p99,
				r.perRequest(cpu.a), r.perRequest(cpu.b), r.perRequest(cpu.agent), r.perRequest(cpu.up),
				r.non2xx, strings.TrimPrefix(" "+r.errors, " "))
			if r.non2xx > 0 {
				return false, fmt.Errorf("%s answered non-2xx: %d; %s's log ends: %s", c.name, r.non2xx, c.node.name, c.node.tail())
			}
		}
	}
	fmt.Println()
	fmt.Println("| case | median req/s | median p50 | median p99 | median node A CPU µs/req | median node B CPU µs/req | median agent CPU µs/req |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, c := range cases {
		rs := results[c.name]
		fmt.Printf("| %s | %.0f | %v | %v | %.1f | %.1f | %.1f |\n", c.name, median(rs, func(r result) float64 { return r.rps }),
			time.Duration(median(rs, func(r result) float64 { return float64(r.p50) })).Round(time.Microsecond),
			time.Duration(median(rs, func(r result) float64 { return float64(r.p99) })).Round(time.Microsecond),
			median(rs, func(r result) float64 { return r.perRequest(r.cpu.a) }),
			median(rs, func(r result) float64 { return r.perRequest(r.cpu.b) }),
			median(rs, func(r result) float64 { return r.perRequest(r.cpu.agent) }))
	}
	ratio := func(f func(result) float64) float64 {
		return roundRatio(results[cases[0].name], results[cases[1].name], f)
	}
	rps := ratio(func(r result) float64 { return r.rps })
	p99 := ratio(func(r result) float64 { return float64(r.p99) })
	fmt.Printf("\nreq/s B/A = %.3f (target >= %.1f): %s\n", rps, hopTarget, verdict(rps >= hopTarget))
	fmt.Printf("p99 B/A = %.2fx (no target)\n", p99)
	fmt.Printf("B forwarded %.0f streams over the hop for its %.0f requests (wrk keeps its %d connections open)\n", hopped, throughB, conns)
	return rps >= hopTarget, nil
}

// measureNodesTCP moves n bytes through the TCP edge at A's address and
// at B's, each direction: warm-up, then rounds (each round starts with
// the other case), one row each, then the medians and the ratios B/A.
// It reports whether the targets were met.
func measureNodesTCP(a, b *serveProc, agent *proc, cases []nodeCase, rounds int, n int64) (bool, error) {
	for _, c := range cases {
		if err := warmUp(c.name, c.addr, n); err != nil {
			return false, err
		}
	}
	type result struct {
		took time.Duration
		cpu  nodeCPU
	}
	mibps := func(r result) float64 { return float64(n) / (1 << 20) / r.took.Seconds() }
	fmt.Printf("%d MiB through the TCP edge (the agent's labeled tunnel to the sink) on one connection, each direction, "+
		"at A's listener (%s) and B's (%s), %d rounds, interleaved\n\n", n>>20, cases[0].addr, cases[1].addr, rounds)
	fmt.Println("| round | case | direction | seconds | MiB/s | node A CPU s | node B CPU s | agent CPU s |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	results := map[string][]result{}
	for round := 1; round <= rounds; round++ {
		for _, d := range directions {
			for k := range cases {
				c := cases[(k+round-1)%len(cases)]
				cpu0 := readNodeCPU(a, b, agent, nil)
				took, err := transfer(c.addr, d.upload, n)
				if err != nil {
					return false, fmt.Errorf("%s %s: %w", c.name, d.name, err)
				}
				r := result{took, readNodeCPU(a, b, agent, nil).minus(cpu0)}
				results[c.name+" "+d.name] = append(results[c.name+" "+d.name], r)
				fmt.Printf("| %d | %s | %s | %.3f | %.0f | %.2f | %.2f | %.2f |\n", round, c.name, d.name, took.Seconds(), mibps(r),
					r.cpu.a.Seconds(), r.cpu.b.Seconds(), r.cpu.agent.Seconds())
			}
		}
	}
	fmt.Println()
	fmt.Println("| case | direction | median MiB/s | median node A CPU s | median node B CPU s | median agent CPU s |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, c := range cases {
		for _, d := range directions {
			rs := results[c.name+" "+d.name]
			fmt.Printf("| %s | %s | %.0f | %.2f | %.2f | %.2f |\n", c.name, d.name, median(rs, mibps),
				median(rs, func(r result) float64 { return r.cpu.a.Seconds() }), median(rs, func(r result) float64 { return r.cpu.b.Seconds() }),
				median(rs, func(r result) float64 { return r.cpu.agent.Seconds() }))
		}
	}
	fmt.Println()
	ok := true
	for _, d := range directions {
		v := make([]float64, rounds)
		for i := range v {
			v[i] = mibps(results[cases[1].name+" "+d.name][i]) / mibps(results[cases[0].name+" "+d.name][i])
		}
		r := median(v, func(x float64) float64 { return x })
		fmt.Printf("%s MiB/s B/A = %.3f (target >= %.1f): %s\n", d.name, r, hopTarget, verdict(r >= hopTarget))
		ok = ok && r >= hopTarget
	}
	return ok, nil
}

// nodeWrites are the store writes of both nodes during one hold.
type nodeWrites struct {
	updates [2]int64 // A's, B's
	others  [2]int64 // create, replace, delete
}

func (w nodeWrites) total() int64 { return w.updates[0] + w.updates[1] + w.others[0] + w.others[1] }

// storeWrites reads n's store writes so far (an operation not done yet
// has no sample).
func storeWrites(n *serveProc) (updates, others int64, err error) {
	for _, op := range []string{"update", "create", "replace", "delete"} {
		v, err := n.metricSum("edgeplane_store_operation_duration_seconds_count", `op="`+op+`"`)
		if err != nil {
			return 0, 0, err
		}
		if op == "update" {
			updates = int64(v)
		} else {
			others += int64(v)
		}
	}
	return updates, others, nil
}

// holdWrites waits d and returns the store writes A and B made meanwhile.
func holdWrites(a, b *serveProc, d time.Duration) (nodeWrites, error) {
	var w nodeWrites
	var u0, o0 [2]int64
	for i, n := range []*serveProc{a, b} {
		var err error
		if u0[i], o0[i], err = storeWrites(n); err != nil {
			return w, err
		}
	}
	time.Sleep(d)
	for i, n := range []*serveProc{a, b} {
		u, o, err := storeWrites(n)
		if err != nil {
			return w, err
		}
		w.updates[i], w.others[i] = u-u0[i], o-o0[i]
	}
	return w, nil
}

// disconnects returns the sessions failures the tools of both nodes saw
// since they connected.
func disconnects(tools [2]sessionTools) (int64, error) {
	var n int64
	for _, ts := range tools {
		_, d, err := ts.stats()
		if err != nil {
			return 0, err
		}
		n += d
	}
	return n, nil
}

// measureNodeWrites counts the store writes of A and B during a hold
// with no idle tunnels, then during one with o.nodeTunnels idle agent
// sessions, each with one labeled tunnel (app=idle), half on each node,
// opened from o.sessions.tools tool processes (half for each node). It
// reports whether the writes stayed those of the two nodes' leases.
func measureNodeWrites(dir, self, certFile, token string, a, b *serveProc, o options, ps *procs) (bool, error) {
	hold := o.sessions.hold
	k := o.nodeTunnels
	perNode := [2]int{k - k/2, k / 2}
	toolsPerNode := max(1, o.sessions.tools/2)
	fmt.Printf("store writes of both nodes during a hold of %v (edgeplane_store_operation_duration_seconds_count on each node's /metrics: "+
		"update, and create, replace and delete), with no idle tunnel, then with %d idle agent sessions each with one labeled tunnel "+
		"(golang.ngrok.com/ngrok, app=idle), %d on A and %d on B, from %d tool processes per node; "+
		"besides them A holds the two agents' sessions and tunnels\n\n", hold, k, perNode[0], perNode[1], toolsPerNode)

	base, err := holdWrites(a, b, hold)
	if err != nil {
		return false, err
	}

	start, cpuA0, cpuB0 := time.Now(), loadkit.CPUTime(a.pid()), loadkit.CPUTime(b.pid())
	var tools [2]sessionTools
	for i, n := range []*serveProc{a, b} {
		tools[i], _, err = startSessionTools(dir, n.name+"-tunnels", self, n.agents, certFile, token, "app=idle", perNode[i], toolsPerNode, o.sessions.parallel, ps)
		if err != nil {
			return false, err
		}
	}
	connected := 0
	for _, ts := range tools {
		c, err := ts.awaitConnected()
		if err != nil {
			return false, err
		}
		connected += c
	}
	took := time.Since(start)
	cpuA, cpuB := loadkit.CPUTime(a.pid())-cpuA0, loadkit.CPUTime(b.pid())-cpuB0
	var toolsCPU time.Duration
	for _, ts := range tools {
		for _, p := range ts {
			toolsCPU += loadkit.CPUTime(p.pid())
		}
	}
	fmt.Printf("opened %d of %d sessions with their tunnels in %v (%.0f per second); CPU meanwhile: node A %.1f s, node B %.1f s, the tools %.1f s "+
		"(%.0f µs per session of A, %.0f per session of B, %.0f per session)\n", connected, k, took.Round(100*time.Millisecond), float64(connected)/took.Seconds(),
		cpuA.Seconds(), cpuB.Seconds(), toolsCPU.Seconds(), µs(cpuA)/float64(perNode[0]), µs(cpuB)/float64(perNode[1]),
		µs(toolsCPU)/float64(max(connected, 1)))
	time.Sleep(2 * time.Second) // let the binds' last writes and the feed settle
	disc0, err := disconnects(tools)
	if err != nil {
		return false, err
	}

	loaded, err := holdWrites(a, b, hold)
	if err != nil {
		return false, err
	}

	var gauges [2][2]float64 // per node: sessions, labeled tunnels
	for i, n := range []*serveProc{a, b} {
		if gauges[i][0], err = n.metric("edgeplane_tunnel_sessions"); err != nil {
			return false, err
		}
		if gauges[i][1], err = n.metric(`edgeplane_tunnel_tunnels{kind="labeled"}`); err != nil {
			return false, err
		}
	}
	disc1, err := disconnects(tools)
	if err != nil {
		return false, err
	}
	failed := disc1 - disc0

	fmt.Println()
	fmt.Println("| hold | idle tunnels (A + B) | node A updates | node B updates | node A creates, replaces, deletes | node B creates, replaces, deletes | writes | writes per minute |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range []struct {
		tunnels string
		w       nodeWrites
	}{{"0", base}, {fmt.Sprintf("%d + %d", perNode[0], perNode[1]), loaded}} {
		fmt.Printf("| %v | %s | %d | %d | %d | %d | %d | %.1f |\n", hold, r.tunnels, r.w.updates[0], r.w.updates[1], r.w.others[0], r.w.others[1],
			r.w.total(), float64(r.w.total())/hold.Minutes())
	}
	fmt.Println()
	// The extra sessions and tunnels are the two agents', on A.
	wantGauges := [2][2]int{{perNode[0] + 2, perNode[0] + 2}, {perNode[1], perNode[1]}}
	gaugesOK := true
	for i, n := range []string{"A", "B"} {
		ok := int(gauges[i][0]) == wantGauges[i][0] && int(gauges[i][1]) == wantGauges[i][1]
		gaugesOK = gaugesOK && ok
		fmt.Printf("node %s after the hold: edgeplane_tunnel_sessions %.0f, edgeplane_tunnel_tunnels{kind=\"labeled\"} %.0f (want %d and %d): %s\n",
			n, gauges[i][0], gauges[i][1], wantGauges[i][0], wantGauges[i][1], verdict(ok))
	}
	fmt.Printf("sessions the SDK saw fail during the hold: %d: %s\n", failed, verdict(failed == 0))
	// Each node renews its lease every renewEvery: a hold sees at most
	// hold/renewEvery+1 renewals of each, wherever it starts.
	renewals := 2 * (int64(hold/renewEvery) + 1)
	bound := max(base.total(), renewals)
	writesOK := loaded.total() <= bound
	fmt.Printf("writes with %d idle tunnels = %d (%.1f per minute), with none = %d (%.1f per minute); "+
		"target: independent of the tunnels, at most the larger of the baseline and the two leases' renewals "+
		"(one per node every %v: at most %d in %v), %d: %s\n",
		k, loaded.total(), float64(loaded.total())/hold.Minutes(), base.total(), float64(base.total())/hold.Minutes(),
		renewEvery, renewals, hold, bound, verdict(writesOK))
	return writesOK && gaugesOK && connected == k && failed == 0, nil
}
