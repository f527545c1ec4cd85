package bulkcopy

import (
	"bytes"
	"crypto/rand"
	"io"
	"testing"
)

// chunky returns its data in reads of the sizes given in turn.
type chunky struct {
	data  []byte
	sizes []int
	i     int
	reads []int // the length of each buffer it was given
}

func (c *chunky) Read(p []byte) (int, error) {
	c.reads = append(c.reads, len(p))
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), c.sizes[c.i%len(c.sizes)])
	c.i++
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func TestCopy(t *testing.T) {
	data := make([]byte, 3<<20)
	rand.Read(data)
	src := &chunky{data: data, sizes: []int{100, Small, Bulk, Bulk, 1000, Small, 7}}
	var dst bytes.Buffer
	n, err := Copy(&dst, src)
	if err != nil || n != int64(len(data)) || !bytes.Equal(dst.Bytes(), data) {
		t.Fatalf("copied %d bytes, %v; equal %v", n, err, bytes.Equal(dst.Bytes(), data))
	}
	// small, small (filled: bulk next), bulk, bulk, bulk (1000 read: small
	// next), small (filled), bulk (7 read: small next), small ...
	want := []int{Small, Small, Bulk, Bulk, Bulk, Small, Bulk, Small}
	for i, w := range want {
		if src.reads[i] != w {
			t.Fatalf("read %d was given %d bytes, want %d (reads %v)", i, src.reads[i], w, src.reads[:len(want)])
		}
	}
}
