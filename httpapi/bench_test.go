package httpapi_test

import (
	"encoding/json"
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
	b.Helper()
	h, err := httpapi.New(edgeplane.New(s.store, edgeplane.Options{}), httpapi.Options{RateLimit: -1})
	if err != nil {
		b.Fatal(err)
	}
	var id string
	for range n {
		req := httptest.NewRequest("POST", "/credentials", strings.NewReader(`{"description":"bench","acl":["bind:*.example.com"]}`))
		req.Header.Set("Authorization", "Bearer "+s.keyA)
		req.Header.Set("Service-Version", "2")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 201 {
			b.Fatal(rec.Code, rec.Body)
		}
		var c struct{ ID string }
		json.Unmarshal(rec.Body.Bytes(), &c)
		id = c.ID
	}
	return h, id
}

// BenchmarkGetByID measures GET /credentials/{id} through the handler
// (routing, authentication, the read and the JSON answer).
func BenchmarkGetByID(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, id := benchHandler(b, s)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/credentials/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+s.keyA)
		req.Header.Set("Service-Version", "2")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body)
		}
	}
}

// BenchmarkList measures GET /credentials (a page of ten) through the
// handler.
func BenchmarkList(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, _ := benchHandler(b, s)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/credentials", nil)
		req.Header.Set("Authorization", "Bearer "+s.keyA)
		req.Header.Set("Service-Version", "2")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body)
		}
	}
}

// BenchmarkList100 measures GET /credentials?limit=100 (a full page, as
// the load harness asks for) through the handler.
func BenchmarkList100(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, _ := benchHandlerN(b, s, 100)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/credentials?limit=100", nil)
		req.Header.Set("Authorization", "Bearer "+s.keyA)
		req.Header.Set("Service-Version", "2")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body)
		}
	}
}

// BenchmarkPatch measures PATCH /credentials/{id} through the handler.
func BenchmarkPatch(b *testing.B) {
	s := newServer(b, httpapi.Options{RateLimit: -1})
	h, id := benchHandler(b, s)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("PATCH", "/credentials/"+id, strings.NewReader(`{"metadata":"patched"}`))
		req.Header.Set("Authorization", "Bearer "+s.keyA)
		req.Header.Set("Service-Version", "2")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body)
		}
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
		req := httptest.NewRequest("POST", "/credentials", strings.NewReader(`{"description":"bench","acl":["bind:*.example.com"]}`))
		req.Header.Set("Authorization", "Bearer "+s.keyA)
		req.Header.Set("Service-Version", "2")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 201 {
			b.Fatal(rec.Code, rec.Body)
		}
	}
}
