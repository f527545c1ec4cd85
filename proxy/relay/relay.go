package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// ErrIdle is the error [Pipe] returns when no byte moved in either
// direction for [Options.IdleTimeout].
var ErrIdle = errors.New("relay: idle timeout: no bytes moved in either direction")

// ErrOptions means an [Options] field is out of range.
var ErrOptions = errors.New("relay: invalid options")

// BufferSize is the size of the pooled buffer a direction copies through
// when it cannot splice.
const BufferSize = 32 << 10

// Options configures a [Pipe]. The zero value means no idle timeout.
type Options struct {
	// IdleTimeout closes the pipe once no byte has moved in either
	// direction for this long (see the package's Limits for the
	// precision); 0 means never. It must not be negative.
	IdleTimeout time.Duration
}

// Side names one of the two connections of a [Pipe].
type Side uint8

// The sides of a pipe.
const (
	// NoSide means neither side: the pipe was ended from outside (its
	// context, the idle timeout) before either direction ended.
	NoSide Side = iota
	// Client is the client connection (Pipe's first).
	Client
	// Upstream is the upstream connection (Pipe's second).
	Upstream
)

// String returns "client", "upstream" or "none".
func (s Side) String() string {
	switch s {
	case Client:
		return "client"
	case Upstream:
		return "upstream"
	}
	return "none"
}

// Stats says what a [Pipe] moved and how it ended.
type Stats struct {
	// ClientToUpstream is the number of bytes written to the upstream.
	ClientToUpstream int64
	// UpstreamToClient is the number of bytes written to the client.
	UpstreamToClient int64
	// First is the side whose direction ended first: Client when the
	// client's read ended (EOF or error) or the write of what it sent
	// failed; [NoSide] when the pipe was ended from outside first.
	First Side
	// FirstErr is why the First direction ended: nil for EOF (a
	// half-close), else its error.
	FirstErr error
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, BufferSize); return &b }}

// Pipe copies bytes both ways between client and upstream until both
// directions are done, then closes both connections and returns what
// moved. It owns both connections from the call on.
//
// When one side's read reaches EOF, Pipe half-closes the other side's
// write (CloseWrite, as *net.TCPConn, *tls.Conn and *net.UnixConn have)
// and goes on copying the other direction; a connection without a
// CloseWrite method is not half-closed, and sees its EOF when the pipe
// ends. An error in either direction (other than EOF), the idle timeout,
// or ctx being done closes both connections at once.
//
// Pipe returns nil when both directions ended with EOF; [ErrIdle] for the
// idle timeout; an error wrapping ctx's cause when ctx ended the pipe; else
// the first direction's error, wrapped.
//
// Pipe uses the read deadlines of both connections (when
// opts.IdleTimeout is set) and sets no write deadlines.
func Pipe(ctx context.Context, client, upstream net.Conn, opts Options) (Stats, error) {
	if opts.IdleTimeout < 0 {
		client.Close()
		upstream.Close()
		return Stats{}, fmt.Errorf("%w: idleTimeout is %v: it must be 0 (none) or more", ErrOptions, opts.IdleTimeout)
	}
	now := time.Now()
	p := &pipe{
		conns: [2]net.Conn{client, upstream},
		idle:  opts.IdleTimeout,
		now:   time.Now,
	}
	p.dirs[0] = direction{from: Client, src: client, dst: upstream, quiet: now, covered: now}
	p.dirs[1] = direction{from: Upstream, src: upstream, dst: client, quiet: now, covered: now}

	stop := context.AfterFunc(ctx, func() {
		p.end(fmt.Errorf("relay: %w", context.Cause(ctx)))
	})
	defer stop()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.run(&p.dirs[1])
	}()
	p.run(&p.dirs[0])
	wg.Wait()

	p.end(nil)
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{
		ClientToUpstream: p.dirs[0].n,
		UpstreamToClient: p.dirs[1].n,
		First:            p.first,
		FirstErr:         p.firstErr,
	}, p.cause
}

type pipe struct {
	conns [2]net.Conn
	idle  time.Duration
	dirs  [2]direction
	now   func() time.Time // time.Now; tests inject a clock

	mu       sync.Mutex
	ended    bool  // both conns are closed
	cause    error // why the pipe ended early; nil for EOF both ways
	first    Side
	firstErr error
}

// direction copies src to dst. n is its own goroutine's; the idle
// bookkeeping (quiet, covered, done) is under pipe.mu.
type direction struct {
	from     Side
	src, dst net.Conn
	n        int64

	// quiet is when this direction last moved a byte (or, on the splice
	// path, the end of the window in which it last did); covered is when
	// its last window ended: no byte moved in [quiet, covered].
	quiet, covered time.Time
	// windowEnd is the read deadline of its current window: a direction
	// still in its window an idle timeout past it is stuck writing to a
	// peer that does not read.
	windowEnd time.Time
	done      bool
}

