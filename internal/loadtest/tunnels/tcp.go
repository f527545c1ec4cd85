package main

import (
	"encoding/binary"
	"fmt"
	"github.com/edgeplane/edgeplane/internal/loadtest/loadkit"
	"io"
	"net"
	"time"
)

// The sink's protocol: the client's first byte says what it wants.
const (
	// opUpload: the client sends bytes until it half-closes; the sink
	// reads them all, answers their count (8 bytes, big-endian) and
	// closes.
	opUpload = 'u'
	// opDownload: the client sends a count (8 bytes, big-endian); the
	// sink sends that many bytes and closes.
	opDownload = 'd'
)

// chunk is the size of the sink's and the client's writes.
const chunk = 64 << 10

// serveSink serves the sink's protocol on ln until ln is closed.
func serveSink(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			var op [1]byte
			if _, err := io.ReadFull(c, op[:]); err != nil {
				return
			}
			var n [8]byte
			switch op[0] {
			case opUpload:
				got, _ := io.CopyBuffer(io.Discard, c, make([]byte, chunk))
				binary.BigEndian.PutUint64(n[:], uint64(got))
				_, _ = c.Write(n[:])
			case opDownload:
				if _, err := io.ReadFull(c, n[:]); err != nil {
					return
				}
				buf := make([]byte, chunk)
				for left := int64(binary.BigEndian.Uint64(n[:])); left > 0; {
					k, err := c.Write(buf[:min(left, chunk)])
					if err != nil {
						return
					}
					left -= int64(k)
				}
			}
		}()
	}
}

// transfer moves n bytes through the TCP edge at addr to the sink
// (upload) or from it (download), checks that they all arrived, and
// returns how long that took: from the dial to the sink's count
// (upload) or the last byte (download).
func transfer(addr string, upload bool, n int64) (time.Duration, error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Minute))
	var hdr [9]byte
	if upload {
		hdr[0] = opUpload
		if _, err := c.Write(hdr[:1]); err != nil {
			return 0, err
		}
		buf := make([]byte, chunk)
		for left := n; left > 0; {
			k, err := c.Write(buf[:min(left, chunk)])
			if err != nil {
				return 0, fmt.Errorf("upload: %w", err)
			}
			left -= int64(k)
		}
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(c, hdr[1:]); err != nil {
			return 0, fmt.Errorf("upload: the sink's count: %w", err)
		}
		if got := int64(binary.BigEndian.Uint64(hdr[1:])); got != n {
			return 0, fmt.Errorf("upload: the sink read %d bytes, want %d", got, n)
		}
		return time.Since(start), nil
	}
	hdr[0] = opDownload
	binary.BigEndian.PutUint64(hdr[1:], uint64(n))
	if _, err := c.Write(hdr[:]); err != nil {
		return 0, err
	}
	got, err := io.CopyBuffer(io.Discard, c, make([]byte, chunk))
	if err != nil {
		return 0, fmt.Errorf("download: %w", err)
	}
	if got != n {
		return 0, fmt.Errorf("download: %d bytes arrived, want %d", got, n)
	}
	return time.Since(start), nil
}

