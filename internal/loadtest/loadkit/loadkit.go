// Package loadkit holds what the load harnesses (internal/loadtest/...)
// share: reading wrk's report and a process's CPU time from /proc.
package loadkit

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Lines of wrk's report (with --latency).
var (
	WrkRPS    = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)
	WrkTotal  = regexp.MustCompile(`(?m)^\s*(\d+) requests in`)
	WrkP50    = regexp.MustCompile(`(?m)^\s+50%\s+(\S+)`)
	WrkP99    = regexp.MustCompile(`(?m)^\s+99%\s+(\S+)`)
	WrkNon2xx = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses:\s+(\d+)`)
	WrkErrors = regexp.MustCompile(`(?m)^\s*Socket errors:.*$`)
)

// WrkDuration parses wrk's latency figures: 812.00us, 1.23ms, 2.00s; -1
// when it cannot.
func WrkDuration(s string) time.Duration {
	s = strings.Replace(s, "us", "µs", 1)
	d, err := time.ParseDuration(s)
	if err != nil {
		return -1
	}
	return d
}

// CPUTime returns the CPU time (user and system) process pid has used,
// from /proc/pid/stat; 0 where that cannot be read.
func CPUTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state): utime is field 14, stime 15
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks
}

// clockTicks is the unit of /proc/pid/stat's times: USER_HZ, 100 on
// Linux.
const clockTicks = 100
