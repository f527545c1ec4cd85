package proxy

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// headerAnswers is the handler of an upstream, or of an agent's HTTP
// server, whose answers' headers have a size of the test's choosing: /big
// is big, written as is on the hijacked connection (built once, so that
// answering allocates nothing), and the bytes the connection took of it
// before the proxy closed it are stored in took; anything else is 200
// with normal bytes of headers in X-Pad-<i> lines and the body "ok".
type headerAnswers struct {
	big    []byte
	normal int
	took   atomic.Int64
}

// headerBlock returns header lines "X-Pad-<i>: xxx...\r\n" of about 1
// KiB each, n bytes in all.
func headerBlock(n int) []string {
	var lines []string
	for i := 0; n > 0; i++ {
		name := "X-Pad-" + strconv.Itoa(i)
		v := max(min(1024, n)-len(name)-4, 1)
		lines = append(lines, name+": "+strings.Repeat("x", v))
		n -= len(name) + 4 + v
	}
	return lines
}

func newHeaderAnswers(big, normal int) *headerAnswers {
	b := []byte("HTTP/1.1 200 OK\r\n")
	for _, l := range headerBlock(big) {
		b = append(b, l+"\r\n"...)
	}
	b = append(b, "Content-Length: 2\r\n\r\nok"...)
	return &headerAnswers{big: b, normal: normal}
}

func (a *headerAnswers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/big" {
		for _, l := range headerBlock(a.normal) {
			k, v, _ := strings.Cut(l, ": ")
			w.Header().Set(k, v)
		}
		_, _ = w.Write([]byte("ok"))
		return
	}
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	defer c.Close()
	n, _ := c.Write(a.big)
	a.took.Store(int64(n))
}

// TestResponseHeaderBound: an upstream's or an agent's answer with 9 MiB
// of headers gets the client a 502 with the proxy's error page, at once,
// a warning naming the bound is logged, and the proxy neither reads the
// answer nor holds it (the bytes allocated meanwhile stay far below it;
// an agent's stream, a pipe, shows how much of it the proxy read); an
// answer whose headers fit is served, before and after. Both with a
// bound of 4 KiB and with the default, 64 KiB.
func TestResponseHeaderBound(t *testing.T) {
	const big = 9 << 20
	for _, tc := range []struct {
		name   string
		agent  bool
		bound  int // HandlerOptions.MaxResponseHeaderBytes
		normal int // headers of an answer that fits
	}{
		{"an upstream, 4 KiB", false, 4 << 10, 3 << 10},
		{"an agent's tunnel, 4 KiB", true, 4 << 10, 3 << 10},
		{"an upstream, the default", false, 0, 60 << 10},
		{"an agent's tunnel, the default", true, 0, 60 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answers := newHeaderAnswers(big, tc.normal)
			ho := HandlerOptions{MaxResponseHeaderBytes: tc.bound}
			if tc.agent {
				ho.Agents = &fakeAgents{http: serveAgentHTTP(t, answers)}
			}
			s := newSite(t, siteOptions{hooks: newHooks(nil), handler: ho})
			p := s.account("acme")
			a := s.newApp(p, "web", nil, "app.example.com:443")
			if tc.agent {
				registerAgentTunnel(t, s.svc, p, "web", "laptop", "")
			} else {
				up := httptest.NewServer(answers)
				t.Cleanup(up.Close)
				a.tunnel(up.URL)
			}
			s.sync()
			bound := tc.bound
			if bound == 0 {
				bound = DefaultMaxResponseHeaderBytes
			}

			normal := func(when string) {
				t.Helper()
				res := a.get("/normal")
				if res.status != http.StatusOK || res.body != "ok" || res.header.Get("X-Pad-0") == "" {
					t.Errorf("an answer with %d bytes of headers, %s: %d %q", tc.normal, when, res.status, res.body)
				}
			}
			normal("first")

			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			res := a.get("/big")
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes of headers: %d in %v, %d KiB allocated meanwhile", big, res.status, took.Round(time.Millisecond), alloc>>10)
			if tc.agent {
				t.Logf("the agent's stream took %d bytes of its answer", answers.took.Load())
			}
			if res.status != http.StatusBadGateway || res.body != "bad gateway: the upstream's response headers are larger than this proxy accepts\n" {
				t.Fatalf("an answer with %d bytes of headers: %d %q; want 502 saying its headers are too large", big, res.status, res.body)
			}
			if res.header.Get("X-Pad-0") != "" {
				t.Error("the 502 carries the upstream's headers")
			}
			if took > 5*time.Second {
				t.Errorf("the 502 took %v", took)
			}
			if alloc > 2<<20 {
				t.Errorf("%d KiB allocated while the proxy refused %d MiB of headers; want under 2 MiB", alloc>>10, big>>20)
			}
			if n := answers.took.Load(); tc.agent && n > int64(bound)+8<<10 {
				t.Errorf("the proxy read %d bytes of the agent's answer; want at most the bound (%d) and a buffer", n, bound)
			}
			want := fmt.Sprintf(`msg="upstream response headers too large: the proxy stopped reading them and answered 502" account=%s edge=%s route=%s`, p.AccountID, a.edge, a.route)
			if logs := s.logs.String(); !strings.Contains(logs, want) || !strings.Contains(logs, "max_bytes="+strconv.Itoa(bound)) {
				t.Errorf("no warning %s ... max_bytes=%d in the logs:\n%s", want, bound, logs)
			}
			if got := s.metric("edgeplane_proxy_upstream_errors_total", "edge="+a.edge, "route="+a.route); got != 1 {
				t.Errorf("upstream errors counted: %v; want 1", got)
			}
			normal("after the 502")
		})
	}
}

// TestHeadersTooLarge pins the error net/http's transport fails with when
// an answer's headers exceed MaxResponseHeaderBytes, which
// headersTooLarge recognises by its text (net/http exports no value for
// it), and that other errors are not taken for it.
func TestHeadersTooLarge(t *testing.T) {
	answers := newHeaderAnswers(8<<10, 0)
	up := httptest.NewServer(answers)
	defer up.Close()
	tr := &http.Transport{MaxResponseHeaderBytes: 4 << 10}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", up.URL+"/big", nil)
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("8 KiB of headers went through a bound of 4 KiB")
	}
	if !headersTooLarge(err) {
		t.Errorf("headersTooLarge(%q) = false", err)
	}
	for _, err := range []error{bufio.ErrBufferFull, http.ErrHandlerTimeout, fmt.Errorf("dial tcp: connection refused")} {
		if headersTooLarge(err) {
			t.Errorf("headersTooLarge(%q) = true", err)
		}
	}
}
