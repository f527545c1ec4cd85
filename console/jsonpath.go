package console

import (
	"errors"
	"strconv"
	"strings"
)

// The traffic-policy editor shows the engine's compile errors at the
// line of the document where they are. The engine names a problem by its
// JSON path (on_http_request[0].actions[0].config.status_code); jsonLines
// finds the line of each path in the text as the user typed it, and the
// line of a syntax error.

// maxJSONDepth bounds the nesting jsonLines follows: deeper documents
// are reported as a syntax error at the first value too deep (the
// engine refuses them anyway).
const maxJSONDepth = 64

// errJSONDepth is the syntax error of a document nested too deep.
var errJSONDepth = errors.New("nested too deep")

// jsonLines scans the JSON document text and returns the line (from 1)
// where each path's value starts, by the engine's path syntax: members
// joined with ".", elements as "[i]", the root "". A member's line is
// its key's. When the text is not JSON, it returns the paths seen so
// far and the line of the first problem (errLine > 0).
func jsonLines(text string) (lines map[string]int, errLine int) {
	s := &jsonScan{text: text, line: 1, lines: make(map[string]int)}
	s.space()
	if err := s.value("", s.line, 0); err != nil {
		return s.lines, s.line
	}
	s.space()
	if s.pos < len(s.text) {
		return s.lines, s.line
	}
	return s.lines, 0
}

// jsonScan is the state of jsonLines: the text, the position and its
// line.
type jsonScan struct {
	text  string
	pos   int
	line  int
	lines map[string]int
}

var errJSONSyntax = errors.New("syntax")

func (s *jsonScan) space() {
	for s.pos < len(s.text) {
		switch s.text[s.pos] {
		case '\n':
			s.line++
		case ' ', '\t', '\r':
		default:
			return
		}
		s.pos++
	}
}

// value scans the value at the position, of path, whose line is at
// (a member's key's line).
func (s *jsonScan) value(path string, at, depth int) error {
	if depth > maxJSONDepth {
		return errJSONDepth
	}
	if _, ok := s.lines[path]; !ok {
		s.lines[path] = at
	}
	if s.pos >= len(s.text) {
		return errJSONSyntax
	}
	switch c := s.text[s.pos]; {
	case c == '{':
		s.pos++
		s.space()
		if s.pos < len(s.text) && s.text[s.pos] == '}' {
			s.pos++
			return nil
		}
		for {
			s.space()
			keyLine := s.line
			key, err := s.str()
			if err != nil {
				return err
			}
			s.space()
			if s.pos >= len(s.text) || s.text[s.pos] != ':' {
				return errJSONSyntax
			}
			s.pos++
			s.space()
			child := key
			if path != "" {
				child = path + "." + key
			}
			if err := s.value(child, keyLine, depth+1); err != nil {
				return err
			}
			s.space()
			if s.pos >= len(s.text) {
				return errJSONSyntax
			}
			switch s.text[s.pos] {
			case ',':
				s.pos++
			case '}':
				s.pos++
				return nil
			default:
				return errJSONSyntax
			}
		}
	case c == '[':
		s.pos++
		s.space()
		if s.pos < len(s.text) && s.text[s.pos] == ']' {
			s.pos++
			return nil
		}
		for i := 0; ; i++ {
			s.space()
			if err := s.value(path+"["+strconv.Itoa(i)+"]", s.line, depth+1); err != nil {
				return err
			}
			s.space()
			if s.pos >= len(s.text) {
				return errJSONSyntax
			}
			switch s.text[s.pos] {
			case ',':
				s.pos++
			case ']':
				s.pos++
				return nil
			default:
				return errJSONSyntax
			}
		}
	case c == '"':
		_, err := s.str()
		return err
	case c == '-' || c >= '0' && c <= '9':
		n := numberLen(s.text[s.pos:])
		if n == 0 {
			return errJSONSyntax
		}
		s.pos += n
		return nil
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(s.text[s.pos:], lit) {
				s.pos += len(lit)
				return nil
			}
		}
		return errJSONSyntax
	}
}

// str scans a string at the position and returns its value (escapes
// other than \" and \\ kept as written: paths name keys as typed).
func (s *jsonScan) str() (string, error) {
	if s.pos >= len(s.text) || s.text[s.pos] != '"' {
		return "", errJSONSyntax
	}
	s.pos++
	var b strings.Builder
	for s.pos < len(s.text) {
		c := s.text[s.pos]
		switch {
		case c == '"':
			s.pos++
			return b.String(), nil
		case c == '\\':
			if s.pos+1 >= len(s.text) {
				return "", errJSONSyntax
			}
			next := s.text[s.pos+1]
			if strings.IndexByte(`"\/bfnrtu`, next) < 0 {
				return "", errJSONSyntax
			}
			if next == 'u' && !isHex4(s.text[s.pos+2:]) {
				return "", errJSONSyntax
			}
			if next == '"' || next == '\\' || next == '/' {
				b.WriteByte(next)
			} else {
				b.WriteByte(c)
				b.WriteByte(next)
			}
			s.pos += 2
		case c < 0x20:
			return "", errJSONSyntax
		default:
			b.WriteByte(c)
			s.pos++
		}
	}
	return "", errJSONSyntax
}

// lineOf returns the line of path in lines, or of its longest prefix
// that has one (a missing member is reported at its parent's line); 0
// when none has.
func lineOf(lines map[string]int, path string) int {
	for {
		if n, ok := lines[path]; ok {
			return n
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			if n, ok := lines[""]; ok {
				return n
			}
			return 0
		}
		path = path[:i]
	}
}

// numberLen returns the length of the JSON number at the start of s, 0
// when there is none: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberLen(s string) int {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return 0
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return 0
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0
		}
	}
	return i
}

// isHex4 reports whether s starts with 4 hexadecimal digits.
func isHex4(s string) bool {
	if len(s) < 4 {
		return false
	}
	for _, c := range []byte(s[:4]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
