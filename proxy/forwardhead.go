package proxy

import (
	"bufio"
	"bytes"
	"net/http"
	"strconv"
	"strings"
)

// The common response head, read without http.ReadResponse: an
// upstream's answer with a status line "HTTP/1.1 NNN reason", fields each
// on a line ending in CRLF (names in any case: canonicalized), and its length in one
// Content-Length (or no body: a HEAD request, 204, 304) is read from the
// connection's buffer in one string, its fields put straight into the
// header map the response is given to (the client's, on the direct
// path), every value a substring of that one string. Anything else (1xx,
// HTTP/1.0, chunked or close-delimited bodies, Trailer, Pragma, a field
// name that is not a token, an obsolete line folding, a bare LF, a value
// with a control character, a second Content-Length, a Connection other
// than keep-alive, a head longer than the buffer) is left unread in the
// buffer for http.ReadResponse: quickHead reads nothing it does not
// take, and waits for more bytes only while every complete line so far
// is one it takes (so that it never waits where http.ReadResponse would
// have failed at once). FuzzQuickHead holds its answers to
// http.ReadResponse's.

// quickHead is a response head read by readQuickHead.
type quickHead struct {
	status string // "200 OK"
	code   int
	length int64 // Content-Length; -1 when there is none
}

// readQuickHead reads a response head of the common form from br into
// hd (which must be empty) and reports true, or reports false having
// read nothing and put nothing into hd; err is a read error met while
// waiting for the head (nothing read either: http.ReadResponse meets it
// again).
func readQuickHead(br *bufio.Reader, hd http.Header) (quickHead, bool, error) {
	var end int
	for {
		n := br.Buffered()
		if n == 0 {
			if _, err := br.Peek(1); err != nil {
				return quickHead{}, false, err
			}
			continue
		}
		buf, _ := br.Peek(n)
		var ok bool
		end, ok = headEnd(buf)
		if !ok {
			return quickHead{}, false, nil
		}
		if end > 0 {
			break
		}
		if n >= br.Size() {
			return quickHead{}, false, nil // longer than the buffer
		}
		if _, err := br.Peek(n + 1); err != nil {
			return quickHead{}, false, err
		}
	}
	buf, _ := br.Peek(end)
	h, lines, ok := checkHead(buf)
	if !ok {
		return quickHead{}, false, nil
	}
	s := string(buf) // the one allocation of the head's text
	vals := make([]string, lines)
	i := bytes.IndexByte(buf, '\n') + 1
	h.status = s[len("HTTP/1.1 ") : i-2]
	for k := 0; k < lines; k++ {
		j := i + bytes.IndexByte(buf[i:], '\n')
		colon := i + bytes.IndexByte(buf[i:j], ':')
		name := s[i:colon]
		if !canonicalToken(buf[i:colon]) {
			name = http.CanonicalHeaderKey(name) // as textproto does ("ETag": "Etag")
		}
		vals[k] = strings.Trim(s[colon+1:j-1], " \t")
		if old, ok := hd[name]; ok {
			hd[name] = append(old, vals[k])
		} else {
			hd[name] = vals[k : k+1 : k+1]
		}
		i = j + 1
	}
	_, _ = br.Discard(end)
	return h, true, nil
}

// headEnd returns the length of the head in buf (through its empty
// line), 0 when buf holds no complete head yet and every complete line
// of it is one checkLine takes, or ok false when one is not.
func headEnd(buf []byte) (end int, ok bool) {
	i := 0
	for first := true; ; first = false {
		j := bytes.IndexByte(buf[i:], '\n')
		if j < 0 {
			return 0, true
		}
		line := buf[i : i+j+1]
		if len(line) == 2 && line[0] == '\r' && !first {
			return i + 2, true
		}
		if !checkLine(line, first) {
			return 0, false
		}
		i += j + 1
	}
}

// checkLine says whether line (with its LF) is a status line (first) or
// a field line of the common form.
func checkLine(line []byte, first bool) bool {
	n := len(line)
	if n < 3 || line[n-2] != '\r' {
		return false
	}
	line = line[:n-2]
	if first {
		// "HTTP/1.1 " 3DIGIT, then nothing or " " reason.
		if len(line) < 12 || string(line[:9]) != "HTTP/1.1 " || !isDigit(line[9]) || !isDigit(line[10]) || !isDigit(line[11]) ||
			line[9] == '0' || line[9] == '1' || (len(line) > 12 && line[12] != ' ') {
			return false
		}
		return validValue(string(line[12:]))
	}
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 || !validName(string(line[:colon])) {
		return false
	}
	for _, c := range line[colon+1:] {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// checkHead checks the fields of a complete head: its framing is a
// Content-Length or no body, and no field needs net/http's handling.
// It returns the head's code and length, and its field lines.
func checkHead(buf []byte) (h quickHead, lines int, ok bool) {
	i := bytes.IndexByte(buf, '\n') + 1
	code, _ := strconv.Atoi(string(buf[9:12]))
	h = quickHead{code: code, length: -1}
	for i < len(buf)-2 {
		j := i + bytes.IndexByte(buf[i:], '\n')
		colon := i + bytes.IndexByte(buf[i:j], ':')
		name := buf[i:colon]
		value := bytes.Trim(buf[colon+1:j-1], " \t")
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if h.length >= 0 || len(value) == 0 || len(value) > 18 {
				return h, 0, false
			}
			var n int64
			for _, c := range value {
				if !isDigit(c) {
					return h, 0, false
				}
				n = n*10 + int64(c-'0')
			}
			h.length = n
		case bytes.EqualFold(name, []byte("Connection")):
			if !bytes.EqualFold(value, []byte("keep-alive")) {
				return h, 0, false
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")), bytes.EqualFold(name, []byte("Trailer")),
			bytes.EqualFold(name, []byte("Pragma")):
			return h, 0, false
		}
		lines++
		i = j + 1
	}
	if h.length < 0 && code != http.StatusNoContent && code != http.StatusNotModified {
		return h, 0, false // chunked or close-delimited: http.ReadResponse's
	}
	return h, lines, true
}

// canonicalToken says whether name is a token in the form
// http.CanonicalHeaderKey gives it ("Content-Type").
func canonicalToken(name []byte) bool {
	upper := true
	for _, c := range name {
		if c >= 0x80 || !tchar[c] {
			return false
		}
		switch {
		case 'a' <= c && c <= 'z':
			if upper {
				return false
			}
		case 'A' <= c && c <= 'Z':
			if !upper {
				return false
			}
		}
		upper = c == '-'
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
