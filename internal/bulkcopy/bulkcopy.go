// Package bulkcopy copies a connection's bytes through a buffer that
// grows for bulk transfers: a small pooled buffer, and a large one after
// a read that filled the small one, until a large read comes back less
// than a small buffer's worth. Over a multiplexed stream (an agent's
// tunnel) each write is a frame and each read a window update, so bulk
// transfers go in fewer, larger frames, while an idle connection holds
// only the small buffer.
package bulkcopy

import (
	"io"
	"sync"
)

// Sizes of the copy buffers.
const (
	// Small is the buffer a copy starts with and returns to.
	Small = 32 << 10
	// Bulk is the buffer of a bulk transfer: a muxado stream's window.
	Bulk = 256 << 10
)

var (
	smallPool = sync.Pool{New: func() any { b := make([]byte, Small); return &b }}
	bulkPool  = sync.Pool{New: func() any { b := make([]byte, Bulk); return &b }}
)

// Copy copies src to dst until src's EOF (nil) or an error, and returns
// the bytes written. Unlike io.Copy it never uses src's WriteTo or dst's
// ReadFrom.
func Copy(dst io.Writer, src io.Reader) (int64, error) {
	small := smallPool.Get().(*[]byte)
	defer smallPool.Put(small)
	var bulk *[]byte
	defer func() {
		if bulk != nil {
			bulkPool.Put(bulk)
		}
	}()
	buf := *small
	var written int64
	for {
		nr, rerr := src.Read(buf)
		if nr > 0 {
			nw, werr := dst.Write(buf[:nr])
			written += int64(nw)
			if werr != nil {
				return written, werr
			}
			if nw != nr {
				return written, io.ErrShortWrite
			}
		}
		if rerr == io.EOF {
			return written, nil
		}
		if rerr != nil {
			return written, rerr
		}
		switch {
		case nr == len(buf) && bulk == nil:
			bulk = bulkPool.Get().(*[]byte)
			buf = *bulk
		case bulk != nil && nr < Small:
			bulkPool.Put(bulk)
			bulk, buf = nil, *small
		}
	}
}
