package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
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
	svc := edgeplane.New(s.store, edgeplane.Options{})
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
