package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/proxy"
)

// Streams serves TCP edges on their ports: here one edge whose backend's
// tunnel forwards to a line-upper-casing server, and the proxy listening
// on the edge's port of the range it was given.
func ExampleStreams() {
	ctx := context.Background()
	st := memstore.New()
	svc, err := edgeplane.New(st, edgeplane.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close(ctx)
	must := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "acme"})
	must(err)
	user, err := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "ops", Admin: true})
	must(err)
	p := edgeplane.Principal{AccountID: acct.ID, SubjectID: user.ID, Admin: true}

	// The upstream, and a tunnel to it ("tcp://host:port").
	up, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				io.WriteString(c, strings.ToUpper(line))
			}()
		}
	}()
	backend, err := svc.CreateTunnelGroupBackend(ctx, p, backends.CreateParams{Labels: map[string]string{"app": "db"}})
	must(err)
	cred, err := svc.CreateCredential(ctx, p, credentials.CreateParams{ACL: []string{"bind:app=db"}})
	must(err)
	_, err = svc.Host().RegisterTunnel(ctx, *cred.Token, backends.RegisterTunnelParams{Labels: map[string]string{"app": "db"}, ForwardsTo: "tcp://" + up.Addr().String()})
	must(err)

	// The TCP edge on a free port of 127.0.0.1.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	_, err = svc.CreateReservedDomain(ctx, p, domains.CreateParams{Domain: "db.example.com"})
	must(err)
	_, err = svc.CreateTCPEdge(ctx, p, edges.CreateTCPEdgeParams{Hostports: []string{"db.example.com:" + strconv.Itoa(port)},
		Backend: &edges.BackendParams{BackendID: backend.ID}})
	must(err)

	configs, err := proxy.New(ctx, svc.Host().DataPlane(), st, proxy.Options{})
	must(err)
	defer configs.Close()
	streams := proxy.NewStreams(configs, proxy.StreamOptions{})
	defer streams.Close()
	tcpCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- streams.ServeTCP(tcpCtx, "127.0.0.1", port, port) }()
	defer func() { stop(); <-served }() // the listeners are closed when ServeTCP returns

	var c net.Conn
	for range 200 { // until the listener is up
		if c, err = net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	must(err)
	defer c.Close()
	io.WriteString(c, "hello through a tcp edge\n")
	reply, err := bufio.NewReader(c).ReadString('\n')
	must(err)
	fmt.Print(reply)
	// Output:
	// HELLO THROUGH A TCP EDGE
}
