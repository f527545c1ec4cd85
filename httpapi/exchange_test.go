package httpapi_test

// A request's state (operation id, principal, whether its body was read)
// lives in one value per request, and its headers in values of its own:
// these tests hold what that must keep.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/edgeplane/edgeplane/httpapi"
)

// Requests of two accounts served at once each see their own principal
// (a credential of the other account is not found), their own body and
// their own operation id (the header and the error body agree).
func TestConcurrentRequestsKeepTheirOwnState(t *testing.T) {
	s := newServer(t, httpapi.Options{RateLimit: -1})
	keys := [2]string{s.keyA, s.keyB}
	var ids [2]string
	for i, key := range keys {
		r := s.do("POST", "/credentials", key, `{"description":"mine"}`)
		if r.status != 201 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		ids[i] = r.json["id"].(string)
	}
	send := func(method, path, key, body string) (int, http.Header, map[string]any, error) {
		req, err := http.NewRequest(method, s.srv.URL+path, strings.NewReader(body))
		if err != nil {
			return 0, nil, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Service-Version", "2")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := s.client.Do(req)
		if err != nil {
			return 0, nil, nil, err
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return 0, nil, nil, err
		}
		return resp.StatusCode, resp.Header, out, nil
	}
	const workers, rounds = 8, 40
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			me, other := w%2, 1-w%2
			key := keys[me]
			for i := range rounds {
				meta := fmt.Sprintf("worker %d round %d", w, i)
				status, _, out, err := send("PATCH", "/credentials/"+ids[me], key, `{"metadata":"`+meta+`"}`)
				if err != nil || status != 200 || out["id"] != ids[me] || out["metadata"] != meta {
					t.Errorf("worker %d: PATCH of its own credential: %d %v %v", w, status, out, err)
					return
				}
				status, hdr, out, err := send("GET", "/credentials/"+ids[other], key, "")
				if err != nil || status != 404 {
					t.Errorf("worker %d: GET of the other account's credential: %d %v %v", w, status, out, err)
					return
				}
				details, _ := out["details"].(map[string]any)
				if op := hdr.Get(httpapi.HeaderOperationID); op == "" || details["operation_id"] != op {
					t.Errorf("worker %d: operation id %q in the header, %v in the body", w, op, details["operation_id"])
					return
				}
			}
		})
	}
	wg.Wait()
}

