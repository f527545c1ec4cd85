package batchconn_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/big"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/internal/batchconn"
)

// selfSigned returns a certificate for 127.0.0.1.
func selfSigned(b *testing.B) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		b.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// BenchmarkFrameWrites writes muxado-like frames (an 8-byte header, then
// a 256 KiB payload: two writes to TLS, 17 records) from a TLS client
// over loopback TCP, with the socket bare and under a Conn; the server
// reads them through TLS. The writes/op column is the socket's write
// calls per frame; cpu-ns/op the process's CPU time per frame (both
// ends), which other processes on the cores do not inflate as they do
// ns/op.
func BenchmarkFrameWrites(b *testing.B) {
	cert := selfSigned(b)
	for _, batched := range []bool{false, true} {
		name := "bare"
		if batched {
			name = "batchconn"
		}
		b.Run(name, func(b *testing.B) {
			c, s := tcpPair(b)
			counted := &countingConn{Conn: c}
			var under net.Conn = counted
			if batched {
				under = batchconn.New(counted)
			}
			tc := tls.Client(under, &tls.Config{InsecureSkipVerify: true})
			ts := tls.Server(s, &tls.Config{Certificates: []tls.Certificate{cert}})
			done := make(chan error, 1)
			go func() {
				_, err := io.Copy(io.Discard, ts)
				done <- err
			}()
			hdr, payload := make([]byte, 8), make([]byte, 256<<10)
			if err := tc.Handshake(); err != nil {
				b.Fatal(err)
			}
			counted.writes = 0
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				if _, err := tc.Write(hdr); err != nil {
					b.Fatal(err)
				}
				if _, err := tc.Write(payload); err != nil {
					b.Fatal(err)
				}
			}
			tc.Close()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(counted.writes)/float64(b.N), "writes/op")
		})
	}
}

// countingConn counts its writes (only the writer goroutine writes).
type countingConn struct {
	net.Conn
	writes int
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes++
	return c.Conn.Write(p)
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
