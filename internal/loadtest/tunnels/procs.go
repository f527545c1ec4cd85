package main

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a process the harness started: this binary in one of its
// internal modes (its standard input is its lifeline), or edgeplane
// (stopped with SIGINT). Its stdout lines arrive on lines; its stderr
// goes to a file of its own, whose tail is shown when it fails.
type proc struct {
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser // nil for edgeplane
	lines chan string    // closed at stdout's EOF
	log   string         // the stderr file
	// hard says that stop kills the process at once.
	hard bool
}

// startProc starts bin with args (and env added to the harness's) and
// returns at once; self says that bin is this binary.
func startProc(dir, name, bin string, self bool, args []string, env ...string) (*proc, error) {
	p := &proc{name: name, cmd: exec.Command(bin, args...), lines: make(chan string, 1024), log: filepath.Join(dir, name+".log")}
	p.cmd.Env = append(os.Environ(), env...)
	f, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child has its own descriptor
	p.cmd.Stderr = f
	if self {
		if p.in, err = p.cmd.StdinPipe(); err != nil {
			return nil, err
		}
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	return p, nil
}

// pid is the process's ID.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// await returns the first stdout line from now on that starts with
// prefix, without the prefix; it fails when the process ends its stdout
// or prints nothing such within timeout.
func (p *proc) await(prefix string, timeout time.Duration) (string, error) {
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				return "", fmt.Errorf("%s ended before printing %q; its stderr ends: %s", p.name, prefix, p.tail())
			}
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				return rest, nil
			}
		case <-deadline:
			return "", fmt.Errorf("%s printed no %q within %v; its stderr ends: %s", p.name, prefix, timeout, p.tail())
		}
	}
}

// drain discards the process's further stdout lines, so that it never
// blocks writing them.
func (p *proc) drain() {
	go func() {
		for range p.lines {
		}
	}()
}

// send writes a command line to an internal mode's standard input.
func (p *proc) send(line string) error {
	_, err := io.WriteString(p.in, line+"\n")
	return err
}

// tail is the last 2 KiB of the process's stderr.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return string(bytes.TrimSpace(b))
}

// stop ends the process (its input closed, or SIGINT; killed when hard)
// and waits for it, at most 15 seconds before it is killed.
func (p *proc) stop() {
	if p.hard {
		_ = p.cmd.Process.Kill()
	}
	if p.in != nil {
		_ = p.in.Close()
	} else {
		_ = p.cmd.Process.Signal(os.Interrupt)
	}
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// procs are the processes started, stopped in reverse order.
type procs []*proc

func (ps *procs) add(p *proc) *proc { *ps = append(*ps, p); return p }

func (ps *procs) stopAll() {
	for i := len(*ps) - 1; i >= 0; i-- {
		(*ps)[i].stop()
	}
	*ps = nil
}

// buildEdgeplane builds the edgeplane command into dir.
func buildEdgeplane(dir string) (string, error) {
	bin := filepath.Join(dir, "edgeplane")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/edgeplane/edgeplane/cmd/edgeplane").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build edgeplane: %v\n%s", err, out)
	}
	return bin, nil
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key
// as PEM files in dir: the tunnel listener's, and the agents' -ca.
func writeCert(dir string) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "edgeplane tunnel load"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "tunnel.crt"), filepath.Join(dir, "tunnel.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// raiseOpenFiles raises this process's open-files limit (which the
// processes it starts inherit) to the hard limit, and fails when that is
// below want.
func raiseOpenFiles(want uint64) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return err
		}
	}
	if l.Cur < want {
		return fmt.Errorf("the open-files limit is %d (hard), want at least %d: raise it (ulimit -Hn) or lower -sessions", l.Max, want)
	}
	return nil
}

// freePorts returns n TCP ports of 127.0.0.1 free now.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// rssKiB returns process pid's resident set (VmRSS) in KiB, from
// /proc/pid/status; -1 where that cannot be read.
func rssKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// writeCalls returns the write system calls (write, sendmsg...) process
// pid has made, from /proc/pid/io's syscw; 0 where that cannot be read.
func writeCalls(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscw:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
