package sni_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"

	"github.com/edgeplane/edgeplane/proxy/sni"
)

// A TLS listener peeks at the ClientHello to choose where the connection
// goes, then hands the returned conn (which replays the hello) to
// tls.Server or to a passthrough copy.
func ExamplePeek() {
	client, server := net.Pipe()
	defer client.Close()
	go tls.Client(client, &tls.Config{ServerName: "App.Example.com", NextProtos: []string{"h2", "http/1.1"}}).Handshake()

	hello, conn, err := sni.Peek(context.Background(), server, sni.Options{})
	if err != nil {
		fmt.Println("peek:", err)
		return
	}
	defer conn.Close()
	fmt.Println("server name:", hello.ServerName)
	fmt.Println("edge for:", strings.ToLower(hello.ServerName))
	fmt.Println("ALPN:", hello.Protocols)
	fmt.Println("max version:", tls.VersionName(hello.MaxVersion))
	// Output:
	// server name: App.Example.com
	// edge for: app.example.com
	// ALPN: [h2 http/1.1]
	// max version: TLS 1.3
}
