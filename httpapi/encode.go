package httpapi

import (
	"bytes"
	"net/http"
	"slices"
	"strconv"
	"sync"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/edgeplane/edgeplane/internal/jsonenc"
)

// writeJSON answers status with v as JSON and its Content-Length. It
// encodes with github.com/go-json-experiment/json/v1, the encoding/json
// that Go runs on encoding/json/v2 (GOEXPERIMENT=jsonv2): encoding/json's
// bytes (json tags, Marshalers, sorted map keys, HTML escaping; see
// FuzzAppendJSONString), with an encoder made once per pooled buffer.
// The responses the API answers most write their own JSON, without
// reflection (on a page of 100 credentials, encoding was a fifth of the
// server's CPU; see the README's load harness): a model that encodes
// itself (a [jsonenc.Appender]: a credential, which every create and
// update of one answers) writes its own bytes, encoding/json's.
func writeJSON(w *exchange, status int, v any) {
	buf, ready := v.(*jsonBuffer) // the JSON itself (see jsonBuffer)
	if !ready {
		buf = getJSONBuffer()
	}
	defer putJSONBuffer(buf)
	w.setHeader(hdrContentType, headerContentType, "application/json")
	var err error
	switch a, ok := v.(jsonAppender); {
	case ready: // the JSON is in buf
	case ok:
		err = a.appendJSON(&buf.Buffer)
	default:
		if m, ok := v.(jsonenc.Appender); ok {
			if b, ok := m.AppendJSON(buf.AvailableBuffer()); ok {
				buf.Write(append(b, '\n')) // as Encode ends a value
				break
			}
		}
		err = buf.enc.Encode(v)
	}
	if err != nil {
		// Only a value the API never answers with fails; say nothing of it.
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.setHeader(hdrContentLength, headerContentLength, strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes()) // a write error means the client went away
}

// jsonAppender is a response that writes its own JSON, as Encode would:
// followed by a newline.
type jsonAppender interface {
	appendJSON(buf *bytes.Buffer) error
}

// encodedPage is a page of a list whose items came encoded
// ([edgeplane.Transport]): it writes what the map
// {field: items, "uri": uri, "next_page_uri": next} encodes to, keys in
// the same (sorted) order, copying the items' JSON.
type encodedPage struct {
	field string
	items func(dst []byte) ([]byte, error)
	uri   string
	next  *string
}

func (p *encodedPage) appendJSON(buf *bytes.Buffer) error {
	keys := [3]string{p.field, "next_page_uri", "uri"}
	slices.Sort(keys[:])
	b := buf.AvailableBuffer()
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonenc.AppendString(b, k), ':')
		var err error
		switch k {
		case p.field:
			b, err = p.items(b)
		case "next_page_uri":
			if p.next == nil {
				b = append(b, "null"...)
			} else {
				b = jsonenc.AppendString(b, *p.next)
			}
		case "uri":
			b = jsonenc.AppendString(b, p.uri)
		}
		if err != nil {
			return err
		}
	}
	b = append(b, '}', '\n')
	buf.Write(b)
	return nil
}

// jsonBuffers keeps response and request body buffers for reuse (a
// *jsonBuffer); one larger than maxPooledBuffer (a rare huge page or body)
// is left to the garbage collector.
var jsonBuffers = sync.Pool{New: func() any {
	b := new(jsonBuffer)
	b.enc = jsonv1.NewEncoder(&b.Buffer)
	return b
}}

const maxPooledBuffer = 1 << 20

// jsonBuffer is a buffer with an encoder that writes to it (an encoder
// keeps no state between values but its writer): one made per buffer, not
// per response. A route may answer with a *jsonBuffer from
// getJSONBuffer: it holds the response's JSON, as Encode writes it (with
// a newline), and writeJSON answers with it and returns it to the pool.
type jsonBuffer struct {
	bytes.Buffer
	enc *jsonv1.Encoder
}

// getJSONBuffer returns an empty buffer from jsonBuffers.
func getJSONBuffer() *jsonBuffer {
	b := jsonBuffers.Get().(*jsonBuffer)
	b.Reset()
	return b
}

// putJSONBuffer returns b to jsonBuffers unless it grew too large.
func putJSONBuffer(b *jsonBuffer) {
	if b.Cap() <= maxPooledBuffer {
		jsonBuffers.Put(b)
	}
}
