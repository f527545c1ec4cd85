// Package jsonenc appends the JSON encoding/json makes of a string and of a
// time.Time, byte for byte, without reflection and without allocating. It
// is for hand-written appenders of hot models (see
// [github.com/edgeplane/edgeplane/credentials.Credential.AppendJSON]),
// whose output must stay identical to encoding/json.Marshal's: the tests
// compare every function here with encoding/json (AppendString and
// AppendTime by fuzzing).
package jsonenc

import (
	"time"
	"unicode/utf8"
)

// safe reports the ASCII bytes encoding/json copies into a string as they
// are (its htmlSafeSet): every byte from ' ' to DEL but '"', '\\' and the
// HTML-sensitive '<', '>' and '&'.
var safe = func() (t [utf8.RuneSelf]bool) {
	for b := ' '; b < utf8.RuneSelf; b++ {
		t[b] = true
	}
	for _, b := range `"\<>&` {
		t[b] = false
	}
	return t
}()

const hex = "0123456789abcdef"

// AppendString appends s to dst as the JSON string encoding/json.Marshal
// makes of it, and returns the extended buffer: '"' and '\\' escaped with
// a backslash; \b, \f, \n, \r and \t as such; other control characters,
// '<', '>' and '&' as \u00XX; U+2028 and U+2029 as \u2028 and \u2029; each
// byte of invalid UTF-8 as \ufffd; everything else as it is.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // other control characters, '<', '>' and '&'
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendTime appends t to dst as the JSON string t.MarshalJSON returns
// (RFC 3339 with nanoseconds, as encoding/json.Marshal writes it) and
// reports true. When MarshalJSON would fail (a year outside [0,9999], a
// zone offset of 24 hours or more) it returns dst unchanged and false, and
// the caller falls back to encoding/json, which reports the error.
func AppendTime(dst []byte, t time.Time) ([]byte, bool) {
	n := len(dst)
	b, err := t.AppendText(append(dst, '"')) // MarshalJSON's checks, without its allocation
	if err != nil {
		return dst[:n], false
	}
	return append(b, '"'), true
}

// Appender is a model that encodes itself without reflection, as
// [github.com/edgeplane/edgeplane/credentials.Credential.AppendJSON]
// does: AppendJSON appends to dst what encoding/json.Marshal makes of it
// and reports true, or returns dst unchanged and false where
// encoding/json would fail, and the caller then encodes it the general
// way. The Service's record cache and httpapi's responses check for it.
type Appender interface {
	AppendJSON(dst []byte) ([]byte, bool)
}

// AppendStrings appends ss to dst as encoding/json.Marshal encodes a
// []string: null when ss is nil, else an array of [AppendString]'s
// strings.
func AppendStrings(dst []byte, ss []string) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s)
	}
	return append(dst, ']')
}
