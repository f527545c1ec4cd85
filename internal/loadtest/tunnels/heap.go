package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/tunnel"
)

// runTunnelHeap is the mode -serve tunnelheap: a tunnel.Server alone in
// this process, on a memstore Service, on 127.0.0.1 with the certificate
// and key files; it prints "listening ADDR TOKEN" (a credential's
// authtoken), then answers on its standard input
//
//   - "heap FILE": after a GC, writes the heap profile to FILE and
//     prints "heap LIVE SESSIONS", the live heap bytes and the sessions
//     held.
//
// The heap part of the harness reads where an idle session's memory
// goes, without SQLite, the proxy or the API in the same heap.
func runTunnelHeap(certFile, keyFile string) error {
	ctx := context.Background()
	st := memstore.New()
	svc, err := edgeplane.New(st, edgeplane.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "heap"})
	if err != nil {
		return err
	}
	sub, err := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "admin", Admin: true})
	if err != nil {
		return err
	}
	cred, err := svc.CreateCredential(ctx, edgeplane.Principal{AccountID: acct.ID, SubjectID: sub.ID, Admin: true}, credentials.CreateParams{})
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	m := tunnel.NewMetrics()
	srv, err := tunnel.NewServer(tunnel.Options{Host: svc.Host().Tunnels(), TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}},
		Feed: st, Metrics: m})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("listening %s %s\n", ln.Addr(), *cred.Token)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if file, ok := strings.CutPrefix(sc.Text(), "heap "); ok {
			runtime.GC()
			f, err := os.Create(file)
			if err != nil {
				return err
			}
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Printf("heap %d %d\n", ms.HeapAlloc, m.Sessions())
		}
	}
	return nil
}

// measureHeap opens c.n idle sessions (from c.tools processes) on a
// tunnel.Server alone in a process (runTunnelHeap), writes its heap
// profile into dir, and prints the live heap per session and the
// allocation sites that hold it.
func measureHeap(dir, self, certFile, keyFile, profDir string, c sessionsConfig) error {
	var ps procs
	defer ps.stopAll()
	srv, err := startProc(dir, "tunnelheap", self, true, []string{"-serve", "tunnelheap", "-ca", certFile, "-key", keyFile})
	if err != nil {
		return err
	}
	srv.hard = true
	ps.add(srv)
	v, err := srv.await("listening ", 30*time.Second)
	if err != nil {
		return err
	}
	addr, token, _ := strings.Cut(v, " ")
	heap := func(name string) (live, sessions int64, err error) {
		if err := srv.send("heap " + filepath.Join(profDir, name)); err != nil {
			return 0, 0, err
		}
		v, err := srv.await("heap ", time.Minute)
		if err != nil {
			return 0, 0, err
		}
		_, err = fmt.Sscan(v, &live, &sessions)
		return live, sessions, err
	}
	time.Sleep(time.Second)
	live0, _, err := heap("tunnel-heap-before.pprof")
	if err != nil {
		return err
	}
	per := c.n / c.tools
	for i := range c.tools {
		p, err := startProc(dir, fmt.Sprintf("heap-sessions-%d", i), self, true, []string{"-serve", "sessions", "-server", addr, "-ca", certFile,
			"-authtoken", token, "-n", strconv.Itoa(per), "-parallel", strconv.Itoa(c.parallel)})
		if err != nil {
			return err
		}
		ps.add(p)
		if _, err := p.await("connected ", 10*time.Minute); err != nil {
			return err
		}
	}
	time.Sleep(c.hold)
	live1, sessions, err := heap("tunnel-heap.pprof")
	if err != nil {
		return err
	}
	fmt.Printf("a tunnel.Server alone in a process (memstore Service, no proxy, no SQLite): %d sessions; live heap after a GC %.1f KiB per session (%s)\n\n",
		sessions, float64(live1-live0)/1024/float64(max(sessions, 1)), filepath.Join(profDir, "tunnel-heap.pprof"))
	out, err := exec.Command("go", "tool", "pprof", "-top", "-sample_index=inuse_space", "-nodecount=25",
		"-base", filepath.Join(profDir, "tunnel-heap-before.pprof"), self, filepath.Join(profDir, "tunnel-heap.pprof")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go tool pprof: %v\n%s", err, out)
	}
	fmt.Printf("%s\n", strings.TrimSpace(string(out)))
	return nil
}
