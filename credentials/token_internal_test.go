package credentials

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestNewTokenReaderFailure(t *testing.T) {
	tests := []struct {
		name string
		r    io.Reader
	}{
		{name: "empty", r: bytes.NewReader(nil)},
		{name: "short", r: bytes.NewReader(make([]byte, tokenBytes-1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := newToken("cr_2BjSiaW8q7lZoHf5oy7tzj3cMqA", tt.r)
			if err == nil || tok != "" {
				t.Fatalf("newToken = %q, %v; want an error and no token", tok, err)
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("error %v does not wrap the reader's error", err)
			}
		})
	}
}

func TestNewTokenDeterministicReader(t *testing.T) {
	tok, err := newToken("cr_2BjSiaW8q7lZoHf5oy7tzj3cMqA", bytes.NewReader(make([]byte, tokenBytes)))
	if err != nil {
		t.Fatal(err)
	}
	if want := TokenPrefix + "2BjSiaW8q7lZoHf5oy7tzj3cMqA_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"; tok != want {
		t.Fatalf("newToken(zeros) = %q, want %q", tok, want)
	}
}