// A response's header values are its own: changing them in place after
// the answer changes no other response's, earlier or later.
func TestResponseHeadersAreNotShared(t *testing.T) {
	s := newServer(t, httpapi.Options{RateLimit: -1})
	h, err := httpapi.New(s.svc, httpapi.Options{RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	r := s.do("POST", "/credentials", s.keyA, `{"description":"mine"}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	id := r.json["id"].(string)
	serve := func(path string, want int) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+s.keyA)
		req.Header.Set("Service-Version", "2")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		return rec
	}
	check := func(name string, rec *httptest.ResponseRecorder) {
		t.Helper()
		hdr := rec.Header()
		if ct := hdr.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", name, ct)
		}
		if cl := hdr.Get("Content-Length"); cl != strconv.Itoa(rec.Body.Len()) {
			t.Errorf("%s: Content-Length %q, body of %d bytes", name, cl, rec.Body.Len())
		}
		if op := hdr.Get(httpapi.HeaderOperationID); !strings.HasPrefix(op, "op_") {
			t.Errorf("%s: operation id %q", name, op)
		}
		for k, vs := range hdr {
			if len(vs) != 1 {
				t.Errorf("%s: header %s has values %q", name, k, vs)
			}
		}
	}
	first := serve("/credentials/"+id, 200)
	firstOp := first.Header().Get(httpapi.HeaderOperationID)
	second := serve("/credentials/cr_nothing", 404)
	for _, vs := range first.Header() {
		for i := range vs {
			vs[i] = "changed"
		}
	}
	first.Header().Add("Content-Type", "text/plain")
	first.Header().Add(httpapi.HeaderOperationID, "op_added")
	third := serve("/credentials/"+id, 200)
	check("earlier response", second)
	check("later response", third)
	if op := third.Header().Get(httpapi.HeaderOperationID); op == firstOp {
		t.Errorf("two responses with operation id %s", op)
	}
}

// The body limit holds for a body of unknown length (chunked, or read in
// pieces however the reader returns them): exactly MaxBodyBytes is read
// and the connection kept, one byte more is 413 and the connection
// closed.
func TestBodyLimitWithoutContentLength(t *testing.T) {
	const limit = 64
	s := newServer(t, httpapi.Options{RateLimit: -1, MaxBodyBytes: limit})
	body := func(n int) string {
		const head, tail = `{"description":"`, `"}`
		return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
	}
	h, err := httpapi.New(s.svc, httpapi.Options{RateLimit: -1, MaxBodyBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	readers := map[string]func(io.Reader) io.Reader{
		"plain":              func(r io.Reader) io.Reader { return struct{ io.Reader }{r} },
		"data with EOF":      iotest.DataErrReader,
		"one byte at a time": iotest.OneByteReader,
		"half at a time":     iotest.HalfReader,
	}
	for name, wrap := range readers {
		for _, tc := range []struct {
			size, status int
		}{{limit, 201}, {limit + 1, 413}} {
			t.Run(fmt.Sprintf("%s %d bytes", name, tc.size), func(t *testing.T) {
				req := httptest.NewRequest("POST", "/credentials", wrap(strings.NewReader(body(tc.size))))
				if req.ContentLength != -1 {
					t.Fatalf("ContentLength %d, want -1 (unknown)", req.ContentLength)
				}
				req.Header.Set("Authorization", "Bearer "+s.keyA)
				req.Header.Set("Service-Version", "2")
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != tc.status {
					t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
				}
				if closed, want := rec.Header().Get("Connection") == "close", tc.status == 413; closed != want {
					t.Errorf("Connection: close %v, want %v (the body is read to its end only within the limit)", closed, want)
				}
			})
		}
	}
	for _, tc := range []struct {
		size, status int
	}{{limit, 201}, {limit + 1, 413}} {
		t.Run(fmt.Sprintf("chunked %d bytes", tc.size), func(t *testing.T) {
			b := body(tc.size)
			resp, out, _ := rawRequest(t, s, "POST /credentials HTTP/1.1\r\nService-Version: 2\r\nContent-Type: application/json\r\n"+
				"Authorization: Bearer "+s.keyA+"\r\nTransfer-Encoding: chunked\r\n", fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(b), b))
			if resp.StatusCode != tc.status || resp.Close != (tc.status == 413) {
				t.Errorf("status %d close %v, want %d and close %v: %s", resp.StatusCode, resp.Close, tc.status, tc.status == 413, out)
			}
		})
	}
}

// GET /credentials/{id} answers the Service's JSON of the credential,
// whether it fits in the room of the reused buffer the Service appends it
// to or not: credentials of short and long descriptions in turn.
func TestGetAnswersTheCredentialWhateverTheBuffer(t *testing.T) {
	s := newServer(t, httpapi.Options{RateLimit: -1})
	ctx := t.Context()
	p, err := s.svc.Authenticate(ctx, s.keyA)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range []int{1, 255, 2} {
		r := s.do("POST", "/credentials", s.keyA, `{"description":"`+strings.Repeat("d", n)+`","metadata":"`+strings.Repeat("m", 16*n)+`"}`)
		if r.status != 201 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		ids = append(ids, r.json["id"].(string))
	}
	for round := range 4 {
		for _, id := range ids {
			c, err := s.svc.GetCredential(ctx, p, id)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(c)
			r := s.do("GET", "/credentials/"+id, s.keyA, "")
			if r.status != 200 || string(r.body) != string(want)+"\n" {
				t.Errorf("round %d: GET %s: %d\n%s\nwant\n%s", round, id, r.status, r.body, want)
			}
		}
	}
}
