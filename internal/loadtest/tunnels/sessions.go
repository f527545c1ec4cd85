package main

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/edgeplane/edgeplane/internal/loadtest/loadkit"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.ngrok.com/ngrok"
	"golang.ngrok.com/ngrok/config"
)

// runSessionsTool is the load tool's mode (-serve sessions): it opens n
// agent sessions with the SDK (parallel at a time), sessions only, no
// tunnel, unless label (KEY=VALUE) is given: then each session starts
// one labeled tunnel with that label, which no one accepts on. It
// prints "connected OK FAILED" (a session whose tunnel failed to start
// counts as failed), then answers commands on its standard input until
// it ends (then it exits, and its connections with it):
//
//   - "stats": "stats BEATS DISCONNECTS", the heartbeats the SDK's own
//     heartbeat answered and the sessions' failures since connecting;
//   - "beat K": K sessions spread over the n call Heartbeat at once;
//     "beat OK FAILED NS,NS,..." with each answered one's latency.
func runSessionsTool(server, caFile, token, label string, n, parallel int) error {
	var tunnelCfg config.Tunnel
	if label != "" {
		k, v, ok := strings.Cut(label, "=")
		if !ok {
			return fmt.Errorf("-label %q: want KEY=VALUE", label)
		}
		tunnelCfg = config.LabeledTunnel(config.WithLabel(k, v))
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return fmt.Errorf("%s: no certificate", caFile)
	}
	var beats, disconnects atomic.Int64
	opts := []ngrok.ConnectOption{
		ngrok.WithServer(server), ngrok.WithCA(roots), ngrok.WithAuthtoken(token),
		ngrok.WithHeartbeatHandler(func(context.Context, ngrok.Session, time.Duration) { beats.Add(1) }),
		ngrok.WithDisconnectHandler(func(_ context.Context, _ ngrok.Session, err error) {
			if err != nil {
				disconnects.Add(1)
			}
		}),
	}
	sessions := make([]ngrok.Session, n)
	var (
		wg       sync.WaitGroup
		sem      = make(chan struct{}, parallel)
		failed   atomic.Int64
		firstErr atomic.Pointer[error]
	)
	for i := range sessions {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			// The session lives on its context: it ends only if the
			// connection does not succeed within a minute (the SDK
			// retries until then).
			ctx, cancel := context.WithCancel(context.Background())
			giveUp := time.AfterFunc(time.Minute, cancel)
			sess, err := ngrok.Connect(ctx, opts...)
			if !giveUp.Stop() || err != nil {
				failed.Add(1)
				if err == nil {
					err = errors.New("no session within a minute")
				}
				firstErr.CompareAndSwap(nil, &err)
				return
			}
			if tunnelCfg != nil {
				if err := listenWithin(sess, tunnelCfg, time.Minute); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					_ = sess.Close()
					return
				}
			}
			sessions[i] = sess
		})
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		fmt.Fprintf(os.Stderr, "first failure: %v\n", *e)
	}
	fmt.Printf("connected %d %d\n", int64(n)-failed.Load(), failed.Load())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		switch cmd {
		case "stats":
			fmt.Printf("stats %d %d\n", beats.Load(), disconnects.Load())
		case "beat":
			k, err := strconv.Atoi(arg)
			if err != nil || k < 1 {
				return fmt.Errorf("beat %q", arg)
			}
			lat := make([]time.Duration, k)
			var wg sync.WaitGroup
			for j := range k {
				sess := sessions[j*n/k]
				wg.Go(func() {
					lat[j] = -1
					if sess == nil {
						return
					}
					// The SDK's session has Heartbeat (an on-demand beat
					// on its heartbeat stream), outside its interface.
					hb, ok := sess.(interface{ Heartbeat() (time.Duration, error) })
					if !ok {
						return
					}
					if d, err := hb.Heartbeat(); err == nil {
						lat[j] = d
					}
				})
			}
			wg.Wait()
			var ok []string
			for _, d := range lat {
				if d >= 0 {
					ok = append(ok, strconv.FormatInt(int64(d), 10))
				}
			}
			fmt.Printf("beat %d %d %s\n", len(ok), k-len(ok), strings.Join(ok, ","))
		}
	}
	return nil
}

// listenWithin starts cfg's tunnel on sess, failing when the server has
// not answered within d: the SDK's Listen does not heed its context, and
// waits for the server's answer (closing the session ends it). The
// tunnel stays open with its session; the SDK holds it.
func listenWithin(sess ngrok.Session, cfg config.Tunnel, d time.Duration) error {
	errc := make(chan error, 1)
	go func() {
		_, err := sess.Listen(context.Background(), cfg)
		errc <- err
	}()
	select {
	case err := <-errc:
		return err
	case <-time.After(d):
		return fmt.Errorf("no tunnel within %v", d)
	}
}

// memSample is the serve process's memory at one moment: VmRSS and the
// Go runtime's own figures from its /metrics.
type memSample struct {
	rss, heap, stacks int64 // KiB
	goroutines        int64
}