// end closes both connections once; a first non-nil cause is kept.
func (p *pipe) end(cause error) {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.ended = true
	if p.cause == nil {
		p.cause = cause
	}
	p.mu.Unlock()
	p.conns[0].Close()
	p.conns[1].Close()
}

// run copies one direction until EOF or an error, in windows of half the
// idle timeout: each window ends with a read timeout, after which the
// direction reports whether it moved bytes and the pipe checks for idle.
func (p *pipe) run(d *direction) {
	window := p.idle / 2
	if window == 0 {
		window = p.idle // 1 ns: still a timeout
	}
	for {
		if window > 0 {
			end := time.Now().Add(window)
			p.mu.Lock()
			d.windowEnd = end
			p.mu.Unlock()
			d.src.SetReadDeadline(end)
		}
		n, last, err := copyOnce(d.dst, d.src, window > 0)
		d.n += n
		if window > 0 && isTimeout(err) {
			if p.report(d, n > 0, last) {
				p.end(ErrIdle)
				p.finish(d, false, last, err)
				return
			}
			continue
		}
		// Finish before the half-close, which lets the other side end.
		p.finish(d, n > 0, last, err)
		if err == nil {
			if cw, ok := d.dst.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
			}
		}
		if err != nil {
			p.end(fmt.Errorf("relay: copying from the %v: %w", d.from, err))
		}
		return
	}
}

// finish marks d done (moved and last as for report); the first
// direction to end, while the pipe has not been ended from outside, is
// Stats.First.
func (p *pipe) finish(d *direction, moved bool, last time.Time, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if moved && !last.IsZero() {
		d.quiet = last
	}
	d.done = true
	if p.first == NoSide && !p.ended {
		p.first, p.firstErr = d.from, err
	}
}

// report records d's window and reports whether the pipe has been idle
// (no byte either way) for the idle timeout, by what both directions
// know: a direction still in a window only vouches for the time up to the
// end of its last one.
func (p *pipe) report(d *direction, moved bool, last time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if moved {
		d.quiet = last
	}
	d.covered = now
	a, b := &p.dirs[0], &p.dirs[1]
	quietSince := a.quiet
	if b.quiet.After(quietSince) {
		quietSince = b.quiet
	}
	coveredTo := now
	for _, x := range []*direction{a, b} {
		// A done direction vouches for ever; so does one stuck in a
		// write for an idle timeout past its window's end (its peer
		// took that long without taking a buffer: idle too).
		if !x.done && now.Sub(x.windowEnd) < p.idle && x.covered.Before(coveredTo) {
			coveredTo = x.covered
		}
	}
	return coveredTo.Sub(quietSince) >= p.idle
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// copyOnce copies src to dst until EOF (nil error), an error or a read
// timeout, and returns the bytes written and, when track is set, when the
// last byte moved (on the splice paths: when the copy returned).
//
// TCP to TCP (and Unix to TCP) it is dst.ReadFrom(src), which Linux does
// with splice(2); to a TCP dst from any other src with a WriteTo method
// (a conn wrapper that knows its own fast path) it is src.WriteTo(dst);
// to any other dst with a ReadFrom method (likewise) dst.ReadFrom(src);
// otherwise it is a loop through a pooled [BufferSize] buffer.
func copyOnce(dst, src net.Conn, track bool) (int64, time.Time, error) {
	if tc, ok := dst.(*net.TCPConn); ok {
		var n int64
		var err error
		switch s := src.(type) {
		case *net.TCPConn, *net.UnixConn:
			n, err = tc.ReadFrom(s)
		case io.WriterTo:
			n, err = s.WriteTo(tc)
		default:
			return copyBuffer(dst, src, track)
		}
		var last time.Time
		if track && n > 0 {
			last = time.Now()
		}
		return n, last, err
	}
	if rf, ok := dst.(io.ReaderFrom); ok {
		// A conn wrapper that knows its own fast path for what is
		// written to it (an agent's stream: large frames).
		n, err := rf.ReadFrom(src)
		var last time.Time
		if track && n > 0 {
			last = time.Now()
		}
		return n, last, err
	}
	return copyBuffer(dst, src, track)
}

func copyBuffer(dst, src net.Conn, track bool) (int64, time.Time, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var written int64
	var last time.Time
	for {
		nr, rerr := src.Read(buf)
		if nr > 0 {
			nw, werr := dst.Write(buf[:nr])
			written += int64(nw)
			if track {
				last = time.Now()
			}
			if werr != nil {
				return written, last, werr
			}
			if nw != nr {
				return written, last, io.ErrShortWrite
			}
		}
		if rerr == io.EOF {
			return written, last, nil
		}
		if rerr != nil {
			return written, last, rerr
		}
	}
}
