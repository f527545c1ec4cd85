package main

import (
	"fmt"
	"github.com/edgeplane/edgeplane/internal/loadtest/loadkit"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// upstreamBody is what the upstream answers.
const upstreamBody = "hello, world\n"

// serveUpstream serves the upstream, a net/http server answering
// upstreamBody to every request.
func serveUpstream() http.Handler {
	body := []byte(upstreamBody)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	})
}

// httpResult is one wrk measurement of one case.
type httpResult struct {
	rps      float64
	p50, p99 time.Duration
	non2xx   int64
	errors   string
	requests float64
	// CPU time (user+system) the processes spent during the run: the
	// serve process, the agent (0 in the direct case) and the upstream.
	serveCPU, agentCPU, upCPU time.Duration
	// Write system calls of the serve process and of the agent.
	serveWrites, agentWrites int64
}

// perRequest is d per request of r, in µs.
func (r httpResult) perRequest(d time.Duration) float64 {
	return µs(time.Duration(r.per(float64(d))))
}

// per is v per request of r.
func (r httpResult) per(v float64) float64 {
	if r.requests == 0 {
		return 0
	}
	return v / r.requests
}

// µs returns d in microseconds.
func µs(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// runWrk runs wrk against the proxy's plain listener addr with the Host
// header host.
func runWrk(addr, host string, d time.Duration, conns, threads int) (httpResult, error) {
	out, err := exec.Command("wrk", "-t"+strconv.Itoa(threads), "-c"+strconv.Itoa(conns), "-d"+d.String(),
		"--latency", "-H", "Host: "+host, "http://"+addr+"/").CombinedOutput()
	if err != nil {
		return httpResult{}, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	var r httpResult
	m := loadkit.WrkRPS.FindSubmatch(out)
	if m == nil {
		return httpResult{}, fmt.Errorf("wrk printed no req/s:\n%s", out)
	}
	r.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	if m := loadkit.WrkTotal.FindSubmatch(out); m != nil {
		r.requests, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	if m := loadkit.WrkP50.FindSubmatch(out); m != nil {
		r.p50 = loadkit.WrkDuration(string(m[1]))
	}
	if m := loadkit.WrkP99.FindSubmatch(out); m != nil {
		r.p99 = loadkit.WrkDuration(string(m[1]))
	}
	if m := loadkit.WrkNon2xx.FindSubmatch(out); m != nil {
		r.non2xx, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	r.errors = string(loadkit.WrkErrors.Find(out))
	return r, nil
}

// awaitHTTP waits (at most 15 s: the edges and tunnels reach the proxy
// through the store's feed) until the proxy at addr answers a request
// for host with the upstream's body.
func awaitHTTP(addr, host string) error {
	c := &http.Client{Timeout: 5 * time.Second}
	var last string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		req.Host = host
		resp, err := c.Do(req)
		if err != nil {
			last = err.Error()
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK && string(b) == upstreamBody {
			return nil
		}
		last = fmt.Sprintf("%d %q", resp.StatusCode, b)
	}
	return fmt.Errorf("%s through the proxy never answered the upstream's body: %s", host, last)
}

// httpCase is one case of the HTTP comparison: the Host wrk sends and
// the agent process that carries it (nil: the proxy dials the upstream).
type httpCase struct {
	name, host string
	agent      *proc
}

// measureHTTP runs the HTTP comparison: warm-up, then rounds of both
// cases (each round starts with the other case), one row each, then the
// medians and the ratios agent/direct. It reports whether the targets
// were met.
func measureHTTP(s *serveProc, up *proc, cases []httpCase, rounds int, d time.Duration, conns, threads int) (bool, error) {
	for _, c := range cases {
		if _, err := runWrk(s.proxyHTTP, c.host, time.Second, conns, threads); err != nil {
			return false, err
		}
	}
	fmt.Printf("wrk -t%d -c%d -d%v against the proxy's plain HTTP listener (Host: HOST:443), %d rounds, interleaved\n\n", threads, conns, d, rounds)
	fmt.Println("| round | case | req/s | p50 | p99 | serve CPU µs/req | agent CPU µs/req | upstream CPU µs/req | serve writes/req | agent writes/req | non-2xx |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	results := map[string][]httpResult{}
	for round := 1; round <= rounds; round++ {
		for k := range cases {
			c := cases[(k+round-1)%len(cases)]
			var agent0 time.Duration
			var agentW0 int64
			if c.agent != nil {
				agent0, agentW0 = loadkit.CPUTime(c.agent.pid()), writeCalls(c.agent.pid())
			}
			serve0, up0, serveW0 := loadkit.CPUTime(s.pid()), loadkit.CPUTime(up.pid()), writeCalls(s.pid())
			r, err := runWrk(s.proxyHTTP, c.host, d, conns, threads)
			if err != nil {
				return false, err
			}
			r.serveCPU, r.upCPU, r.serveWrites = loadkit.CPUTime(s.pid())-serve0, loadkit.CPUTime(up.pid())-up0, writeCalls(s.pid())-serveW0
			if c.agent != nil {
				r.agentCPU, r.agentWrites = loadkit.CPUTime(c.agent.pid())-agent0, writeCalls(c.agent.pid())-agentW0
			}
			results[c.name] = append(results[c.name], r)
			fmt.Printf("| %d | %s | %.0f | %v | %v | %.1f | %.1f | %.1f | %.1f | %.1f | %d%s |\n", round, c.name, r.rps, r.p50, r.p99,
				r.perRequest(r.serveCPU), r.perRequest(r.agentCPU), r.perRequest(r.upCPU), r.per(float64(r.serveWrites)), r.per(float64(r.agentWrites)),
				r.non2xx, strings.TrimPrefix(" "+r.errors, " "))
			if r.non2xx > 0 {
				return false, fmt.Errorf("%s answered non-2xx: %d", c.name, r.non2xx)
			}
		}
	}
	fmt.Println()
	fmt.Println("| case | median req/s | median p50 | median p99 | median serve CPU µs/req | median agent CPU µs/req |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, c := range cases {
		rs := results[c.name]
		fmt.Printf("| %s | %.0f | %v | %v | %.1f | %.1f |\n", c.name, median(rs, func(r httpResult) float64 { return r.rps }),
			time.Duration(median(rs, func(r httpResult) float64 { return float64(r.p50) })).Round(time.Microsecond),
			time.Duration(median(rs, func(r httpResult) float64 { return float64(r.p99) })).Round(time.Microsecond),
			median(rs, func(r httpResult) float64 { return r.perRequest(r.serveCPU) }),
			median(rs, func(r httpResult) float64 { return r.perRequest(r.agentCPU) }))
	}
	ratio := func(f func(httpResult) float64) float64 {
		return roundRatio(results[cases[0].name], results[cases[1].name], f)
	}
	rps := ratio(func(r httpResult) float64 { return r.rps })
	p99 := ratio(func(r httpResult) float64 { return float64(r.p99) })
	fmt.Printf("\nreq/s agent/direct = %.3f (target >= 0.6): %s\n", rps, verdict(rps >= 0.6))
	fmt.Printf("p99 agent/direct = %.2fx (target <= 2x): %s\n", p99, verdict(p99 <= 2))
	fmt.Printf("serve CPU per request agent/direct = %.2fx\n", ratio(func(r httpResult) float64 { return r.perRequest(r.serveCPU) }))
	return rps >= 0.6 && p99 <= 2, nil
}
