package main

import (
	"context"
	"io"
	"log/slog"
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
