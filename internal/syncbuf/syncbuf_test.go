package syncbuf_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/edgeplane/edgeplane/internal/syncbuf"
)

func TestConcurrentWrites(t *testing.T) {
	var b syncbuf.Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Errorf("%d bytes written, want 800", len(got))
	}
}
