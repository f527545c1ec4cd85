package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"reflect"
	"testing"
)

// FuzzQuickHead holds readQuickHead to http.ReadResponse: on any bytes
// from an upstream (to a GET or a HEAD), either it takes nothing of them
// and puts nothing into the header map (http.ReadResponse then reads
// them), or http.ReadResponse reads the same response from them: status,
// fields, length, body, keep-alive.
func FuzzQuickHead(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 204 No Content\r\nX-A: 1\r\nX-A:  2 \r\n\r\n",
		"HTTP/1.1 304 Not Modified\r\nEtag: \"x\"\r\nContent-Length: 10\r\n\r\n",
		"HTTP/1.1 200 OK\r\nServer: nginx\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
		"HTTP/1.1 200 OK\r\nServer: nginx\r\nETag: \"1\"\r\nx-lower: a\r\nX-Lower: b\r\nContent-Length: 3\r\n\r\nabc",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		req, _ := http.NewRequest(http.MethodGet, "http://up/", nil)
		if head {
			req.Method = http.MethodHead
		}
		br := bufio.NewReaderSize(bytes.NewReader(data), 4096)
		hd := http.Header{}
		qh, ok, _ := readQuickHead(br, hd)
		if !ok {
			rest, _ := io.ReadAll(br)
			if !bytes.Equal(rest, data) || len(hd) != 0 {
				t.Fatalf("refused %q but took %d bytes of it, or filled the header map (%v)", data, len(data)-len(rest), hd)
			}
			return
		}
		want, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(data)), req)
		if err != nil {
			t.Fatalf("took %q, which http.ReadResponse refuses: %v", data, err)
		}
		got := quickResponse(req, qh, hd)
		if got.StatusCode != want.StatusCode || got.Status != want.Status || got.ContentLength != want.ContentLength ||
			want.Close || want.TransferEncoding != nil || want.Trailer != nil || !reflect.DeepEqual(got.Header, want.Header) {
			t.Fatalf("%q:\n got %d %q length %d header %v\nwant %d %q length %d header %v close %v te %v trailer %v", data,
				got.StatusCode, got.Status, got.ContentLength, got.Header,
				want.StatusCode, want.Status, want.ContentLength, want.Header, want.Close, want.TransferEncoding, want.Trailer)
		}
		wantBody, wantErr := io.ReadAll(want.Body)
		var gotBody []byte
		var gotErr error
		if got.Body == http.NoBody {
			if want.Body != http.NoBody {
				t.Fatalf("%q: no body; http.ReadResponse's has one", data)
			}
		} else {
			gotBody = make([]byte, got.ContentLength)
			_, gotErr = io.ReadFull(br, gotBody)
			if errors.Is(gotErr, io.EOF) {
				gotErr = io.ErrUnexpectedEOF
			}
		}
		if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && !bytes.Equal(gotBody, wantBody)) {
			t.Fatalf("%q: body %q (%v); http.ReadResponse's %q (%v)", data, gotBody, gotErr, wantBody, wantErr)
		}
	})
}

// TestQuickHeadTakes: the heads of the common form are read by
// readQuickHead, the others left to http.ReadResponse.
func TestQuickHeadTakes(t *testing.T) {
	for _, tc := range []struct {
		name, head string
		takes      bool
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello", true},
		{"nginx", "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Fri, 04 Dec 2026 22:00:00 GMT\r\nContent-Type: text/plain\r\n" +
			"Content-Length: 1024\r\nLast-Modified: Fri, 04 Dec 2026 21:00:00 GMT\r\nConnection: keep-alive\r\nEtag: \"1\"\r\nAccept-Ranges: bytes\r\n\r\n", true},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", true},
		{"no reason", "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n", true},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false},
		{"until close", "HTTP/1.1 200 OK\r\n\r\nbody", false},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false},
		{"informational", "HTTP/1.1 100 Continue\r\n\r\n", false},
		{"not canonical", "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nx-a: 1\r\n\r\n", true},
		{"ETag as sent", "HTTP/1.1 200 OK\r\nETag: \"1\"\r\nContent-Length: 0\r\n\r\n", true},
		{"two lengths, one not canonical", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\ncontent-length: 0\r\n\r\n", false},
		{"a name with a space", "HTTP/1.1 200 OK\r\nX A: 1\r\nContent-Length: 0\r\n\r\n", false},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n", false},
		{"close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\n\n", false},
		{"folded", "HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\nContent-Length: 0\r\n\r\n", false},
		{"bad first line, more to come", "SSH-2.0-OpenSSH\r\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReader(bytes.NewReader([]byte(tc.head)))
			_, ok, _ := readQuickHead(br, http.Header{})
			if ok != tc.takes {
				t.Errorf("readQuickHead took it: %v; want %v", ok, tc.takes)
			}
		})
	}
}
