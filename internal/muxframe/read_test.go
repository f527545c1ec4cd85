package muxframe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.ngrok.com/muxado/v2"
	"golang.ngrok.com/muxado/v2/frame"
)

// header is a frame header announcing length bytes of payload.
func header(t frame.Type, flags frame.Flags, stream uint32, length int) []byte {
	h := make([]byte, headerSize)
	h[0], h[1], h[2] = byte(length>>16), byte(length>>8), byte(length)
	h[3] = byte(t)<<4 | byte(flags)
	binary.BigEndian.PutUint32(h[4:], stream)
	return h
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// testFramer is a framer with limits l reading in, writing to the
// returned buffer; its socket is one end of a pipe nobody writes to.
func testFramer(t testing.TB, l Limits, in io.Reader) (*Conn, frame.Framer, *bytes.Buffer) {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	c := NewConn(a)
	var out bytes.Buffer
	return c, c.Framer(l)(in, &out), &out
}

// goAway reads the GOAWAY frame a framer wrote to out.
func goAway(t testing.TB, out *bytes.Buffer) (frame.ErrorCode, string) {
	t.Helper()
	f, err := frame.NewFramer(bytes.NewReader(out.Bytes()), nil).ReadFrame()
	if err != nil {
		t.Fatalf("reading what the framer wrote (%d bytes): %v", out.Len(), err)
	}
	ga, ok := f.(*frame.GoAway)
	if !ok {
		t.Fatalf("the framer wrote a %v frame; want GOAWAY", f.Type())
	}
	debug, _ := io.ReadAll(ga.Debug())
	return ga.ErrorCode(), string(debug)
}

// TestFrameLengths: each type's bound, before and after authentication:
// a frame over it is refused after its header alone was read (with a
// GOAWAY of ProtocolError saying why), one at it is read.
func TestFrameLengths(t *testing.T) {
	l := Limits{Window: 1000, Unauthenticated: 100, UnauthenticatedTotal: 150}
	for _, tc := range []struct {
		name    string
		typ     frame.Type
		length  int
		authed  bool
		refused string // a word of the error; "" when read
	}{
		{"data at the window", frame.TypeData, 1000, true, ""},
		{"data over the window", frame.TypeData, 1001, true, "stream's window, 1000 bytes"},
		{"data of 16 MiB", frame.TypeData, 1<<24 - 1, true, "16777215 bytes"},
		{"data before auth at its bound", frame.TypeData, 100, false, ""},
		{"data before auth over its bound", frame.TypeData, 101, false, "before authentication"},
		{"data before auth of 16 MiB", frame.TypeData, 1<<24 - 1, false, "before authentication"},
		{"unknown type over the window", 7, 1001, true, "unknown type 7"},
		{"unknown type before auth over its bound", 15, 101, false, "before authentication"},
		{"rst of 4", frame.TypeRst, 4, false, ""},
		{"rst of 5", frame.TypeRst, 5, true, "4-byte field"},
		{"wndinc of 16 MiB", frame.TypeWndInc, 1<<24 - 1, true, "4-byte field"},
		{"goaway at its bound", frame.TypeGoAway, 8 + MaxGoAwayDebug, false, ""},
		{"goaway over its bound", frame.TypeGoAway, 9 + MaxGoAwayDebug, true, "debug text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := uint32(3)
			body := make([]byte, 0, 8)
			switch tc.typ {
			case frame.TypeGoAway:
				stream = 0
				body = append(body, 0, 0, 0, 0, 0, 0, 0, 0)
			case frame.TypeRst, frame.TypeWndInc:
				body = append(body, 0, 0, 0, 1)
			}
			in := &countingReader{r: io.MultiReader(bytes.NewReader(header(tc.typ, frame.FlagDataSyn, stream, tc.length)), bytes.NewReader(body), strings.NewReader(strings.Repeat("x", 1<<16)))}
			c, fr, out := testFramer(t, l, in)
			if tc.authed {
				c.Authenticate()
			}
			f, err := fr.ReadFrame()
			if tc.refused == "" {
				if err != nil || f.Length() != uint32(tc.length) || f.Type() != tc.typ {
					t.Fatalf("ReadFrame: %v, %v; want the frame", f, err)
				}
				if c.Refused() != nil || out.Len() != 0 {
					t.Errorf("a frame read: Refused %v, %d bytes written", c.Refused(), out.Len())
				}
				return
			}
			var fe *FrameError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFrameTooLong) || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("ReadFrame: %v; want a FrameError saying %q", err, tc.refused)
			}
			if in.n != headerSize {
				t.Errorf("the framer read %d bytes; want the header's %d alone", in.n, headerSize)
			}
			if c.Refused() != fe {
				t.Errorf("Refused: %v; want %v", c.Refused(), fe)
			}
			if code, debug := goAway(t, out); code != frame.ErrorCode(muxado.ProtocolError) || debug != err.Error() {
				t.Errorf("the GOAWAY: code %d, %q; want ProtocolError, %q", code, debug, err.Error())
			}
			t.Logf("%s", err)
		})
	}
}

