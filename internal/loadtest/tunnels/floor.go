package main

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The floor (the TCP part's last table): what a tunnel hop cannot cost
// less than on this machine, whatever its framing. A tunnel server or
// an agent moves each byte between a plain TCP socket and a TLS
// connection; the least such a program can do is copy between the two,
// with crypto/tls and 256 KiB buffers, nothing else. This process
// (-serve floor) relays -bytes one way, plain to TLS (a tunnel
// server's upload, an agent's download) and TLS to plain (the
// reverse), between a source and a sink that are processes of their own
// (-serve floorsource, floorsink), and reads its own CPU time
// (getrusage) around each copy. Its s/GB beside the tunnel server's and
// the agent's says how much of theirs is the tunnel's own work.
//
// Each direction is relayed twice: bare (crypto/tls as it comes: a
// system call per 16 KiB record each way) and batched, the least a Go
// program can do with crypto/tls: the records of one TLS write gathered
// into one write to the socket (as muxframe.Conn and batchconn do), the
// TLS socket read 256 KiB at a time, and the records already read
// decrypted into one buffer before it is written on, so that each
// system call moves up to 256 KiB.

// floorBuffer is the relay's copy buffer.
const floorBuffer = 256 << 10

// floorResult is one relay's measure.
type floorResult struct {
	direction string // "plain to TLS" or "TLS to plain"
	bytes     int64
	elapsed   time.Duration
	cpu       time.Duration
}

// selfCPU returns the CPU time (user and system) of this process so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runFloor is -serve floor: it relays n bytes each way and prints one
// line per direction, "floor DIRECTION BYTES ELAPSED-NS CPU-NS".
func runFloor(self string, n int64, certFile, keyFile string) error {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	conf := &tls.Config{Certificates: []tls.Certificate{pair}}
	for _, batched := range []bool{false, true} {
		for _, up := range []bool{true, false} {
			if err := floorRelay(self, n, conf, up, batched); err != nil {
				return err
			}
		}
	}
	return nil
}

// floorRelay relays n bytes one way (up: plain to TLS), bare or batched,
// and prints its line.
func floorRelay(self string, n int64, conf *tls.Config, up, batched bool) error {
	plainLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer plainLn.Close()
	tlsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer tlsLn.Close()
	// up: a plain source writes, a TLS sink reads; else the reverse.
	src := exec.Command(self, "-serve", "floorsource", "-addr", plainLn.Addr().String(), "-bytes", strconv.FormatInt(n, 10))
	sink := exec.Command(self, "-serve", "floorsink", "-addr", tlsLn.Addr().String(), "-tls")
	if !up {
		src = exec.Command(self, "-serve", "floorsource", "-addr", tlsLn.Addr().String(), "-bytes", strconv.FormatInt(n, 10), "-tls")
		sink = exec.Command(self, "-serve", "floorsink", "-addr", plainLn.Addr().String())
	}
	src.Stderr, sink.Stderr = os.Stderr, os.Stderr
	if err := sink.Start(); err != nil {
		return err
	}
	defer sink.Process.Kill() // on an early return; a no-op once it has been waited for
	if err := src.Start(); err != nil {
		return err
	}
	defer src.Process.Kill()
	pc, err := plainLn.Accept()
	if err != nil {
		return err
	}
	raw, err := tlsLn.Accept()
	if err != nil {
		return err
	}
	var under net.Conn = raw
	var gather *gatherConn
	var rbuf *bufio.Reader
	switch {
	case batched && up:
		gather = &gatherConn{Conn: raw}
		under = gather
	case batched:
		rbuf = bufio.NewReaderSize(raw, floorBuffer)
		under = &bufferedConn{Conn: raw, r: rbuf}
	}
	tc := tls.Server(under, conf)
	if err := tc.Handshake(); err != nil {
		return err
	}
	from, to, dir := io.Reader(pc), io.Writer(tc), "plain to TLS"
	if !up {
		from, to, dir = tc, pc, "TLS to plain"
	}
	if gather != nil {
		gather.holding = true
		to = gatheredWriter{tc, gather}
	}
	if rbuf != nil {
		from = &recordsReader{tc: tc, r: rbuf}
	}
	if batched {
		dir += ", batched"
	}
	buf := make([]byte, floorBuffer)
	c0, t0 := selfCPU(), time.Now()
	moved, err := io.CopyBuffer(struct{ io.Writer }{to}, struct{ io.Reader }{from}, buf)
	if err != nil {
		return err
	}
	if up {
		if gather != nil {
			gather.holding = false // the close_notify goes as it comes
		}
		err = tc.CloseWrite()
	} else {
		err = pc.(*net.TCPConn).CloseWrite()
	}
	if err != nil {
		return err
	}
	elapsed, cpu := time.Since(t0), selfCPU()-c0
	if err := errors.Join(src.Wait(), sink.Wait()); err != nil {
		return err
	}
	pc.Close()
	tc.Close()
	fmt.Printf("floor %s %d %d %d\n", strings.ReplaceAll(dir, " ", "_"), moved, elapsed.Nanoseconds(), cpu.Nanoseconds())
	return nil
}

// gatherConn gathers what TLS writes while holding, for one write to the
// socket at flush.
type gatherConn struct {
	net.Conn
	holding bool
	buf     []byte
}

func (g *gatherConn) Write(p []byte) (int, error) {
	if !g.holding {
		return g.Conn.Write(p)
	}
	g.buf = append(g.buf, p...)
	return len(p), nil
}

func (g *gatherConn) flush() error {
	_, err := g.Conn.Write(g.buf)
	g.buf = g.buf[:0]
	return err
}

// gatheredWriter writes to TLS, then the records it made to the socket
// at once.
type gatheredWriter struct {
	tc *tls.Conn
	g  *gatherConn
}

func (w gatheredWriter) Write(p []byte) (int, error) {
	n, err := w.tc.Write(p)
	if ferr := w.g.flush(); err == nil {
		err = ferr
	}
	return n, err
}

// bufferedConn reads the socket through r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// recordsReader reads from TLS every record already in r (whole, so that
// TLS decrypts it without waiting for the socket) while p has room for
// one more.
type recordsReader struct {
	tc *tls.Conn
	r  *bufio.Reader
}

// tlsRecordRoom is the room a record's plaintext may need: 16 KiB and
// what TLS 1.3 may add.
const tlsRecordRoom = 16<<10 + 256

func (c *recordsReader) Read(p []byte) (int, error) {
	n, err := c.tc.Read(p)
	for err == nil && len(p)-n >= tlsRecordRoom && c.r.Buffered() >= 5 {
		h, _ := c.r.Peek(5)
		if c.r.Buffered() < 5+(int(h[3])<<8|int(h[4])) {
			break // a record not yet whole: TLS would wait for it
		}
		var m int
		m, err = c.tc.Read(p[n:])
		n += m
	}
	return n, err
}

// floorConn dials addr, over TLS (the test certificate is not checked:
// the floor measures bytes, not trust) when overTLS.
func floorConn(addr string, overTLS bool) (net.Conn, error) {
	if overTLS {
		return tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	}
	return net.Dial("tcp", addr)
}

// runFloorSource is -serve floorsource: it writes n bytes to addr, then
// closes.
func runFloorSource(addr string, n int64, overTLS bool) error {
	c, err := floorConn(addr, overTLS)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, floorBuffer)
	for n > 0 {
		w, err := c.Write(buf[:min(int64(len(buf)), n)])
		if err != nil {
			return err
		}
		n -= int64(w)
	}
	return nil
}

