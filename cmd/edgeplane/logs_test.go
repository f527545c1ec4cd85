package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBatchWriter: lines wait until a batch is full or a flush; every
// line arrives whole and in order, also from concurrent writers.
func TestBatchWriter(t *testing.T) {
	var out bytes.Buffer
	b := &batchWriter{w: &out}
	b.Write([]byte("one\n"))
	if out.Len() != 0 {
		t.Fatalf("a short line was written at once: %q", out.String())
	}
	must(t, b.Flush())
	if out.String() != "one\n" {
		t.Fatalf("after Flush: %q", out.String())
	}
	out.Reset()
	line := strings.Repeat("x", 1023) + "\n"
	for range logBatchBytes / len(line) {
		b.Write([]byte(line))
	}
	if out.Len() != logBatchBytes {
		t.Errorf("a full batch: %d bytes written, want %d", out.Len(), logBatchBytes)
	}

	out.Reset()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				b.Write([]byte(strings.Repeat(string(rune('a'+w)), 1+i%50) + "\n"))
			}
		})
	}
	wg.Wait()
	must(t, b.Flush())
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4000 {
		t.Fatalf("%d lines arrived, want 4000", len(lines))
	}
	for _, l := range lines {
		if strings.Trim(l, l[:1]) != "" {
			t.Fatalf("a line arrived mixed with another: %q", l)
		}
	}
}

// TestUrgentHandler: an info line waits for its batch; a warning is
// written at once, with what waited before it.
func TestUrgentHandler(t *testing.T) {
	var out bytes.Buffer
	b := &batchWriter{w: &out}
	log, err := newLogger("json", b)
	must(t, err)
	log.With("component", "test").Info("request")
	if out.Len() != 0 {
		t.Fatalf("an info line was written at once: %q", out.String())
	}
	log.WithGroup("g").Warn("trouble")
	if s := out.String(); !strings.Contains(s, `"msg":"request"`) || !strings.Contains(s, `"msg":"trouble"`) {
		t.Errorf("after a warning: %q; want both lines", s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.flushEvery(ctx, logFlushInterval) }()
	log.Info("last")
	cancel()
	<-done
	if !strings.Contains(out.String(), `"msg":"last"`) {
		t.Errorf("a line waiting when the writer stopped was lost: %q", out.String())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzPlainText: plainText writes every record exactly as
// slog.TextHandler does: the request log's records itself, the others
// through the TextHandler.
func FuzzPlainText(f *testing.F) {
	f.Add("request", "method", "GET", "/credentials/cr_1", int64(200), int64(1234567), "op_1", int64(1795000000123456789), 0)
	f.Add("request", "path", "/a b", "x=y", int64(-1), int64(0), "", int64(0), 4)
	f.Add("request", "path", "/a b", "ok", int64(1), int64(1), "op", int64(1), 0)
	f.Add("request", "method", "GET", "/\x7f", int64(1), int64(1), "op", int64(1), 0)
	f.Add("internal error", "err", `"quoted"`, "é\u00a0", int64(7), int64(-5), "back\\slash", int64(-62135596800000000), 8)
	f.Fuzz(func(t *testing.T, msg, key, s1, s2 string, n, d int64, s3 string, nanos int64, level int) {
		r := slog.NewRecord(time.Unix(0, nanos).UTC(), slog.Level(level), msg, 0)
		r.AddAttrs(slog.String(key, s1), slog.String("path", s2), slog.Int64("status", n), slog.Duration("duration", time.Duration(d)), slog.String("operation_id", s3))
		var want, got bytes.Buffer
		if err := slog.NewTextHandler(&want, nil).Handle(context.Background(), r); err != nil {
			t.Skip(err)
		}
		w := &batchWriter{w: &got}
		h := plainText{slog.NewTextHandler(w, nil), w}
		if err := h.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if got.String() != want.String() {
			t.Errorf("plainText wrote\n%q\nslog.TextHandler writes\n%q", got.String(), want.String())
		}
	})
}

// TestPlainTextFormatsRequestLines: the request log's lines are formatted
// by plainText itself (not handed to the TextHandler), and a record with
// any other kind of value is handed over.
func TestPlainTextFormatsRequestLines(t *testing.T) {
	r := slog.NewRecord(time.Date(2026, 11, 23, 12, 0, 0, 5e6, time.UTC), slog.LevelInfo, "request", 0)
	r.AddAttrs(slog.String("method", "GET"), slog.String("path", "/credentials"), slog.Int("status", 200),
		slog.Duration("duration", 1500*time.Microsecond), slog.String("operation_id", "op_1"))
	line, ok := appendPlainText(nil, r)
	if want := "time=2026-11-23T12:00:00.005Z level=INFO msg=request method=GET path=/credentials status=200 duration=1.5ms operation_id=op_1\n"; !ok || string(line) != want {
		t.Errorf("appendPlainText = %q, %v; want %q", line, ok, want)
	}
	r.AddAttrs(slog.Bool("retried", true))
	if _, ok := appendPlainText(nil, r); ok {
		t.Error("a record with a bool was formatted by plainText")
	}
}

// BenchmarkRequestLine measures a request log line through slog's
// TextHandler and through plainText, both into a batchWriter, from both
// cores at once.
func BenchmarkRequestLine(b *testing.B) {
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
	r.AddAttrs(slog.String("method", "GET"), slog.String("path", "/credentials/cr_0ERe6j4ClRDcz8lozSM8f4AKmxg"), slog.Int("status", 200),
		slog.Duration("duration", 1234567), slog.String("operation_id", "op_0ERe6j4ClRDcz8lozSM8f4AKmxg"))
	for name, h := range map[string]func(w *batchWriter) slog.Handler{
		"TextHandler": func(w *batchWriter) slog.Handler { return slog.NewTextHandler(w, nil) },
		"plainText":   func(w *batchWriter) slog.Handler { return plainText{slog.NewTextHandler(w, nil), w} },
	} {
		b.Run(name, func(b *testing.B) {
			h := h(&batchWriter{w: io.Discard})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_ = h.Handle(context.Background(), r)
				}
			})
		})
	}
}