// transferParallel moves n bytes through the TCP edge at addr over
// streams connections at once, each moving its share (n/streams, the
// first ones a byte more when n does not divide), and returns how long
// the slowest took: the aggregate rate is n over that.
func transferParallel(addr string, upload bool, n int64, streams int) (time.Duration, error) {
	if streams <= 1 {
		return transfer(addr, upload, n)
	}
	start := time.Now()
	errs := make(chan error, streams)
	for i := range streams {
		share := n / int64(streams)
		if int64(i) < n%int64(streams) {
			share++
		}
		go func() {
			_, err := transfer(addr, upload, share)
			errs <- err
		}()
	}
	var first error
	for range streams {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return time.Since(start), first
}

// awaitTCP waits (at most 15 s) until a small upload through the TCP
// edge at addr reaches the sink.
func awaitTCP(addr string) error {
	var err error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err = transfer(addr, true, 1000); err == nil {
			if _, err = transfer(addr, false, 1000); err == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("the TCP edge %s never reached the sink: %w", addr, err)
}

// tcpCase is one case of the TCP comparison: the TCP edge's address and
// the agent process that carries it (nil: the proxy dials the sink).
type tcpCase struct {
	name, addr string
	agent      *proc
}

// tcpResult is one transfer.
type tcpResult struct {
	took                     time.Duration
	serveCPU, agentCPU       time.Duration
	serveWrites, agentWrites int64 // write system calls
}

// mibps is the transfer's rate in MiB/s.
func (r tcpResult) mibps(n int64) float64 {
	return float64(n) / (1 << 20) / r.took.Seconds()
}

// measureTCP runs the TCP comparison: rounds of both cases in both
// directions (each round starts with the other case), one row each,
// then the medians and the ratios agent/direct. It reports whether the
// targets were met.
//
// streams is the number of parallel TCP connections each transfer
// spreads its n bytes over; connections is the agent's -connections
// (sessions), printed for the record.
// tunnelCPU is the median CPU per GB of the tunnel server and of the
// agent in one direction.
type tunnelCPU struct{ serve, agent float64 }

func measureTCP(s *serveProc, cases []tcpCase, rounds int, n int64, streams, connections int) (bool, map[string]tunnelCPU, error) {
	// Warm-up: buffers, the relay's pools, the agent's stream.
	for _, c := range cases {
		if err := warmUp(c.name, c.addr, n); err != nil {
			return false, nil, err
		}
	}
	fmt.Printf("%d MiB through a TCP edge over %d parallel connection(s), the agent with -connections %d, each direction (upload: client to sink, download: sink to client), %d rounds, interleaved\n\n",
		n>>20, streams, connections, rounds)
	fmt.Println("| round | case | direction | seconds | MiB/s | serve CPU s | agent CPU s | serve writes/MiB | agent writes/MiB |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	results := map[string][]tcpResult{}
	for round := 1; round <= rounds; round++ {
		for _, d := range directions {
			for k := range cases {
				c := cases[(k+round-1)%len(cases)]
				var agent0 time.Duration
				var agentW0 int64
				if c.agent != nil {
					agent0, agentW0 = loadkit.CPUTime(c.agent.pid()), writeCalls(c.agent.pid())
				}
				serve0, serveW0 := loadkit.CPUTime(s.pid()), writeCalls(s.pid())
				took, err := transferParallel(c.addr, d.upload, n, streams)
				if err != nil {
					return false, nil, fmt.Errorf("%s %s: %w", c.name, d.name, err)
				}
				r := tcpResult{took: took, serveCPU: loadkit.CPUTime(s.pid()) - serve0, serveWrites: writeCalls(s.pid()) - serveW0}
				if c.agent != nil {
					r.agentCPU, r.agentWrites = loadkit.CPUTime(c.agent.pid())-agent0, writeCalls(c.agent.pid())-agentW0
				}
				results[c.name+" "+d.name] = append(results[c.name+" "+d.name], r)
				mib := float64(n) / (1 << 20)
				fmt.Printf("| %d | %s | %s | %.3f | %.0f | %.2f | %.2f | %.1f | %.1f |\n", round, c.name, d.name, took.Seconds(), r.mibps(n),
					r.serveCPU.Seconds(), r.agentCPU.Seconds(), float64(r.serveWrites)/mib, float64(r.agentWrites)/mib)
			}
		}
	}
	fmt.Println()
	// CPU per GB (10^9 bytes moved): the measure of the per-byte
	// work of the tunnel server and of the agent, whatever -bytes is.
	gb := float64(n) / 1e9
	fmt.Println("| case | direction | median MiB/s | median serve CPU s | median agent CPU s | serve CPU s/GB | agent CPU s/GB |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, c := range cases {
		for _, d := range directions {
			rs := results[c.name+" "+d.name]
			serve := median(rs, func(r tcpResult) float64 { return r.serveCPU.Seconds() })
			agent := median(rs, func(r tcpResult) float64 { return r.agentCPU.Seconds() })
			fmt.Printf("| %s | %s | %.0f | %.2f | %.2f | %.2f | %.2f |\n", c.name, d.name, median(rs, func(r tcpResult) float64 { return r.mibps(n) }),
				serve, agent, serve/gb, agent/gb)
		}
	}
	fmt.Println()
	ok := true
	for _, d := range directions {
		v := make([]float64, rounds)
		for i := range v {
			v[i] = results[cases[1].name+" "+d.name][i].mibps(n) / results[cases[0].name+" "+d.name][i].mibps(n)
		}
		r := median(v, func(x float64) float64 { return x })
		fmt.Printf("%s MiB/s agent/direct = %.3f (target >= 0.5): %s\n", d.name, r, verdict(r >= 0.5))
		ok = ok && r >= 0.5
	}
	through := map[string]tunnelCPU{}
	for _, d := range directions {
		rs := results[cases[1].name+" "+d.name]
		serve := median(rs, func(r tcpResult) float64 { return r.serveCPU.Seconds() }) / gb
		agent := median(rs, func(r tcpResult) float64 { return r.agentCPU.Seconds() }) / gb
		through[d.name] = tunnelCPU{serve, agent}
		fmt.Printf("%s through the agent: serve CPU %.2f s/GB, agent CPU %.2f s/GB (target <= 0.6 each, issue 46): %s\n", d.name, serve, agent,
			verdict(serve <= 0.6 && agent <= 0.6))
	}
	return ok, through, nil
}

// directions are the two ways of a TCP transfer.
var directions = []struct {
	name   string
	upload bool
}{{"upload", true}, {"download", false}}

// warmUp moves up to 16 MiB of n each way through addr, the case name's.
func warmUp(name, addr string, n int64) error {
	for _, d := range directions {
		if _, err := transfer(addr, d.upload, min(n, 16<<20)); err != nil {
			return fmt.Errorf("%s %s: %w", name, d.name, err)
		}
	}
	return nil
}

// roundRatio is the median over rounds of f(other[i]) / f(base[i]): per
// round, so that the machine's drift between rounds cancels out.
func roundRatio[R any](base, other []R, f func(R) float64) float64 {
	v := make([]float64, min(len(base), len(other)))
	for i := range v {
		v[i] = f(other[i]) / f(base[i])
	}
	return median(v, func(x float64) float64 { return x })
}