// dataFrames is n DATA frames of size bytes on stream 3.
func dataFrames(n, size int) []byte {
	var b []byte
	for range n {
		b = append(b, header(frame.TypeData, 0, 3, size)...)
		b = append(b, bytes.Repeat([]byte("d"), size)...)
	}
	return b
}

// TestAuthenticate: until Authenticate, frames are bounded by
// Unauthenticated and their sum by UnauthenticatedTotal; after it, by
// Window alone; nothing is written while frames are read.
func TestAuthenticate(t *testing.T) {
	l := Limits{Window: 1000, Unauthenticated: 100, UnauthenticatedTotal: 250}
	t.Run("total", func(t *testing.T) {
		in := &countingReader{r: bytes.NewReader(dataFrames(3, 100))}
		c, fr, out := testFramer(t, l, in)
		for i := range 2 {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			io.Copy(io.Discard, f.(*frame.Data).Reader())
		}
		_, err := fr.ReadFrame()
		var fe *FrameError
		if !errors.As(err, &fe) || !fe.Total || !strings.Contains(err.Error(), "more than the 250 bytes allowed") {
			t.Fatalf("the third frame: %v; want the total refused", err)
		}
		if want := 2*(headerSize+100) + headerSize; in.n != want {
			t.Errorf("read %d bytes; want %d (two frames and a header)", in.n, want)
		}
		if code, _ := goAway(t, out); code != frame.ErrorCode(muxado.ProtocolError) {
			t.Errorf("GOAWAY code %d", code)
		}
		_ = c
	})
	t.Run("after", func(t *testing.T) {
		stream := append(dataFrames(2, 100), dataFrames(3, 1000)...)
		c, fr, out := testFramer(t, l, bytes.NewReader(stream))
		for i := range 5 {
			if i == 2 {
				c.Authenticate()
			}
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			if n, _ := io.Copy(io.Discard, f.(*frame.Data).Reader()); int(n) != int(f.Length()) {
				t.Fatalf("frame %d: %d bytes of payload; want %d", i, n, f.Length())
			}
		}
		if out.Len() != 0 || c.Refused() != nil {
			t.Errorf("%d bytes written, Refused %v", out.Len(), c.Refused())
		}
	})
	t.Run("trusted", func(t *testing.T) {
		// The zero Limits: no stage before authentication, DefaultWindow.
		_, fr, _ := testFramer(t, Limits{}, bytes.NewReader(append(dataFrames(1, DefaultWindow), header(frame.TypeData, 0, 3, DefaultWindow+1)...)))
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, f.(*frame.Data).Reader())
		if _, err := fr.ReadFrame(); !errors.Is(err, ErrFrameTooLong) {
			t.Errorf("a frame over DefaultWindow: %v", err)
		}
	})
}

// TestRefusedSession: a muxado session whose peer announces a 16 MiB
// DATA frame before authenticating dies of a protocol error the peer is
// told (GOAWAY ProtocolError, in words), having read its header alone.
func TestRefusedSession(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := NewConn(a)
	counted := &countingConn{ReadWriteCloser: c}
	srv := muxado.Server(counted, &muxado.Config{NewFramer: c.Framer(Limits{Unauthenticated: 1 << 10})})
	defer srv.Close()
	go b.Write(append(header(frame.TypeData, frame.FlagDataSyn, 3, 1<<24-1), bytes.Repeat([]byte("x"), 1<<20)...))
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := frame.NewFramer(b, nil).ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	ga, ok := f.(*frame.GoAway)
	if !ok {
		t.Fatalf("got a %v frame; want GOAWAY", f.Type())
	}
	debug, _ := io.ReadAll(ga.Debug())
	if ga.ErrorCode() != frame.ErrorCode(muxado.ProtocolError) || !strings.Contains(string(debug), "before authentication") {
		t.Errorf("GOAWAY %d %q", ga.ErrorCode(), debug)
	}
	localErr, _, _ := srv.Wait()
	if !errors.Is(localErr, ErrFrameTooLong) || !errors.Is(c.Refused(), ErrFrameTooLong) {
		t.Errorf("the session died of %v (Refused %v); want the frame's error", localErr, c.Refused())
	}
	if n := counted.read.Load(); n != headerSize {
		t.Errorf("the session read %d bytes; want the header's %d alone", n, headerSize)
	}
}

// TestGoAway: the owner's GoAway reaches the peer with its code and
// words, and the writer writes nothing after it.
func TestGoAway(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := NewConn(a)
	fr := c.Framer(Limits{})(a, c)
	go c.GoAway(muxado.EnhanceYourCalm, "heartbeats too fast")
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := frame.NewFramer(b, nil).ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	ga, ok := f.(*frame.GoAway)
	if !ok {
		t.Fatalf("got a %v frame; want GOAWAY", f.Type())
	}
	debug, _ := io.ReadAll(ga.Debug())
	if ga.ErrorCode() != frame.ErrorCode(muxado.EnhanceYourCalm) || string(debug) != "heartbeats too fast" {
		t.Errorf("GOAWAY %d %q", ga.ErrorCode(), debug)
	}
	var d frame.Data
	if err := d.Pack(1, []byte("after"), false, false); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteFrame(&d); !errors.Is(err, ErrStopped) {
		t.Errorf("a frame after GoAway: %v; want ErrStopped", err)
	}
}

