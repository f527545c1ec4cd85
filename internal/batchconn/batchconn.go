// Package batchconn wraps the socket under an agent's TLS session so that
// bulk bytes cost fewer system calls: its writes are gathered and written
// by a goroutine of its own, many TLS records in one write (a group
// commit), and its reads fill a buffer of [ReadSize] bytes at a time.
//
// The agent's SDK (golang.ngrok.com/ngrok, with its own muxado) writes a
// frame's 8-byte header and its payload in two writes to its TLS
// connection, and crypto/tls writes each record of at most 16 KiB in a
// write of its own to the socket: 17 system calls for a 256 KiB frame,
// about 69 per MiB. Under a [Conn] the TLS connection's writes return
// once their bytes are queued, and the records queued while the socket
// takes the last group go together in the next one.
//
// A write's error (a peer gone, a deadline) is returned by the writes
// after it, as a TCP socket reports a peer's reset only to later writes:
// the bytes a Write accepted may be lost when the connection fails, which
// a session over it (muxado) treats as the connection's end.
package batchconn

import (
	"net"
	"sync"
	"time"
)

const (
	// ReadSize is the buffer a read fills: several TLS records.
	ReadSize = 64 << 10
	// MaxPending bounds the bytes queued for the next write: a Write
	// that finds this much waits until the socket takes them.
	MaxPending = 1 << 20
	// closeFlush bounds how long Close waits for the queued bytes (a
	// session's GOAWAY) to be written.
	closeFlush = 2 * time.Second
)

// Conn is a net.Conn whose writes are batched and whose reads are
// buffered (see the package doc). Its Write and Close may be called from
// different goroutines; its reads from one at a time.
type Conn struct {
	net.Conn

	rbuf       []byte // the read buffer (allocated by the first read)
	rpos, rend int    // its unread bytes: rbuf[rpos:rend]

	mu      sync.Mutex
	room    sync.Cond // signalled when a group was taken, the writer failed or stopped
	kick    chan struct{}
	pending []byte // the bytes of the next write
	spare   []byte // the buffer of the last write, reused
	err     error  // the first write's error: later writes fail with it
	closing bool   // Close was called
	started bool   // the writer goroutine runs
	done    chan struct{}
}

// New returns c with batched writes and buffered reads.
func New(c net.Conn) *Conn {
	b := &Conn{Conn: c, kick: make(chan struct{}, 1), done: make(chan struct{})}
	b.room.L = &b.mu
	return b
}

// Read reads from the connection through the read buffer.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.rpos == c.rend {
		if len(p) >= ReadSize {
			return c.Conn.Read(p)
		}
		if c.rbuf == nil {
			c.rbuf = make([]byte, ReadSize)
		}
		n, err := c.Conn.Read(c.rbuf)
		c.rpos, c.rend = 0, n
		if n == 0 {
			return 0, err
		}
		// The error, if any, comes again with the next read.
	}
	n := copy(p, c.rbuf[c.rpos:c.rend])
	c.rpos += n
	return n, nil
}

// Write queues p for the writer goroutine and returns len(p), or the
// error of an earlier write. It waits while [MaxPending] bytes are
// queued.
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		c.started = true
		go c.run()
	}
	for len(c.pending) >= MaxPending && c.err == nil && !c.closing {
		c.room.Wait()
	}
	switch {
	case c.err != nil:
		return 0, c.err
	case c.closing:
		return 0, net.ErrClosed
	}
	c.pending = append(c.pending, p...)
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return len(p), nil
}

// run writes the queued bytes, in groups, until the connection is
// closed and its queue written, or a write fails.
func (c *Conn) run() {
	defer close(c.done)
	for {
		c.mu.Lock()
		for len(c.pending) == 0 && !c.closing {
			c.mu.Unlock()
			<-c.kick
			c.mu.Lock()
		}
		if len(c.pending) == 0 { // closing, all written
			c.mu.Unlock()
			return
		}
		b := c.pending
		c.pending = c.spare[:0]
		c.room.Broadcast()
		c.mu.Unlock()

		_, err := c.Conn.Write(b)

		c.mu.Lock()
		c.spare = b[:0]
		if err != nil {
			c.err = err
			c.pending = nil
			c.room.Broadcast()
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// Close writes what is queued (waiting at most 2 seconds) and closes the
// connection.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.closing = true
	started := c.started
	c.room.Broadcast()
	c.mu.Unlock()
	if started {
		select {
		case c.kick <- struct{}{}:
		default:
		}
		_ = c.Conn.SetWriteDeadline(time.Now().Add(closeFlush))
		<-c.done
	}
	return c.Conn.Close()
}
