// Package prefault makes the pages the Go runtime maps for its heap
// resident in bulk, before the program first writes to them.
//
// When the heap grows, the runtime maps new address space and the first
// write to each 4 KiB page of it faults. A fault is cheap on bare metal
// (well under a microsecond) but not in every virtual machine: where the
// guest's exceptions go through the hypervisor it costs 10–15 µs, and a
// server whose heap grows with its data (every stored record is new
// memory) pays that on the request path, about once per 4 KiB it keeps.
// madvise(MADV_POPULATE_WRITE) (Linux 5.14) makes a whole range resident
// in one call, at a small fraction of a fault per page (see
// BenchmarkFreshPages), and leaves every byte as it was: pages not yet
// written read as zeros before and after, as the runtime expects of
// memory it has just mapped.
//
// A [Heap] finds the mapping that holds the heap's newest allocations in
// /proc/self/maps, and populates what of it has not been populated yet,
// only when the runtime's mapped memory has grown since the last look
// (runtime/metrics), and at most [MaxStep] bytes a step. It populates
// each byte of a mapping at most once: pages the runtime later returns
// to the system (its scavenger) are not made resident again, so the
// process's memory is what the runtime asked for, plus at most the part
// of the newest mapping it has not used yet. That part is small (the
// runtime maps its heap in 4 MiB steps) unless the program makes one huge
// allocation and writes little of it, which is then made resident whole,
// MaxStep at a time: a program that does should not use a Heap. (The
// edgeplane server's largest allocation is bounded by its request size
// limits.) It is the JVM's AlwaysPreTouch, made incremental for a heap
// that grows.
//
// The heap's newest mapping is the one holding a fresh small object. When
// the runtime cannot extend its heap's address range and maps a region
// apart, that region is populated once the runtime's small objects reach
// it; until then it faults as it would without a Heap.
//
// Where MADV_POPULATE_WRITE is missing (other systems, older kernels),
// [New] returns an error wrapping [errors.ErrUnsupported] and nothing
// changes.
package prefault