// FuzzReadFrame reads any bytes as frames, as muxado's reader does (a
// DATA or unknown frame's payload read by the session), with limits and
// the moment of authentication from the fuzzer: a frame is refused
// exactly when its header announces more than its bound, after its
// header alone was read, and its refusal's GOAWAY says so.
func FuzzReadFrame(f *testing.F) {
	f.Add(header(frame.TypeData, frame.FlagDataSyn, 3, 1<<24-1), 1000, 100, 300, 1)
	f.Add(append(dataFrames(2, 100), header(frame.TypeData, 0, 3, 101)...), 1000, 100, 0, 5)
	f.Add(append(header(frame.TypeGoAway, 0, 0, 8+MaxGoAwayDebug+1), make([]byte, 8)...), 0, 0, 0, 0)
	f.Add(append(header(frame.TypeRst, 0, 3, 4), 0, 0, 0, 1), 0, 10, 10, 0)
	f.Add(append(header(9, 0, 3, 50), make([]byte, 50)...), 40, 10, 10, 1)
	f.Fuzz(func(t *testing.T, data []byte, window, unauth, total, authAfter int) {
		l := Limits{Window: window % (2 * DefaultWindow), Unauthenticated: unauth, UnauthenticatedTotal: total}
		in := &countingReader{r: bytes.NewReader(data)}
		c, fr, out := testFramer(t, l, in)
		lim := l.withDefaults()
		authed, sum := lim.Unauthenticated == 0, 0
		for i := 0; ; i++ {
			if i == authAfter {
				c.Authenticate()
				authed = true
			}
			start := in.n
			if len(data)-start < headerSize {
				if _, err := fr.ReadFrame(); errors.Is(err, ErrFrameTooLong) {
					t.Fatalf("a short header refused: %v", err)
				}
				return
			}
			h := data[start : start+headerSize]
			length, typ := int(h[0])<<16|int(h[1])<<8|int(h[2]), frame.Type(h[3]>>4)
			counts := typ == frame.TypeData || typ > frame.TypeGoAway
			bound := lim.maxLength(typ, authed)
			if counts && !authed && lim.UnauthenticatedTotal > 0 && length <= bound {
				sum += length
			}
			tooLong := length > bound || (counts && !authed && lim.UnauthenticatedTotal > 0 && sum > lim.UnauthenticatedTotal)
			fm, err := fr.ReadFrame()
			if refused := errors.Is(err, ErrFrameTooLong); refused != tooLong {
				t.Fatalf("frame %d (%v, %d bytes, authenticated %v, limits %+v): %v; too long: %v", i, typ, length, authed, lim, err, tooLong)
			}
			if tooLong {
				if in.n-start != headerSize {
					t.Fatalf("a refused frame: %d bytes read; want %d", in.n-start, headerSize)
				}
				if code, debug := goAway(t, out); code != frame.ErrorCode(muxado.ProtocolError) || debug != err.Error() {
					t.Fatalf("GOAWAY %d %q for %v", code, debug, err)
				}
				return
			}
			if err != nil {
				return // muxado's own refusal, or the data ended
			}
			if in.n-start > headerSize+goAwayFieldsSize {
				t.Fatalf("ReadFrame read %d bytes of a %v frame", in.n-start, typ)
			}
			var payload io.Reader
			switch fm := fm.(type) {
			case *frame.Data:
				payload = fm.Reader()
			case *frame.Unknown:
				payload = fm.PayloadReader()
			case *frame.GoAway:
				payload = fm.Debug()
			}
			if payload != nil {
				io.Copy(io.Discard, payload)
			}
			if out.Len() != 0 {
				t.Fatalf("the framer wrote %d bytes without refusing a frame", out.Len())
			}
		}
	})
}

// BenchmarkReadFrame: reading a 1 KiB DATA frame and its payload, with
// and without the bounds.
func BenchmarkReadFrame(b *testing.B) {
	const n = 1024
	stream := dataFrames(n, 1<<10)
	for _, bc := range []struct {
		name string
		new  func(io.Reader) frame.Framer
	}{
		{"muxado", func(r io.Reader) frame.Framer { return frame.NewFramer(r, io.Discard) }},
		{"bounded", func(r io.Reader) frame.Framer {
			c := NewConn(nil)
			c.Authenticate()
			return c.Framer(Limits{Unauthenticated: 1 << 10})(r, io.Discard)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rd := bytes.NewReader(stream)
			fr := bc.new(rd)
			buf := make([]byte, 1<<10)
			b.SetBytes(headerSize + 1<<10)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i == n {
					rd.Reset(stream)
					i = 0
				}
				f, err := fr.ReadFrame()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(f.(*frame.Data).Reader(), buf[:f.Length()]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// countingConn counts the bytes read from it.
type countingConn struct {
	io.ReadWriteCloser
	read atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.ReadWriteCloser.Read(p)
	c.read.Add(int64(n))
	return n, err
}