func sampleMem(s *serveProc) memSample {
	m := memSample{rss: rssKiB(s.pid())}
	if v, err := s.metric("go_memstats_heap_inuse_bytes"); err == nil {
		m.heap = int64(v) >> 10
	}
	if v, err := s.metric("go_memstats_stack_inuse_bytes"); err == nil {
		m.stacks = int64(v) >> 10
	}
	if v, err := s.metric("go_goroutines"); err == nil {
		m.goroutines = int64(v)
	}
	return m
}

// sessionsConfig is what the idle-sessions measurement is asked.
type sessionsConfig struct {
	n, tools, parallel int
	hold               time.Duration
	sample             int
}

// sessionTools are the sessions tool processes (-serve sessions) of one
// measurement.
type sessionTools []*proc

// startSessionTools starts k processes of this binary (-serve sessions),
// named name-0, name-1..., which open n sessions between them (spread
// evenly: per[i] is tool i's) on the tunnel server at server, parallel
// at a time each; each session starts one tunnel labeled label unless it
// is "". The processes are added to ps.
func startSessionTools(dir, name, self, server, certFile, token, label string, n, k, parallel int, ps *procs) (tools sessionTools, per []int, err error) {
	per = make([]int, k)
	for i := range per {
		per[i] = n / k
		if i < n%k {
			per[i]++
		}
	}
	for i := range k {
		args := []string{"-serve", "sessions", "-server", server, "-ca", certFile,
			"-authtoken", token, "-n", strconv.Itoa(per[i]), "-parallel", strconv.Itoa(parallel)}
		if label != "" {
			args = append(args, "-label", label)
		}
		p, err := startProc(dir, fmt.Sprintf("%s-%d", name, i), self, true, args)
		if err != nil {
			return nil, nil, err
		}
		tools = append(tools, ps.add(p))
	}
	return tools, per, nil
}

// awaitConnected waits until every tool has opened its sessions and
// returns how many did; it prints the tools where some failed.
func (ts sessionTools) awaitConnected() (int, error) {
	connected := 0
	for _, p := range ts {
		v, err := p.await("connected ", 10*time.Minute)
		if err != nil {
			return 0, err
		}
		f := strings.Fields(v)
		ok, _ := strconv.Atoi(f[0])
		if f[1] != "0" {
			fmt.Printf("%s: %s sessions failed to connect: %s\n", p.name, f[1], p.tail())
		}
		connected += ok
	}
	return connected, nil
}

// stats returns the heartbeats the tools' sessions saw answered and the
// failures they saw, since they connected.
func (ts sessionTools) stats() (beats, disconnects int64, err error) {
	for _, p := range ts {
		if err := p.send("stats"); err != nil {
			return 0, 0, err
		}
		v, err := p.await("stats ", 30*time.Second)
		if err != nil {
			return 0, 0, err
		}
		var b, d int64
		if _, err := fmt.Sscan(v, &b, &d); err != nil {
			return 0, 0, fmt.Errorf("%s: stats %q", p.name, v)
		}
		beats, disconnects = beats+b, disconnects+d
	}
	return beats, disconnects, nil
}

