package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// memTransport answers every request as a trivial upstream would, in
// memory, so that a benchmark measures the Handler, not the network.
type memTransport struct{}

func (memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return &http.Response{
		Status: "200 OK", StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"2"}},
		Body:          io.NopCloser(strings.NewReader("ok")),
		ContentLength: 2,
		Request:       r,
	}, nil
}

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }

// benchClients is how many client addresses BenchmarkHandlerClients
// takes in turn.
const benchClients = 10_000

// BenchmarkHandlerClients is one request through the Handler (one edge,
// metrics on, the upstream in memory) from each of 10,000 client
// addresses in turn, as the example's benchmark sent them: with the
// rate-limit policy keyed on conn.client_ip every request reaches a
// bucket no recent request touched. The capacity is one no client
// reaches, so every request pays for the evaluation and none is refused.
func BenchmarkHandlerClients(b *testing.B) {
	const limit = `{"inbound":[{"name":"per client","actions":[{"type":"rate-limit","config":{
		"name":"bench","algorithm":"sliding_window","capacity":1000000,"rate":"60s","bucket_key":["conn.client_ip"]}}]}]}`
	addrs := make([]string, benchClients)
	for i := range addrs {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		addrs[i] = netip.AddrPortFrom(a, uint16(10000+i)).String()
	}
	for _, bc := range []struct{ name, doc string }{
		{"no_policy", ""},
		{"rate_limit_policy", limit},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, a, _ := standalone(b, bc.doc, siteOptions{handler: HandlerOptions{Transport: memTransport{}}})
			h := NewHandler(s.cfgs, HandlerOptions{Transport: memTransport{}, Metrics: NewMetrics(MetricsOptions{}), Clock: s.clock.Now})
			req := httptest.NewRequest("GET", "http://"+a.host+"/api/items?id=7", nil)
			w := &discardWriter{h: http.Header{}}
			serve := func(i int) {
				req.RemoteAddr = addrs[i%benchClients]
				clear(w.h)
				w.status = 0
				h.ServeHTTP(w, req)
				if w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
			}
			for i := range benchClients { // every client's bucket exists, as in a proxy's steady state
				serve(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				serve(i)
				i++
			}
		})
	}
}
