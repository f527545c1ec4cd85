package sni

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"time"
)

// DefaultMaxBytes is the number of bytes [Peek] reads at most when
// [Options.MaxBytes] is zero: 68 KiB, room for the largest ClientHello
// crypto/tls accepts (a 65,540-byte handshake message, 65,565 bytes in
// full-size records) and a little more.
const DefaultMaxBytes = 68 << 10

// DefaultTimeout is how long [Peek] waits for a whole ClientHello when
// [Options.Timeout] is zero.
const DefaultTimeout = 10 * time.Second

// Sentinel errors. Every error [Peek] returns wraps one of them (or a
// context's error).
var (
	// ErrNotTLS means the connection does not start with a TLS handshake
	// record: a plain-HTTP client, another protocol, random bytes.
	ErrNotTLS = errors.New("sni: not a TLS connection: the first bytes are not a TLS handshake record")
	// ErrTruncated means the client closed the connection (or its write
	// side) before a whole ClientHello arrived.
	ErrTruncated = errors.New("sni: connection closed before a whole ClientHello arrived")
	// ErrTimeout means no whole ClientHello arrived within
	// [Options.Timeout]; it is also os.ErrDeadlineExceeded.
	ErrTimeout = errors.New("sni: no whole ClientHello within the timeout")
	// ErrTooLarge means [Options.MaxBytes] bytes were read without a whole
	// ClientHello.
	ErrTooLarge = errors.New("sni: ClientHello larger than the limit")
	// ErrBadHello means the connection starts with TLS records that
	// crypto/tls rejects as a ClientHello (malformed, or another message).
	ErrBadHello = errors.New("sni: malformed ClientHello")
	// ErrOptions means an [Options] field is out of range.
	ErrOptions = errors.New("sni: invalid options")
)

// Options bounds a [Peek]. The zero value means the defaults.
type Options struct {
	// MaxBytes is the most bytes Peek reads from the conn; 0 means
	// [DefaultMaxBytes]. It must not be negative.
	MaxBytes int
	// Timeout is how long Peek waits for the whole ClientHello; 0 means
	// [DefaultTimeout]. It must not be negative.
	Timeout time.Duration
}

func (o Options) resolve() (Options, error) {
	if o.MaxBytes < 0 {
		return o, fmt.Errorf("%w: maxBytes is %d: it must be 0 (the default, %d) or more", ErrOptions, o.MaxBytes, DefaultMaxBytes)
	}
	if o.Timeout < 0 {
		return o, fmt.Errorf("%w: timeout is %v: it must be 0 (the default, %v) or more", ErrOptions, o.Timeout, DefaultTimeout)
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	return o, nil
}

// Hello is what a ClientHello says. Its slices are copies: a Hello may be
// kept and shared.
type Hello struct {
	// ServerName is the server_name (SNI) the client sent, exactly as
	// sent (not lower-cased), or "" when it sent none.
	ServerName string
	// Protocols are the ALPN protocols offered, in the client's order
	// ("h2", "http/1.1"), or nil.
	Protocols []string
	// Versions are the TLS versions offered (tls.VersionTLS13, ...), in
	// the client's order, GREASE values included: the supported_versions
	// extension, or for a client without one the versions up to its
	// legacy version.
	Versions []uint16
	// MaxVersion is the highest version in Versions, GREASE values
	// ignored.
	MaxVersion uint16
	// CipherSuites are the cipher suites offered, in the client's order.
	CipherSuites []uint16
	// Extensions are the extension types the hello carries, in order.
	Extensions []uint16
	// ECH reports an encrypted_client_hello extension (0xfe0d): the
	// client uses Encrypted Client Hello (or GREASEs it), and ServerName
	// is the outer, public name.
	ECH bool
	// Bytes is how many bytes Peek read from the conn (the hello and
	// anything after it that arrived with it); the returned conn replays
	// them.
	Bytes int
}

const extensionECH = 0xfe0d

func newHello(chi *tls.ClientHelloInfo) *Hello {
	h := &Hello{
		ServerName:   chi.ServerName,
		Protocols:    slices.Clone(chi.SupportedProtos),
		Versions:     slices.Clone(chi.SupportedVersions),
		CipherSuites: slices.Clone(chi.CipherSuites),
		Extensions:   slices.Clone(chi.Extensions),
		ECH:          slices.Contains(chi.Extensions, extensionECH),
	}
	for _, v := range h.Versions {
		if !isGREASE(v) && v > h.MaxVersion {
			h.MaxVersion = v
		}
	}
	return h
}

// isGREASE reports a GREASE value (RFC 8701): 0x0a0a, 0x1a1a, ... 0xfafa.
func isGREASE(v uint16) bool {
	return v&0x0f0f == 0x0a0a && v>>8 == v&0xff
}

// errStop ends the handshake from GetConfigForClient once the hello is in.
var errStop = errors.New("sni: hello captured")

// errTooLarge is what the recorder's Read returns past the limit.
var errTooLarge = errors.New("sni: read limit reached")

// errNoWrite is what the recorder's Write returns: the peek never writes.
var errNoWrite = errors.New("sni: the peek does not write")

// aLongTimeAgo is a read deadline in the past: it wakes a blocked Read.
var aLongTimeAgo = time.Unix(1, 0)

// Peek reads the TLS ClientHello at the start of conn and returns what it
// says, with a conn that replays every byte read so far and then reads on
// from conn. The returned conn passes everything else (writes, Close,
// deadlines, addresses) through to conn, and has a CloseWrite method
// exactly when conn has one (CloseWrite() error, as *net.TCPConn).
//
// Peek reads at most opts.MaxBytes bytes and waits at most opts.Timeout
// (see the package's Limits), or until ctx is done; it never writes to
// conn. On error it returns an error wrapping one of the package's
// sentinels (see Errors) and still the replaying conn, so a caller may,
// say, answer a plain-HTTP client; Hello is then nil. Peek never closes
// conn: the caller owns it, and the returned conn, from then on. Peek
// clears conn's read deadline before returning; only bad Options give a
// nil conn, and then conn is untouched.
func Peek(ctx context.Context, conn net.Conn, opts Options) (*Hello, net.Conn, error) {
	opts, err := opts.resolve()
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(opts.Timeout)
	ctxDeadline := false
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, ctxDeadline = d, true
	}
	rec := &recorder{Conn: conn, max: opts.MaxBytes}
	if err := conn.SetReadDeadline(deadline); err != nil {
		return nil, newConn(conn, nil), fmt.Errorf("sni: setting the read deadline: %w", err)
	}
	// A cancelled ctx wakes the blocked read by moving the deadline to the
	// past; wake is waited for before the deadline is cleared, so it
	// cannot land after.
	var wake sync.WaitGroup
	wake.Add(1)
	stop := context.AfterFunc(ctx, func() {
		defer wake.Done()
		conn.SetReadDeadline(aLongTimeAgo)
	})

	var hello *Hello
	srv := tls.Server(rec, &tls.Config{
		GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
			hello = newHello(chi)
			return nil, errStop
		},
	})
	herr := srv.HandshakeContext(context.Background())

	if !stop() {
		wake.Wait()
	}
	// Clear the peek's deadline; an error here (conn closed) shows on the
	// caller's next read.
	conn.SetReadDeadline(time.Time{})
	out := newConn(conn, rec.buf)
	if hello != nil {
		hello.Bytes = len(rec.buf)
		return hello, out, nil
	}
	return nil, out, classify(ctx, ctxDeadline, rec, herr)
}

