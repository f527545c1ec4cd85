//go:build linux

package prefault

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkFreshPages makes 4 MiB of fresh anonymous memory resident per
// op, by writing to each page (a fault each: what the heap's growth costs
// a program) or by populating it first (what a Heap does ahead of the
// program's writes), and reports the cost per 4 KiB page.
func BenchmarkFreshPages(b *testing.B) {
	const size = 4 << 20
	page := os.Getpagesize()
	for _, populate := range []bool{false, true} {
		name := "fault"
		if populate {
			name = "populate"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
				if err != nil {
					b.Fatal(err)
				}
				if populate {
					if err := unix.Madvise(m, unix.MADV_POPULATE_WRITE); err != nil {
						b.Skip("MADV_POPULATE_WRITE:", err)
					}
				}
				for i := 0; i < size; i += page {
					m[i] = 1
				}
				if err := unix.Munmap(m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size/page), "ns/page")
		})
	}
}

// BenchmarkStep is a step when the runtime has mapped nothing since the
// last: what a Heap costs every interval of Run while the heap does not
// grow.
func BenchmarkStep(b *testing.B) {
	h := newHeap(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Step(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepReadMaps is a step that reads /proc/self/maps and finds
// nothing new to populate: what a step costs when the runtime has mapped
// memory for something other than the heap's growth.
func BenchmarkStepReadMaps(b *testing.B) {
	h := newHeap(b)
	b.ReportAllocs()
	for b.Loop() {
		h.more = true // look again
		if _, err := h.Step(); err != nil {
			b.Fatal(err)
		}
	}
}
