package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/internal/syncbuf"
)

// shellWords splits a command line as a POSIX shell does words made of
// plain characters and single-quoted parts (what shellQuote writes).
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			w.WriteByte(c)
		case c == '\'':
			quoted, in = true, true
		case c == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			in = true
		case c == ' ':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote in %q", line)
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// firstRun is edgeplane serve -proxy with a tunnel listener and no
// certificate, as the README's first run starts it.
type firstRun struct {
	*server
	api                  apiClient
	proxyHTTP, agentAddr string
	agentCmd             []string // the words of the agent command serve printed
}

func startFirstRun(t *testing.T, dir string, extra ...string) *firstRun {
	t.Helper()
	key := "epk_" + strings.Repeat("r", 40)
	s := startServe(t, append([]string{"-store", "sqlite:" + filepath.Join(dir, "edgeplane.db"), "-proxy", "-proxy-http-addr", "127.0.0.1:0",
		"-proxy-tunnel-addr", "127.0.0.1:0"}, extra...), map[string]string{"EDGEPLANE_API_KEY": key, "EDGEPLANE_RATE_LIMIT": "0"})
	out := s.stdout.String()
	proxyHTTP := regexp.MustCompile(`(?m)^proxy on http://(\S+)$`).FindStringSubmatch(out)
	agentAddr := regexp.MustCompile(`(?m)^agents connect to (\S+) \(TLS\)$`).FindStringSubmatch(out)
	cmd := regexp.MustCompile(`(?m)^  (edgeplane agent .*)$`).FindStringSubmatch(out)
	if proxyHTTP == nil || agentAddr == nil || cmd == nil {
		t.Fatalf("stdout: %s", out)
	}
	return &firstRun{server: s, api: apiClient{t: t, base: "http://" + s.addr, key: key}, proxyHTTP: proxyHTTP[1], agentAddr: agentAddr[1],
		agentCmd: shellWords(t, cmd[1])}
}

