package hop_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/hop"
)

// pipeLocal is a tunnel server whose agents are in memory (net.Pipe):
// each reads 1 KiB, sends it back and closes. It measures the hop, not a
// loopback socket per stream.
type pipeLocal struct{}

func (pipeLocal) DialTunnel(ctx context.Context, node, tunnelID string, h agents.ConnHeader) (net.Conn, error) {
	client, agent := net.Pipe()
	go func() {
		defer agent.Close()
		buf := make([]byte, 1<<10)
		if _, err := io.ReadFull(agent, buf); err == nil {
			agent.Write(buf)
		}
	}()
	return client, nil
}

// kib1 is one request: 1 KiB out, 1 KiB back.
func kib1(b *testing.B, d agents.Dialer, node string, out, in []byte) {
	c, err := d.DialTunnel(context.Background(), node, "tn_1", clientHeader)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Write(out); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(c, in); err != nil {
		b.Fatal(err)
	}
	c.Close()
}

// BenchmarkHopStream opens a stream through the hop (B to A, A's agent
// in memory) and makes a 1 KiB round trip on it; Direct is the same
// against the agent without the hop.
func BenchmarkHopStream(b *testing.B) {
	b.Run("hop", func(b *testing.B) {
		bc := newCluster(b)
		bc.start("nd_a", storeKey, "", nil, func(o *hop.Options) { o.Local = pipeLocal{} })
		from := bc.start("nd_b", storeKey, "", nil)
		out, in := make([]byte, 1<<10), make([]byte, 1<<10)
		kib1(b, from.hop, "nd_a", out, in) // connected
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			kib1(b, from.hop, "nd_a", out, in)
		}
	})
	b.Run("hop-parallel", func(b *testing.B) {
		bc := newCluster(b)
		bc.start("nd_a", storeKey, "", nil, func(o *hop.Options) { o.Local = pipeLocal{} })
		from := bc.start("nd_b", storeKey, "", nil)
		kib1(b, from.hop, "nd_a", make([]byte, 1<<10), make([]byte, 1<<10))
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			out, in := make([]byte, 1<<10), make([]byte, 1<<10)
			for pb.Next() {
				kib1(b, from.hop, "nd_a", out, in)
			}
		})
	})
	b.Run("direct", func(b *testing.B) {
		out, in := make([]byte, 1<<10), make([]byte, 1<<10)
		b.ReportAllocs()
		for b.Loop() {
			kib1(b, pipeLocal{}, "nd_a", out, in)
		}
	})
}

// sink is an agent that reads until EOF, then answers with the number
// of bytes it read (8 bytes, big-endian).
func sink(c net.Conn) {
	n, _ := io.Copy(io.Discard, c)
	c.Write(binary.BigEndian.AppendUint64(nil, uint64(n)))
}

// BenchmarkHopBytes sends bulk bytes to an agent (over loopback TCP)
// through the hop, B to A; direct sends them to the agent's socket.
func BenchmarkHopBytes(b *testing.B) {
	const chunk = 256 << 10
	send := func(b *testing.B, d agents.Dialer, node string) {
		c, err := d.DialTunnel(context.Background(), node, "tn_1", clientHeader)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		data := make([]byte, chunk)
		b.SetBytes(chunk)
		b.ReportAllocs()
		b.ResetTimer()
		var sent uint64
		for b.Loop() {
			if _, err := c.Write(data); err != nil {
				b.Fatal(err)
			}
			sent += chunk
		}
		c.(interface{ CloseWrite() error }).CloseWrite()
		var got [8]byte
		if _, err := io.ReadFull(c, got[:]); err != nil || binary.BigEndian.Uint64(got[:]) != sent {
			b.Fatalf("the agent read %d bytes, %v; want %d", binary.BigEndian.Uint64(got[:]), err, sent)
		}
	}
	b.Run("hop", func(b *testing.B) {
		c := newCluster(b)
		c.start("nd_a", storeKey, "", sink)
		from := c.start("nd_b", storeKey, "", nil)
		send(b, from.hop, "nd_a")
	})
	b.Run("direct", func(b *testing.B) {
		send(b, newLocal(b, sink), "nd_a")
	})
}
