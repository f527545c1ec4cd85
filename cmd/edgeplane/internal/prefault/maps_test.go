package prefault

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseMapping(t *testing.T) {
	tests := []struct {
		line string
		want mapping
		ok   bool
	}{
		{"c000000000-c004000000 rw-p 00000000 00:00 0 ", mapping{span{0xc000000000, 0xc004000000}, true}, true},
		{"c000000000-c004000000 rw-p 00000000 00:00 0                          [anon: Go: heap]", mapping{span{0xc000000000, 0xc004000000}, true}, true},
		{"00400000-00604000 r-xp 00000000 fe:00 9994350                            /tmp/prefault.test", mapping{span{0x400000, 0x604000}, false}, true},
		{"007b4000-007df000 rw-p 003b4000 fe:00 9994350                            /tmp/prefault.test", mapping{span{0x7b4000, 0x7df000}, false}, true},
		{"2b2cc8000000-2b2cc8c00000 ---p 00000000 00:00 0 ", mapping{span{0x2b2cc8000000, 0x2b2cc8c00000}, false}, true},
		{"7f14a8000000-7f14a8021000 rw-s 00000000 00:01 1234 /dev/zero (deleted)", mapping{span{0x7f14a8000000, 0x7f14a8021000}, false}, true},
		{"", mapping{}, false},
		{"c000000000-c004000000 rw-p 00000000 00:00", mapping{}, false}, // no inode
		{"c000000000 rw-p 00000000 00:00 0", mapping{}, false},
		{"c004000000-c000000000 rw-p 00000000 00:00 0", mapping{}, false}, // end before start
		{"c000000000-c000000000 rw-p 00000000 00:00 0", mapping{}, false}, // empty
		{"g000000000-c004000000 rw-p 00000000 00:00 0", mapping{}, false},
		{"c000000000-1c004000000000000 rw-p 00000000 00:00 0", mapping{}, false}, // beyond 64 bits
	}
	for _, tt := range tests {
		got, ok := parseMapping([]byte(tt.line))
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseMapping(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func TestHeapMapping(t *testing.T) {
	maps := []byte(`00400000-00604000 r-xp 00000000 fe:00 9994350 /tmp/prefault.test
007b4000-007df000 rw-p 003b4000 fe:00 9994350 /tmp/prefault.test
garbage
c000000000-c004000000 rw-p 00000000 00:00 0 
c004000000-c008000000 ---p 00000000 00:00 0 
7fce8dffd000-7fce8e7fd000 rw-p 00000000 00:00 0`)
	tests := []struct {
		addr uintptr
		want span
		ok   bool
	}{
		{0xc000000000, span{0xc000000000, 0xc004000000}, true},
		{0xc003ffffff, span{0xc000000000, 0xc004000000}, true},
		{0x7fce8e000000, span{0x7fce8dffd000, 0x7fce8e7fd000}, true},
		{0xc004000000, span{0xc004000000, 0xc008000000}, false}, // reserved, not mapped
		{0x7b5000, span{0x7b4000, 0x7df000}, false},             // the binary's data
		{0x500000, span{0x400000, 0x604000}, false},
		{0x100, span{}, false},
		{0xffffffffffff, span{}, false},
	}
	for _, tt := range tests {
		got, ok := heapMapping(maps, tt.addr)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("heapMapping(%#x) = %x, %v; want %x, %v", tt.addr, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzParseMapping: any line parses or is refused without a panic; what
// parses is a non-empty range, and the line the kernel would write for it
// parses the same.
func FuzzParseMapping(f *testing.F) {
	f.Add("c000000000-c004000000 rw-p 00000000 00:00 0 ")
	f.Add("00400000-00604000 r-xp 00000000 fe:00 9994350 /tmp/x")
	f.Add("c000000000-c004000000 rw-p 00000000 00:00 0 [anon: Go: heap]")
	f.Add("-")
	f.Fuzz(func(t *testing.T, line string) {
		m, ok := parseMapping([]byte(line))
		if !ok {
			return
		}
		if m.start >= m.end {
			t.Fatalf("parseMapping(%q) = [%#x, %#x): empty", line, m.start, m.end)
		}
		perms, inode := "r--p", "7"
		if m.heapLike {
			perms, inode = "rw-p", "0"
		}
		again, ok := parseMapping([]byte(fmt.Sprintf("%x-%x %s 00000000 00:00 %s", m.start, m.end, perms, inode)))
		if !ok || again != m {
			t.Fatalf("parseMapping(%q) = %+v, but the kernel's line for it parses to %+v, %v", line, m, again, ok)
		}
		if !strings.Contains(line, "-") {
			t.Fatalf("parseMapping(%q) parsed a line without a range", line)
		}
	})
}
