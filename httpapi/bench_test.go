package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/httpapi"
)

// benchHandler returns a handler without a rate limit over s's store, and
// the id of one credential of account A.
func benchHandler(b *testing.B, s *server) (*httpapi.Handler, string) {
	return benchHandlerN(b, s, 10)
}

// benchHandlerN is benchHandler with n credentials.
func benchHandlerN(b *testing.B, s *server, n int) (*httpapi.Handler, string) {
	return benchHandlerWith(b, s, n, httpapi.Options{RateLimit: -1})
}

// benchHandlerWith is benchHandlerN with the handler's options.
func benchHandlerWith(b *testing.B, s *server, n int, opts httpapi.Options) (*httpapi.Handler, string) {
	b.Helper()
	svc, err := edgeplane.New(s.store, edgeplane.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = svc.Close(context.Background()) })
	h, err := httpapi.New(svc, opts)
	if err != nil {
		b.Fatal(err)
	}
	var id string
	for range n {
		rec := benchCall(b, h, s.keyA, "POST", "/credentials", `{"description":"bench","acl":["bind:*.example.com"]}`, 201)
		var c struct{ ID string }
		json.Unmarshal(rec.Body.Bytes(), &c)
		id = c.ID
	}
	return h, id
}

// benchCall makes one request of key's through h, with a JSON body when
// body is not "", and fails unless it is answered with status want.
func benchCall(b *testing.B, h *httpapi.Handler, key, method, path, body string, want int) *httptest.ResponseRecorder {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Service-Version", "2")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != want {
		b.Fatal(rec.Code, rec.Body)
	}
	return rec
}

// BenchmarkGetByID measures GET /credentials/{id} through the handler
// (routing, authentication, the read and the JSON answer).
func BenchmarkGetByID(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, id := benchHandler(b, s)
	b.ReportAllocs()
	for b.Loop() {
		benchCall(b, h, s.keyA, "GET", "/credentials/"+id, "", 200)
	}
}

// BenchmarkGetByIDServed is BenchmarkGetByID with what edgeplane serve
// adds: a request log line (a text handler, to io.Discard) and an Observe
// function.
func BenchmarkGetByIDServed(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, id := benchHandlerWith(b, s, 10, httpapi.Options{RateLimit: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Observe: func(httpapi.Served) {}})
	b.ReportAllocs()
	for b.Loop() {
		benchCall(b, h, s.keyA, "GET", "/credentials/"+id, "", 200)
	}
}

// BenchmarkList measures GET /credentials (a page of ten) through the
// handler.
func BenchmarkList(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, _ := benchHandler(b, s)
	b.ReportAllocs()
	for b.Loop() {
		benchCall(b, h, s.keyA, "GET", "/credentials", "", 200)
	}
}

// BenchmarkList100 measures GET /credentials?limit=100 (a full page, as
// the load harness asks for) through the handler.
func BenchmarkList100(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, _ := benchHandlerN(b, s, 100)
	b.ReportAllocs()
	for b.Loop() {
		benchCall(b, h, s.keyA, "GET", "/credentials?limit=100", "", 200)
	}
}

// BenchmarkPatch measures PATCH /credentials/{id} through the handler.
func BenchmarkPatch(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, id := benchHandler(b, s)
	b.ReportAllocs()
	for b.Loop() {
		benchCall(b, h, s.keyA, "PATCH", "/credentials/"+id, `{"metadata":"patched"}`, 200)
	}
}

// BenchmarkCreate measures POST /credentials through the handler
// (routing, authentication, the strict body decode, the write and the
// JSON answer).
func BenchmarkCreate(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, _ := benchHandler(b, s)
	b.ReportAllocs()
	for b.Loop() {
		benchCall(b, h, s.keyA, "POST", "/credentials", `{"description":"bench","acl":["bind:*.example.com"]}`, 201)
	}
}

// benchWriter is an http.ResponseWriter made once and used for every
// request of a benchmark: its header map and body buffer are cleared, not
// made again, and it does not snapshot the header at WriteHeader (net/http
// clones the header there; the recorder too). With a request made once,
// what a Reused benchmark counts is the handler's own work (and the
// Service's), not the allocations of httptest.NewRequest (a 4 KiB
// bufio.Reader and the parse) or of httptest.NewRecorder, nor net/http's
// per-request share.
type benchWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *benchWriter) Header() http.Header { return w.header }

func (w *benchWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *benchWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}

// benchReused serves one request of key's, made once (with its JSON body
// read anew each time when body is not ""), b.N times through h with one
// benchWriter, and fails unless every answer has status want.
func benchReused(b *testing.B, h http.Handler, key, method, path, body string, want int) {
	req := httptest.NewRequest(method, path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Service-Version", "2")
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
		req.Body = io.NopCloser(rd)
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/json")
	}
	w := &benchWriter{header: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		if rd != nil {
			rd.Reset(body)
		}
		clear(w.header)
		w.status = 0
		w.body.Reset()
		h.ServeHTTP(w, req)
		if w.status != want || w.body.Len() == 0 {
			b.Fatal(w.status, w.body.String())
		}
	}
}

// BenchmarkGetByIDReused is BenchmarkGetByID with one request and one
// writer for every call (see benchWriter): the handler's own cost.
func BenchmarkGetByIDReused(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, id := benchHandler(b, s)
	benchReused(b, h, s.keyA, "GET", "/credentials/"+id, "", 200)
}

// BenchmarkGetByIDServedReused is BenchmarkGetByIDServed with one request
// and one writer for every call.
func BenchmarkGetByIDServedReused(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, id := benchHandlerWith(b, s, 10, httpapi.Options{RateLimit: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Observe: func(httpapi.Served) {}})
	benchReused(b, h, s.keyA, "GET", "/credentials/"+id, "", 200)
}

// BenchmarkPatchReused is BenchmarkPatch with one request and one writer
// for every call.
func BenchmarkPatchReused(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, id := benchHandler(b, s)
	benchReused(b, h, s.keyA, "PATCH", "/credentials/"+id, `{"metadata":"patched"}`, 200)
}

// BenchmarkCreateReused is BenchmarkCreate with one request and one
// writer for every call.
func BenchmarkCreateReused(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, _ := benchHandler(b, s)
	benchReused(b, h, s.keyA, "POST", "/credentials", `{"description":"bench","acl":["bind:*.example.com"]}`, 201)
}

// BenchmarkListIPPolicies100 measures GET /ip_policies?limit=100 through
// the handler: a page of a kind that does not encode itself, which the
// response encoder (writeJSON's, by reflection) writes whole. The
// credential benchmarks above do not reach that encoder.
func BenchmarkListIPPolicies100(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, _ := benchHandlerN(b, s, 0)
	for range 100 {
		benchCall(b, h, s.keyA, "POST", "/ip_policies", `{"description":"bench <policy>","metadata":"{\"team\":\"edge\"}"}`, 201)
	}
	benchReused(b, h, s.keyA, "GET", "/ip_policies?limit=100", "", 200)
}
