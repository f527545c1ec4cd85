package prefault

import (
	"bytes"
	"strconv"
)

// heapMapping returns the mapping of /proc/self/maps (maps) that holds
// addr, when it is a private, readable and writable anonymous mapping, as
// the runtime's heap is.
func heapMapping(maps []byte, addr uintptr) (span, bool) {
	for len(maps) > 0 {
		line, rest, _ := bytes.Cut(maps, []byte("\n"))
		maps = rest
		m, ok := parseMapping(line)
		if !ok || addr < m.start || addr >= m.end {
			continue
		}
		return m.span, m.heapLike
	}
	return span{}, false
}

// span is an address range [start, end).
type span struct{ start, end uintptr }

// mapping is a line of /proc/self/maps.
type mapping struct {
	span
	// heapLike is whether the mapping is private, readable, writable
	// and anonymous (inode 0).
	heapLike bool
}

// parseMapping parses a line of /proc/self/maps,
//
//	start-end perms offset dev inode [path]
//
// with start and end in hexadecimal, start below end.
func parseMapping(line []byte) (mapping, bool) {
	f := bytes.Fields(line)
	if len(f) < 5 {
		return mapping{}, false
	}
	lo, hi, ok := bytes.Cut(f[0], []byte("-"))
	if !ok {
		return mapping{}, false
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || start >= end || uint64(uintptr(end)) != end {
		return mapping{}, false
	}
	return mapping{
		span:     span{uintptr(start), uintptr(end)},
		heapLike: string(f[1]) == "rw-p" && string(f[4]) == "0",
	}, true
}
