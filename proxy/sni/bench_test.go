package sni_test

import (
	"context"
	"crypto/tls"
	"testing"

	"github.com/edgeplane/edgeplane/proxy/sni"
)

// BenchmarkPeek parses a crypto/tls client's ClientHello from memory: the
// cost Peek adds to each connection beyond the network.
func BenchmarkPeek(b *testing.B) {
	hello := helloBytes(b, &tls.Config{ServerName: "app.example.com", NextProtos: []string{"h2", "http/1.1"}})
	ctx := context.Background()
	b.SetBytes(int64(len(hello)))
	b.ReportAllocs()
	for b.Loop() {
		h, _, err := sni.Peek(ctx, newMemConn(hello), sni.Options{})
		if err != nil || h.ServerName != "app.example.com" {
			b.Fatal(h, err)
		}
	}
}
