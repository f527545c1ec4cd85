package main

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// The server logs a line per request. Written straight to stderr that is
// one system call per request, which under load costs the server about as
// much as answering the request (measured: half the handler's CPU time on
// GET /credentials/{id}). So log lines are gathered by a batchWriter and
// written when logBatchBytes wait, every logFlushInterval, and at once
// after a warning or an error (urgentHandler): a crash loses at most the
// last logFlushInterval of access lines, never an error.
const (
	logBatchBytes    = 32 << 10
	logFlushInterval = 100 * time.Millisecond
)

// batchWriter gathers writes and passes them on in batches. It is safe
// for concurrent use; every write reaches w whole, in order.
type batchWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// Write keeps p, and passes what waits on when it reaches logBatchBytes.
func (b *batchWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) >= logBatchBytes {
		return len(p), b.flushLocked()
	}
	return len(p), nil
}

// Flush passes what waits on.
func (b *batchWriter) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

func (b *batchWriter) flushLocked() error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.w.Write(b.buf)
	if cap(b.buf) > 4*logBatchBytes {
		b.buf = nil // one huge line does not pin its buffer
	} else {
		b.buf = b.buf[:0]
	}
	return err
}

// flushEvery flushes b every interval until ctx ends, then once more.
func (b *batchWriter) flushEvery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = b.Flush()
			return
		case <-t.C:
			_ = b.Flush()
		}
	}
}

// urgentHandler flushes its batchWriter after every record at warning
// level or above, so that problems are written when they happen.
type urgentHandler struct {
	slog.Handler
	w *batchWriter
}

func (h urgentHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := h.w.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h urgentHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return urgentHandler{h.Handler.WithAttrs(attrs), h.w}
}

func (h urgentHandler) WithGroup(name string) slog.Handler {
	return urgentHandler{h.Handler.WithGroup(name), h.w}
}

// startLogs returns a logger in format (text or json) whose lines are
// batched to w and flushed every logFlushInterval, and the function that
// stops the flushing after writing what is left.
func startLogs(format string, w io.Writer) (*slog.Logger, func(), error) {
	logs := &batchWriter{w: w}
	logger, err := newLogger(format, logs)
	if err != nil {
		return nil, nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); logs.flushEvery(ctx, logFlushInterval) }()
	return logger, func() { stop(); <-done }, nil
}

// plainText writes the records of a text log whose every key and string
// is plain (plainString) itself, into a pooled buffer and with one Write,
// as slog.TextHandler writes them: the request log's lines, one per
// request. Any other record, and the handlers WithAttrs and WithGroup
// return, are text's. (slog.TextHandler formats through a per-record
// state and writes under its own mutex, on top of batchWriter's; under
// load that was a twentieth of the server's CPU.)
type plainText struct {
	text slog.Handler // slog.NewTextHandler(w, nil)
	w    *batchWriter
}

func (h plainText) Enabled(ctx context.Context, l slog.Level) bool { return h.text.Enabled(ctx, l) }

func (h plainText) WithAttrs(attrs []slog.Attr) slog.Handler { return h.text.WithAttrs(attrs) }

func (h plainText) WithGroup(name string) slog.Handler { return h.text.WithGroup(name) }

// lineBuffers keeps plainText's line buffers.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (h plainText) Handle(ctx context.Context, r slog.Record) error {
	bp := lineBuffers.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 64<<10 {
			lineBuffers.Put(bp)
		}
	}()
	line, ok := appendPlainText((*bp)[:0], r)
	*bp = line
	if !ok {
		return h.text.Handle(ctx, r)
	}
	_, err := h.w.Write(line)
	return err
}

// appendPlainText appends r as slog.TextHandler (without options) writes
// it, and reports whether it could: a record with a time, whose message,
// attribute keys and string values are plain, and whose values are
// strings, integers and durations.
func appendPlainText(b []byte, r slog.Record) ([]byte, bool) {
	level := r.Level.String()
	if r.Time.IsZero() || !plainString(r.Message) || !plainString(level) {
		return b, false
	}
	b = append(b, "time="...)
	b = appendRFC3339Millis(b, r.Time.Round(0))
	b = append(b, " level="...)
	b = append(b, level...)
	b = append(b, " msg="...)
	b = append(b, r.Message...)
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		if !plainString(a.Key) {
			ok = false
			return false
		}
		b = append(b, ' ')
		b = append(b, a.Key...)
		b = append(b, '=')
		switch v := a.Value; v.Kind() {
		case slog.KindString:
			if ok = plainString(v.String()); ok {
				b = append(b, v.String()...)
			}
		case slog.KindInt64:
			b = strconv.AppendInt(b, v.Int64(), 10)
		case slog.KindDuration:
			b = append(b, v.Duration().String()...)
		default:
			ok = false
		}
		return ok
	})
	return append(b, '\n'), ok
}

// plainString reports whether slog.TextHandler writes s as it is, by a
// rule stricter than its own: not empty, printable ASCII only, and no
// space, '"', '=' or '\'.
func plainString(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '=' || c == '\\' {
			return false
		}
	}
	return true
}

// appendRFC3339Millis is slog's: t in RFC 3339 with exactly three digits
// of fraction.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...) // drop the 4th digit
}