// runPrinted runs the agent command serve printed, in this process, with
// EDGEPLANE_AUTHTOKEN set to token and the app's port 3000 replaced by
// port, and waits for the line it prints once its endpoint is up.
func runPrinted(t *testing.T, words []string, token, port string) *agentProc {
	t.Helper()
	if len(words) < 2 || words[0] != "edgeplane" || words[1] != "agent" {
		t.Fatalf("not an agent command: %q", words)
	}
	args := append([]string(nil), words[1:]...)
	replaced := false
	for i, w := range args {
		if w == "3000" && i > 0 && args[i-1] == "http" {
			args[i], replaced = port, true
		}
	}
	if !replaced {
		t.Fatalf("the printed command names no app port 3000: %q", words)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &agentProc{stop: cancel, done: make(chan int, 1), stderr: &syncbuf.Buffer{}}
	t.Cleanup(cancel)
	ready := make(chan string, 1)
	var stdout syncbuf.Buffer
	env := map[string]string{"EDGEPLANE_AUTHTOKEN": token}
	go func() { a.done <- run(ctx, args, func(k string) string { return env[k] }, &stdout, a.stderr, ready) }()
	select {
	case a.line = <-ready:
	case code := <-a.done:
		t.Fatalf("the printed agent command exited with %d: %s %s", code, stdout.String(), a.stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("the printed agent command did not start: %s", a.stderr.String())
	}
	return a
}

// TestServeFirstRun: edgeplane serve -proxy -proxy-tunnel-addr without
// -proxy-tunnel-cert makes a local CA beside its SQLite store (the key
// 0600, the certificate 0644) and a certificate it signs for the
// listener, and prints the agent command; that command, run as printed
// (the authtoken in EDGEPLANE_AUTHTOKEN, the app's port for 3000), gives
// a local app a URL that a request through the proxy reaches. A second
// start on the store keeps the same CA (same bytes, same fingerprint),
// and the command it prints works again. The reserved domains'
// certificates by SNI are kept: a name that neither they nor the local
// leaf serve fails the handshake with unrecognized_name.
func TestServeFirstRun(t *testing.T) {
	dir := t.TempDir()
	tlsDir := filepath.Join(dir, "edgeplane.db.tls")
	var firstCA []byte
	var fingerprint string
	for i, want := range []string{"a new CA, made now", "kept from an earlier start"} {
		s := startFirstRun(t, dir)
		out := s.stdout.String()
		if !strings.Contains(out, "tunnel certificate: signed by the local CA "+filepath.Join(tlsDir, "ca.pem")+" ("+want) {
			t.Errorf("start %d: stdout: %s", i+1, out)
		}
		if got := s.agentCmd[2:6]; got[0] != "-server" || got[1] != s.agentAddr || got[2] != "-ca" || got[3] != filepath.Join(tlsDir, "ca.pem") {
			t.Errorf("start %d: the printed command %q; want -server %s -ca %s", i+1, s.agentCmd, s.agentAddr, filepath.Join(tlsDir, "ca.pem"))
		}
		if !strings.Contains(strings.Join(s.agentCmd, " "), "-domain app.example.com -scheme http") {
			t.Errorf("start %d: the printed command %q; want -scheme http (the proxy's plain listener: no certificate needed)", i+1, s.agentCmd)
		}
		for name, mode := range map[string]os.FileMode{"ca.pem": 0o644, "ca.key": 0o600, "tunnel.pem": 0o644, "tunnel.key": 0o600} {
			if info, err := os.Stat(filepath.Join(tlsDir, name)); err != nil || info.Mode().Perm() != mode {
				t.Errorf("start %d: %s: %v %v; want mode %o", i+1, name, info, err, mode)
			}
		}
		ca, err := os.ReadFile(filepath.Join(tlsDir, "ca.pem"))
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(ca)
		if block == nil {
			t.Fatalf("ca.pem: %q", ca)
		}
		sum := sha256.Sum256(block.Bytes)
		if i == 0 {
			firstCA, fingerprint = ca, hex.EncodeToString(sum[:])
		} else if !bytes.Equal(ca, firstCA) || hex.EncodeToString(sum[:]) != fingerprint {
			t.Errorf("start %d: the CA changed; agents given the first would no longer trust the server", i+1)
		}
		if !strings.Contains(out, "SHA-256 "+fingerprint) {
			t.Errorf("start %d: stdout lacks the CA's fingerprint %s: %s", i+1, fingerprint, out)
		}

		if i == 0 {
			s.api.must(201, "POST", "/reserved_domains", `{"domain":"app.example.com"}`)
		}
		token := s.api.must(201, "POST", "/credentials", `{"acl":["bind:app.example.com"]}`)["token"].(string)
		up := newUpstream(t, "local")
		_, upPort, _ := net.SplitHostPort(strings.TrimPrefix(up.URL, "http://"))
		a := runPrinted(t, s.agentCmd, token, upPort)
		if a.line != "http://app.example.com" {
			t.Errorf("start %d: the agent printed %q", i+1, a.line)
		}
		c := through(s.proxyHTTP, nil)
		if _, ok := within(5*time.Second, func() bool {
			code, body := fetch(c, "http://app.example.com/hello", "first run")
			return code == 200 && body == "upstream local /hello"
		}); !ok {
			code, body := fetch(c, "http://app.example.com/hello", "first run")
			t.Fatalf("start %d: through the endpoint: %d %q; agent log: %s", i+1, code, body, a.stderr)
		}

		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		for _, name := range []string{"", "localhost", "127.0.0.1"} { // an IP address sends no SNI
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.agentAddr, &tls.Config{ServerName: name, RootCAs: pool,
				InsecureSkipVerify: name == ""})
			if err != nil {
				t.Errorf("start %d: handshake for %q: %v", i+1, name, err)
				continue
			}
			conn.Close()
		}
		if conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.agentAddr, &tls.Config{ServerName: "c.example.com", RootCAs: pool}); err == nil {
			conn.Close()
			t.Errorf("start %d: a handshake for c.example.com succeeded", i+1)
		} else if !strings.Contains(err.Error(), "unrecognized name") {
			t.Errorf("start %d: handshake for c.example.com: %v; want the alert unrecognized_name", i+1, err)
		}
		a.stopAndWait(t)
		if code := s.stop(); code != 0 {
			t.Fatalf("start %d: serve exited with %d: %s", i+1, code, s.stderr)
		}
	}
}