// runFloorSink is -serve floorsink: it reads addr to its end.
func runFloorSink(addr string, overTLS bool) error {
	c, err := floorConn(addr, overTLS)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = io.Copy(io.Discard, c)
	return err
}

// measureFloor runs -serve floor rounds times and prints each relay and
// the medians, in CPU s per GB as the TCP part does; it returns the
// medians by direction ("plain to TLS, batched" and the like).
func measureFloor(self string, rounds int, n int64, certFile, keyFile string) (map[string]float64, error) {
	var rs []floorResult
	fmt.Printf("\n### The floor: a bare crypto/tls relay, %d MiB each way\n\n", n>>20)
	fmt.Printf("| round | direction | MiB/s | relay CPU s/GB |\n|---|---|---|---|\n")
	for round := 1; round <= rounds; round++ {
		cmd := exec.Command(self, "-serve", "floor", "-bytes", strconv.FormatInt(n, 10), "-cert", certFile, "-key", keyFile)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("the floor relay: %w", err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var r floorResult
			var el, cpu int64
			if _, err := fmt.Sscanf(line, "floor %s %d %d %d", &r.direction, &r.bytes, &el, &cpu); err != nil {
				return nil, fmt.Errorf("the floor relay printed %q", line)
			}
			r.direction = strings.ReplaceAll(r.direction, "_", " ")
			r.elapsed, r.cpu = time.Duration(el), time.Duration(cpu)
			rs = append(rs, r)
			fmt.Printf("| %d | %s | %.0f | %.2f |\n", round, r.direction, float64(r.bytes)/(1<<20)/r.elapsed.Seconds(), r.cpu.Seconds()/(float64(r.bytes)/1e9))
		}
	}
	medians := map[string]float64{}
	fmt.Printf("\n| direction | median MiB/s | median relay CPU s/GB |\n|---|---|---|\n")
	for _, dir := range []string{"plain to TLS", "TLS to plain", "plain to TLS, batched", "TLS to plain, batched"} {
		var of []floorResult
		for _, r := range rs {
			if r.direction == dir {
				of = append(of, r)
			}
		}
		medians[dir] = median(of, func(r floorResult) float64 { return r.cpu.Seconds() / (float64(r.bytes) / 1e9) })
		fmt.Printf("| %s | %.0f | %.2f |\n", dir,
			median(of, func(r floorResult) float64 { return float64(r.bytes) / (1 << 20) / r.elapsed.Seconds() }), medians[dir])
	}
	fmt.Printf("\nA tunnel server's upload and an agent's download each do at least the first; the reverse, the second.\n")
	return medians, nil
}

// printAgainstFloor prints the tunnel server's and the agent's CPU per GB
// as a multiple of the batched relay's in the same direction: the
// server's upload and the agent's download move plain bytes into TLS,
// the server's download and the agent's upload TLS into plain.
func printAgainstFloor(through map[string]tunnelCPU, floor map[string]float64) {
	toTLS, fromTLS := floor["plain to TLS, batched"], floor["TLS to plain, batched"]
	if toTLS == 0 || fromTLS == 0 {
		return
	}
	up, down := through["upload"], through["download"]
	fmt.Printf("\n### The tunnel against the batched relay (its CPU per GB over the relay's, same direction)\n\n")
	fmt.Printf("| process | upload | download |\n|---|---|---|\n")
	fmt.Printf("| serve | %.2f / %.2f = %.2fx | %.2f / %.2f = %.2fx |\n", up.serve, toTLS, up.serve/toTLS, down.serve, fromTLS, down.serve/fromTLS)
	fmt.Printf("| agent | %.2f / %.2f = %.2fx | %.2f / %.2f = %.2fx |\n", up.agent, fromTLS, up.agent/fromTLS, down.agent, toTLS, down.agent/toTLS)
}
