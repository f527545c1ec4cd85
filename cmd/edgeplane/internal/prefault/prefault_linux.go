//go:build linux

package prefault

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Heap populates the pages the runtime maps for the Go heap (see the
// package doc). Its methods are safe for concurrent use.
type Heap struct {
	mu sync.Mutex
	// done holds the ranges populated so far, at most one per heap
	// mapping: a range's end is where the next step in its mapping
	// starts.
	done []span
	// total samples the runtime's mapped memory; last is its value at
	// the last step (0 before the first: a running program has mapped
	// memory), and more whether that step left part of its mapping for
	// the next (MaxStep).
	total []metrics.Sample
	last  uint64
	more  bool
	buf   []byte // /proc/self/maps, reused
	// probe is the newest object of a step: its mapping is the heap's.
	probe   *[64]byte
	maxStep uintptr
}

// New returns a Heap, or an error wrapping [errors.ErrUnsupported] where
// the kernel cannot populate a range (before Linux 5.14) or
// /proc/self/maps cannot be read.
func New() (*Heap, error) {
	page := uintptr(os.Getpagesize())
	b := make([]byte, 2*page)
	off := -uintptr(unsafe.Pointer(&b[0])) & (page - 1) // to the page boundary in b
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(unsafe.Pointer(&b[off])), page, unix.MADV_POPULATE_WRITE); e != 0 {
		return nil, fmt.Errorf("prefault: madvise(MADV_POPULATE_WRITE), Linux 5.14 or later: %w: %w", errors.ErrUnsupported, e)
	}
	h := &Heap{total: []metrics.Sample{{Name: "/memory/classes/total:bytes"}}, maxStep: MaxStep}
	var err error
	if h.buf, err = readMaps(h.buf); err != nil {
		return nil, fmt.Errorf("prefault: %w: %w", errors.ErrUnsupported, err)
	}
	return h, nil
}

// Step populates what the heap's newest mapping holds beyond what
// earlier steps populated, up to MaxStep bytes, and returns how many
// bytes it populated. It looks at the mappings only when the runtime has
// mapped memory since the last step (or that step stopped at MaxStep).
func (h *Heap) Step() (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	metrics.Read(h.total)
	total := h.total[0].Value.Uint64()
	if total == h.last && !h.more {
		return 0, nil
	}
	h.last, h.more = total, false
	h.probe = new([64]byte)
	probe := uintptr(unsafe.Pointer(h.probe))
	var err error
	if h.buf, err = readMaps(h.buf); err != nil {
		return 0, fmt.Errorf("prefault: %w", err)
	}
	m, ok := heapMapping(h.buf, probe)
	if !ok {
		return 0, nil
	}
	// Start after the last populated range inside m, and forget the
	// ranges inside it: m's becomes the one.
	from := m.start
	kept := h.done[:0]
	for _, d := range h.done {
		if d.start >= m.start && d.end <= m.end {
			from = max(from, d.end)
		} else {
			kept = append(kept, d)
		}
	}
	n := min(m.end-from, h.maxStep)
	if n > 0 {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, from, n, unix.MADV_POPULATE_WRITE); e != 0 {
			h.done = append(kept, span{m.start, from})
			return 0, fmt.Errorf("prefault: madvise(MADV_POPULATE_WRITE) of %d bytes: %w", n, e)
		}
	}
	h.done = append(kept, span{m.start, from + n})
	h.more = from+n < m.end
	return int(n), nil
}

// readMaps reads /proc/self/maps into buf, reusing its array.
func readMaps(buf []byte) ([]byte, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return buf, err
	}
	defer f.Close()
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
