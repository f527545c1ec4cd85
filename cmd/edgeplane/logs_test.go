package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
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
