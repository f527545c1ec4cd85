package sni_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/edgeplane/edgeplane/proxy/sni"
)

// FuzzPeek feeds arbitrary bytes as a connection's start: Peek never
// panics, reads at most MaxBytes, fails with one of the sentinels, and its
// conn replays exactly the bytes it read.
func FuzzPeek(f *testing.F) {
	for _, cfg := range []*tls.Config{
		{ServerName: "a.test", NextProtos: []string{"h2", "http/1.1"}},
		{ServerName: "a.test", MaxVersion: tls.VersionTLS12},
		{InsecureSkipVerify: true, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS10},
	} {
		h := helloBytes(f, cfg)
		f.Add(h)
		f.Add(h[:len(h)/2])
		split := append([]byte{h[0], h[1], h[2], 0, 40}, h[5:45]...) // two records
		split = append(split, h[0], h[1], h[2], byte((len(h)-45)>>8), byte(len(h)-45))
		f.Add(append(split, h[45:]...))
	}
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"))
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x00, 0x00, 0x00})
	f.Add([]byte{0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0xff, 0xff, 0xff})
	f.Add([]byte{})

	const max = 4096
	sentinels := []error{sni.ErrNotTLS, sni.ErrTruncated, sni.ErrTimeout, sni.ErrTooLarge, sni.ErrBadHello}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newMemConn(data)
		hello, conn, err := sni.Peek(context.Background(), c, sni.Options{MaxBytes: max})
		read := len(data) - c.r.Len()
		if read > max {
			t.Fatalf("read %d bytes, limit %d", read, max)
		}
		if err != nil {
			if hello != nil {
				t.Fatalf("Hello %+v with error %v", hello, err)
			}
			known := false
			for _, s := range sentinels {
				known = known || errors.Is(err, s)
			}
			if !known || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("error %v wraps none of the sentinels", err)
			}
		} else if hello.Bytes != read {
			t.Fatalf("Hello.Bytes = %d, read %d", hello.Bytes, read)
		}
		all, err := io.ReadAll(conn)
		if err != nil || !bytes.Equal(all, data) {
			t.Fatalf("conn gave %d bytes (%v), want the %d given", len(all), err, len(data))
		}
	})
}
