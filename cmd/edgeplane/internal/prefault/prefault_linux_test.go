//go:build linux

package prefault

import (
	"errors"
	"os"
	"runtime"
	"runtime/metrics"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newHeap returns a Heap that has populated the heap's newest mapping
// (in as many steps as MaxStep takes), skipping the test where the
// kernel has no MADV_POPULATE_WRITE.
func newHeap(tb testing.TB) *Heap {
	tb.Helper()
	h, err := New()
	if errors.Is(err, errors.ErrUnsupported) {
		tb.Skip(err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i == 0 || h.more; i++ {
		if i == 1000 {
			tb.Fatalf("%d steps have not populated the heap's newest mapping", i)
		}
		if _, err := h.Step(); err != nil {
			tb.Fatal(err)
		}
	}
	return h
}

// residentPages returns how many pages of b from address from on (b
// starts on a page boundary, as a large allocation does) are resident,
// and how many pages that is.
func residentPages(t *testing.T, b []byte, from uintptr) (resident, pages int) {
	t.Helper()
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(&b[0]))
	if from > start {
		b = b[(from-start+page-1)/page*page:]
	}
	if len(b) == 0 {
		return 0, 0
	}
	vec := make([]byte, (uintptr(len(b))+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal("mincore:", e)
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, len(vec)
}

// kept holds the tests' allocations until the tests end, so that the
// heap grows with each: freed, an allocation's memory would be reused.
var kept [][]byte

// grow returns an allocation that makes the runtime map at least n
// bytes, and the frontier: the end of what h has populated. What of the
// allocation lies beyond the frontier, at least n bytes, was mapped
// after h's last step. (Below it the allocation may reuse memory the
// heap had free; the runtime may have returned it to the system since,
// and h rightly leaves such memory alone.)
func grow(t *testing.T, h *Heap, n int) (b []byte, frontier uintptr) {
	t.Helper()
	for _, d := range h.done {
		frontier = max(frontier, d.end)
	}
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	b = make([]byte, n+int(s[0].Value.Uint64()+s[1].Value.Uint64()))
	kept = append(kept, b)
	if end := uintptr(unsafe.Pointer(&b[0])) + uintptr(len(b)); end < frontier+uintptr(n) {
		t.Fatalf("an allocation of %d bytes ends at %#x, less than %d bytes beyond the heap's populated frontier %#x: the test cannot tell what a step does", len(b), end, n, frontier)
	}
	return b, frontier
}

func TestStepPopulatesNewHeap(t *testing.T) {
	h := newHeap(t)
	b, frontier := grow(t, h, 16<<20)
	if r, pages := residentPages(t, b, frontier); r == pages {
		t.Fatalf("all %d pages of the allocation mapped since the last step are resident before the step: the test cannot tell what a step does", pages)
	}
	n, err := h.Step()
	if err != nil {
		t.Fatal(err)
	}
	r, pages := residentPages(t, b, frontier)
	if r != pages {
		t.Errorf("after a step, %d of the %d pages of the allocation mapped since the last step are resident; want all", r, pages)
	}
	if n < pages*os.Getpagesize() {
		t.Errorf("Step populated %d bytes; the allocation has %d pages beyond the last", n, pages)
	}
	runtime.KeepAlive(b)
}

// TestStepPopulatesOnce: what a step populated and the system later took
// back (as the runtime's scavenger does) stays out; memory mapped since
// is populated.
func TestStepPopulatesOnce(t *testing.T) {
	h := newHeap(t)
	b, bf := grow(t, h, 8<<20)
	if _, err := h.Step(); err != nil {
		t.Fatal(err)
	}
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(&b[0]))
	released := b[(max(bf, start)-start+page-1)/page*page:]
	if err := unix.Madvise(released, unix.MADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	c, cf := grow(t, h, 8<<20)
	if _, err := h.Step(); err != nil {
		t.Fatal(err)
	}
	if r, _ := residentPages(t, released, 0); r != 0 {
		t.Errorf("%d pages released after a step are resident again after the next", r)
	}
	if r, pages := residentPages(t, c, cf); r != pages {
		t.Errorf("%d of %d pages mapped after the first step are resident after the second; want all", r, pages)
	}
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
}

// TestStepMaxStep: a step populates at most maxStep bytes, and the next
// steps go on where it stopped though the runtime mapped nothing since.
func TestStepMaxStep(t *testing.T) {
	h := newHeap(t)
	h.maxStep = 1 << 20
	b, frontier := grow(t, h, 8<<20)
	for i := range 100 {
		n, err := h.Step()
		if err != nil {
			t.Fatal(err)
		}
		if n > 1<<20 {
			t.Fatalf("step %d populated %d bytes; the most is %d", i, n, 1<<20)
		}
		if n == 0 {
			break
		}
	}
	if r, pages := residentPages(t, b, frontier); r != pages {
		t.Errorf("after the steps, %d of %d pages are resident; want all", r, pages)
	}
	runtime.KeepAlive(b)
}

// TestStepLeavesOtherMappings: memory that is not the heap's stays as it
// is.
func TestStepLeavesOtherMappings(t *testing.T) {
	h := newHeap(t)
	m, err := unix.Mmap(-1, 0, 4<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	b, frontier := grow(t, h, 8<<20) // the heap grows, so the step looks
	if _, err := h.Step(); err != nil {
		t.Fatal(err)
	}
	if r, pages := residentPages(t, b, frontier); r != pages {
		t.Fatalf("%d of %d new pages of the heap are resident after a step; want all", r, pages)
	}
	if r, _ := residentPages(t, m, 0); r != 0 {
		t.Errorf("%d pages of a mapping of the program's own are resident after a step", r)
	}
}

// TestStepWithoutGrowth: a step when the runtime has mapped nothing
// since the last does not read the mappings, and populates nothing.
func TestStepWithoutGrowth(t *testing.T) {
	h := newHeap(t)
	h.buf = nil
	if n, err := h.Step(); err != nil || n != 0 {
		t.Errorf("Step() = %d, %v; want 0, nil", n, err)
	}
	if h.buf != nil {
		t.Error("a step read the mappings though the runtime had mapped nothing since the last")
	}
}