// TestLocalTLS: the local CA and its leaf are kept across loads; the leaf
// is issued again by the same CA for a new host or near its end; a file
// that cannot be used is an error naming it and saying what to do, and
// is left as it is.
func TestLocalTLS(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const addr = "127.0.0.1:4443"
	read := func(t *testing.T, dir, name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	write := func(t *testing.T, dir, name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dir string) // after the first load
		addr   string
		at     time.Time
		made   string // "" kept, "issued"
		reason string // in the reason, or in the error
		err    []string
	}{
		{name: "kept", addr: addr, at: now},
		{name: "a new host", addr: "192.0.2.1:4443", at: now, made: "issued", reason: "does not cover 192.0.2.1"},
		{name: "a name", addr: "edge.example.com:4443", at: now, made: "issued", reason: "does not cover edge.example.com"},
		{name: "near its end", addr: addr, at: now.Add(340 * 24 * time.Hour), made: "issued", reason: "expires on 2027-03-01"},
		{name: "leaf removed", change: func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "tunnel.pem"))
			os.Remove(filepath.Join(dir, "tunnel.key"))
		}, addr: addr, at: now, made: "issued"},
		{name: "CA expired", addr: addr, at: now.Add(11 * 365 * 24 * time.Hour), err: []string{"ca.pem expired on", "remove the directory"}},
		{name: "ca.pem corrupt", change: func(t *testing.T, dir string) { write(t, dir, "ca.pem", []byte("garbage\n")) },
			addr: addr, at: now, err: []string{"ca.pem is not a PEM certificate", "remove", "agents then need the new ca.pem"}},
		{name: "ca.key missing", change: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "ca.key")) },
			addr: addr, at: now, err: []string{"ca.pem is there but its private key", "ca.key is not"}},
		{name: "ca.pem missing", change: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "ca.pem")) },
			addr: addr, at: now, err: []string{"ca.key is there but", "ca.pem is not"}},
		{name: "ca.key of another certificate", change: func(t *testing.T, dir string) { write(t, dir, "ca.key", read(t, dir, "tunnel.key")) },
			addr: addr, at: now, err: []string{"ca.key is not the private key of", "ca.pem"}},
		{name: "tunnel.key corrupt", change: func(t *testing.T, dir string) {
			write(t, dir, "tunnel.key", []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"))
		},
			addr: addr, at: now, err: []string{"tunnel.key is not an ECDSA private key", "agents keep trusting it"}},
		{name: "leaf of another CA", change: func(t *testing.T, dir string) {
			other := t.TempDir()
			if _, err := loadLocalTLS(other, addr, now); err != nil {
				t.Fatal(err)
			}
			write(t, dir, "tunnel.pem", read(t, other, "tunnel.pem"))
			write(t, dir, "tunnel.key", read(t, other, "tunnel.key"))
		}, addr: addr, at: now, err: []string{"tunnel.pem was not signed by the CA of", "remove"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "edgeplane.db.tls")
			first, err := loadLocalTLS(dir, addr, now)
			if err != nil {
				t.Fatal(err)
			}
			if first.made != "made" {
				t.Fatalf("first load: made %q", first.made)
			}
			if tc.change != nil {
				tc.change(t, dir)
			}
			before := map[string][]byte{}
			for _, name := range []string{"ca.pem", "ca.key", "tunnel.pem", "tunnel.key"} {
				before[name], _ = os.ReadFile(filepath.Join(dir, name))
			}
			l, err := loadLocalTLS(dir, tc.addr, tc.at)
			if tc.err != nil {
				if err == nil {
					t.Fatalf("loaded; want an error with %q", tc.err)
				}
				for _, want := range tc.err {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				if !strings.Contains(err.Error(), dir) {
					t.Errorf("error %q names no file of %s", err, dir)
				}
				for name, b := range before {
					if after, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(after, b) {
						t.Errorf("%s changed after the error", name)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.made != tc.made || !strings.Contains(l.reason, tc.reason) {
				t.Errorf("made %q (%s); want %q (%s)", l.made, l.reason, tc.made, tc.reason)
			}
			if l.caSHA256 != first.caSHA256 || !bytes.Equal(read(t, dir, "ca.pem"), before["ca.pem"]) {
				t.Error("the CA changed")
			}
			sameLeaf := l.leaf.Leaf.SerialNumber.Cmp(first.leaf.Leaf.SerialNumber) == 0
			if sameLeaf != (tc.made == "") {
				t.Errorf("the same leaf: %v; want %v", sameLeaf, tc.made == "")
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(read(t, dir, "ca.pem"))
			host, _, _ := net.SplitHostPort(tc.addr)
			if _, err := l.leaf.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, CurrentTime: tc.at}); err != nil {
				t.Errorf("the leaf for %s: %v", host, err)
			}
			kept, err := tls.X509KeyPair(read(t, dir, "tunnel.pem"), read(t, dir, "tunnel.key"))
			if err != nil || !bytes.Equal(kept.Certificate[0], l.leaf.Certificate[0]) {
				t.Errorf("the files hold another leaf than the one served: %v", err)
			}
		})
	}
}

func TestLocalTLSNames(t *testing.T) {
	loop := "localhost 127.0.0.1 ::1"
	for _, c := range []struct{ addr, want string }{
		{"127.0.0.1:4443", "localhost 127.0.0.1 ::1"},
		{"[::1]:4443", "localhost ::1 127.0.0.1"},
		{":4443", loop},
		{"0.0.0.0:4443", loop},
		{"[::]:4443", loop},
		{"localhost:4443", loop},
		{"127.0.0.2:4443", "localhost 127.0.0.2 127.0.0.1 ::1"},
		{"192.0.2.7:4443", "192.0.2.7"},
		{"Edge.Example.com.:4443", "edge.example.com"},
	} {
		dns, ips, err := localTLSNames(c.addr)
		got := dns
		for _, ip := range ips {
			got = append(got, ip.String())
		}
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("localTLSNames(%q) = %q, %v; want %s", c.addr, got, err, c.want)
		}
	}
	for _, c := range []struct{ addr, listened, want string }{
		{"127.0.0.1:0", "127.0.0.1:40001", "127.0.0.1:40001"},
		{":4443", "[::]:4443", "127.0.0.1:4443"},
		{"0.0.0.0:4443", "0.0.0.0:4443", "127.0.0.1:4443"},
		{"localhost:4443", "127.0.0.1:4443", "localhost:4443"},
		{"edge.example.com:4443", "192.0.2.7:4443", "edge.example.com:4443"},
	} {
		if got := agentDialAddr(c.addr, c.listened); got != c.want {
			t.Errorf("agentDialAddr(%q, %q) = %s, want %s", c.addr, c.listened, got, c.want)
		}
	}
}