// measureSessions opens c.n idle agent sessions on a fresh serve process
// from c.tools tool processes, holds them for c.hold, and reports the
// serve process's memory per session, its sessions gauge and sampled
// heartbeats. It reports whether the targets were met.
func measureSessions(dir, bin, self, certFile, keyFile, cpuprofile string, c sessionsConfig) (bool, error) {
	var ps procs
	defer ps.stopAll()
	s, err := startServe(dir, "serve-sessions", bin, certFile, keyFile, nodeOptions{cpuprofile: cpuprofile})
	if err != nil {
		return false, err
	}
	// Its store is thrown away: killed at the end, it does not spend a
	// graceful shutdown closing every session's record.
	s.hard = true
	ps.add(s.proc)
	token, err := s.create("/credentials", `{}`, "token")
	if err != nil {
		return false, err
	}
	time.Sleep(2 * time.Second) // let the new process settle
	before := sampleMem(s)
	fmt.Printf("%d idle agent sessions (golang.ngrok.com/ngrok v1.12.1: sessions only, no tunnel; SDK heartbeat every 10s) on a fresh serve process, "+
		"from %d tool processes, %d connecting at a time each; held %v\n\n", c.n, c.tools, c.parallel, c.hold)
	start, cpu0 := time.Now(), loadkit.CPUTime(s.pid())
	tools, per, err := startSessionTools(dir, "sessions", self, s.agents, certFile, token, "", c.n, c.tools, c.parallel, &ps)
	if err != nil {
		return false, err
	}
	connected, err := tools.awaitConnected()
	if err != nil {
		return false, err
	}
	took := time.Since(start)
	connectCPU := loadkit.CPUTime(s.pid()) - cpu0
	atConnect := sampleMem(s)
	fmt.Printf("connected %d of %d in %v (%.0f sessions/s); serve CPU %.1f s, %.0f µs per session\n", connected, c.n,
		took.Round(100*time.Millisecond), float64(connected)/took.Seconds(), connectCPU.Seconds(), µs(connectCPU)/float64(max(connected, 1)))

	beats0, disc0, err := tools.stats()
	if err != nil {
		return false, err
	}
	cpu1, upd0 := loadkit.CPUTime(s.pid()), s.storeOp("update")
	time.Sleep(c.hold)
	holdCPU, upd := loadkit.CPUTime(s.pid())-cpu1, s.storeOp("update").minus(upd0)
	after := sampleMem(s)
	gauge, err := s.metric("edgeplane_tunnel_sessions")
	if err != nil {
		return false, err
	}
	beats1, disc1, err := tools.stats()
	if err != nil {
		return false, err
	}
	beats, disconnects := beats1-beats0, disc1-disc0
	// Sampled heartbeats, from every tool at once.
	var lats []time.Duration
	answered, unanswered := 0, 0
	for i, p := range tools {
		if err := p.send("beat " + strconv.Itoa(c.sample*per[i]/c.n)); err != nil {
			return false, err
		}
	}
	for _, p := range tools {
		v, err := p.await("beat ", time.Minute)
		if err != nil {
			return false, err
		}
		f := strings.Fields(v)
		ok, _ := strconv.Atoi(f[0])
		bad, _ := strconv.Atoi(f[1])
		answered, unanswered = answered+ok, unanswered+bad
		if len(f) > 2 {
			for ns := range strings.SplitSeq(f[2], ",") {
				d, _ := strconv.ParseInt(ns, 10, 64)
				lats = append(lats, time.Duration(d))
			}
		}
	}
	var toolRSS int64
	for _, p := range tools {
		toolRSS += rssKiB(p.pid())
	}

	fmt.Println()
	fmt.Println("| when | serve VmRSS KiB | Go heap in use KiB | goroutine stacks KiB | goroutines |")
	fmt.Println("|---|---|---|---|---|")
	for _, r := range []struct {
		when string
		m    memSample
	}{{"before", before}, {"all connected", atConnect}, {fmt.Sprintf("after %v idle", c.hold), after}} {
		fmt.Printf("| %s | %d | %d | %d | %d |\n", r.when, r.m.rss, r.m.heap, r.m.stacks, r.m.goroutines)
	}
	perSession := func(a, b int64) float64 { return float64(b-a) / float64(max(connected, 1)) }
	kib := perSession(before.rss, after.rss)
	fmt.Printf("\nserve VmRSS per idle session = %.1f KiB (target <= 64 KiB): %s\n", kib, verdict(kib <= 64))
	fmt.Printf("  of which Go heap in use %.1f KiB, goroutine stacks %.1f KiB; %.1f goroutines per session\n",
		perSession(before.heap, after.heap), perSession(before.stacks, after.stacks), perSession(before.goroutines, after.goroutines))
	fmt.Printf("edgeplane_tunnel_sessions = %.0f (want %d): %s\n", gauge, c.n, verdict(int(gauge) == c.n && connected == c.n))
	fmt.Printf("during the %v hold: serve CPU %.2f s (%.1f%% of one core: heartbeats, the node's lease);\n", c.hold, holdCPU.Seconds(), 100*holdCPU.Seconds()/c.hold.Seconds())
	renewals := int64(c.hold/(20*time.Second)) + 1 // the node's lease, every 20 s, whatever it holds
	writesOK := upd.count <= renewals
	fmt.Printf("  store updates %d (%.1f per minute, mean %.2f ms each; target: the node's lease alone, at most %d, whatever the %d sessions): %s\n",
		upd.count, float64(upd.count)/c.hold.Minutes(), 1000*upd.mean(), renewals, c.n, verdict(writesOK))
	fmt.Printf("  SDK heartbeats answered %d (about %d expected: one per session per 10s); sessions the SDK saw fail (and reopened): %d: %s\n",
		beats, int64(c.n)*int64(c.hold/(10*time.Second)), disconnects, verdict(disconnects == 0))
	slices.Sort(lats)
	q := func(p float64) time.Duration {
		if len(lats) == 0 {
			return 0
		}
		return lats[min(int(p*float64(len(lats))), len(lats)-1)].Round(time.Microsecond)
	}
	allBeat := unanswered == 0 && answered > 0
	fmt.Printf("sampled heartbeats (Session.Heartbeat, all at once): %d of %d answered: p50 %v, p99 %v, max %v: %s\n",
		answered, answered+unanswered, q(0.5), q(0.99), q(1), verdict(allBeat))
	fmt.Printf("the tool processes' VmRSS (the client side, for reference): %.1f KiB per session\n", float64(toolRSS)/float64(max(connected, 1)))
	return kib <= 64 && int(gauge) == c.n && connected == c.n && allBeat && disconnects == 0 && writesOK, nil
}