// classify maps the handshake's error to the package's sentinels.
// ctxDeadline says the read deadline was ctx's: its expiry is then also
// context.DeadlineExceeded, even if the read woke before ctx was done.
func classify(ctx context.Context, ctxDeadline bool, rec *recorder, err error) error {
	var rhe tls.RecordHeaderError
	switch {
	case rec.overflow:
		return fmt.Errorf("%w: read %d bytes", ErrTooLarge, len(rec.buf))
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w: read %d bytes: %w", ErrTimeout, len(rec.buf), context.Cause(ctx))
	case ctx.Err() != nil:
		return fmt.Errorf("sni: peeking the ClientHello: %w", context.Cause(ctx))
	case errors.Is(err, os.ErrDeadlineExceeded) && ctxDeadline:
		return fmt.Errorf("%w: read %d bytes: %w: %w", ErrTimeout, len(rec.buf), os.ErrDeadlineExceeded, context.DeadlineExceeded)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w: read %d bytes: %w", ErrTimeout, len(rec.buf), os.ErrDeadlineExceeded)
	case errors.As(err, &rhe):
		return fmt.Errorf("%w (%s)", ErrNotTLS, rhe.Msg)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: read %d bytes", ErrTruncated, len(rec.buf))
	case err == nil:
		// Unreachable: GetConfigForClient always fails the handshake.
		return fmt.Errorf("%w: the handshake ended without a hello", ErrBadHello)
	default:
		return fmt.Errorf("%w: %w", ErrBadHello, err)
	}
}

// recorder is the conn crypto/tls reads the hello from: it records every
// byte read, reads at most max bytes in all, and refuses writes (so no
// alert reaches the client) and Close.
type recorder struct {
	net.Conn
	buf      []byte
	max      int
	overflow bool
}

func (r *recorder) Read(p []byte) (int, error) {
	room := r.max - len(r.buf)
	if room <= 0 {
		r.overflow = true
		return 0, errTooLarge
	}
	if len(p) > room {
		p = p[:room]
	}
	n, err := r.Conn.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

func (r *recorder) Write([]byte) (int, error) { return 0, errNoWrite }

func (r *recorder) Close() error { return nil }

// SetDeadline and the others are no-ops: Peek owns the read deadline.
func (r *recorder) SetDeadline(time.Time) error      { return nil }
func (r *recorder) SetReadDeadline(time.Time) error  { return nil }
func (r *recorder) SetWriteDeadline(time.Time) error { return nil }
