package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The inspector's part of the agent API, served when inspection is on
// (else its paths are 404s):
//
//	GET    /api/requests/http        {"uri": ..., "requests": [CAPTURE, ...]}, newest first; ?limit=N&tunnel_name=NAME
//	GET    /api/requests/http/{id}   CAPTURE
//	POST   /api/requests/http        {"id": ..., "tunnel_name"?: ..., "modifications"?: {...}}: replay; 204
//	DELETE /api/requests/http        clears; 204
//	GET    /inspect/http             the web page
//
// CAPTURE is in the original agent's shape (uri, id, tunnel_name,
// remote_addr, start, duration in nanoseconds, request {method, proto,
// headers, uri, raw}, response {status, status_code, proto, headers,
// raw}), raw the base64 of the message as captured (its body cut at 64
// KiB), with two additions to each side: truncated and body_size.
// POST and DELETE change the agent's state, so beyond the loopback Host
// they must be application/json (DELETE may have no body), and a
// request a browser marks cross-site (Origin of another host, or
// Sec-Fetch-Site other than same-origin or none) is refused: a page of
// another site cannot make the agent replay a request.

// maxReplayBody bounds POST /api/requests/http's body.
const maxReplayBody = 1 << 20

// replayTimeout bounds a replay: dial, request and response.
const replayTimeout = 30 * time.Second

type apiCaptureList struct {
	URI      string       `json:"uri"`
	Requests []apiCapture `json:"requests"`
}

type apiCapture struct {
	URI        string              `json:"uri"`
	ID         string              `json:"id"`
	TunnelName string              `json:"tunnel_name"`
	RemoteAddr string              `json:"remote_addr"`
	Start      time.Time           `json:"start"`
	Duration   int64               `json:"duration"` // nanoseconds, as the original's
	Request    apiCapturedRequest  `json:"request"`
	Response   *apiCapturedRequest `json:"response"` // null: no response came
}

// apiCapturedRequest is the request or the response of a capture (a
// response has status and status_code, a request method and uri).
type apiCapturedRequest struct {
	Method     string      `json:"method,omitempty"`
	Status     string      `json:"status,omitempty"`
	StatusCode int         `json:"status_code,omitempty"`
	Proto      string      `json:"proto"`
	Headers    http.Header `json:"headers"`
	URI        string      `json:"uri,omitempty"`
	Raw        []byte      `json:"raw"` // base64
	Truncated  bool        `json:"truncated"`
	BodySize   int64       `json:"body_size"`
}

func (c *capture) json() apiCapture {
	a := apiCapture{URI: "/api/requests/http/" + c.id, ID: c.id, TunnelName: c.tunnel, RemoteAddr: c.remoteAddr,
		Start: c.start, Duration: int64(c.duration),
		Request: apiCapturedRequest{Method: c.req.method, Proto: c.req.proto, Headers: nonNil(c.req.header), URI: c.req.uri,
			Raw: c.req.raw(), Truncated: c.req.body.truncated, BodySize: c.req.body.size}}
	if r := c.resp; r != nil {
		a.Response = &apiCapturedRequest{Status: r.status, StatusCode: r.code, Proto: r.proto, Headers: nonNil(r.header),
			Raw: r.raw(), Truncated: r.body.truncated, BodySize: r.body.size}
	}
	return a
}

func nonNil(h http.Header) http.Header {
	if h == nil {
		return http.Header{}
	}
	return h
}

// replayRequest is POST /api/requests/http's body.
type replayRequest struct {
	ID         string `json:"id"`
	TunnelName string `json:"tunnel_name"` // the endpoint whose upstream gets it ("": the capture's)
	// Modifications change the request replayed; each field left out
	// keeps the captured request's.
	Modifications *replayModifications `json:"modifications"`
}

// replayModifications is edgeplane's addition to the original's replay.
type replayModifications struct {
	Method *string `json:"method"`
	URI    *string `json:"uri"` // path and query: "/hooks?x=1"
	// Headers replace all the captured headers (Host too: without one,
	// the captured Host is kept).
	Headers map[string][]string `json:"headers"`
	Body    *string             `json:"body"` // the whole body, as text
}

//go:embed inspectui
var inspectUI embed.FS

var inspectPage = template.Must(template.ParseFS(inspectUI, "inspectui/http.html"))

// inspectRoutes registers the inspector's routes on mux.
func (s *agentState) inspectRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/requests/http", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit := 0
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				writeAPIError(w, http.StatusBadRequest, fmt.Sprintf("limit %q: want a number from 1", v))
				return
			}
			limit = n
		}
		list := apiCaptureList{URI: "/api/requests/http", Requests: []apiCapture{}}
		for _, c := range s.ins.captures(q.Get("tunnel_name"), limit) {
			list.Requests = append(list.Requests, c.json())
		}
		writeAPI(w, http.StatusOK, list)
	})
	mux.HandleFunc("GET /api/requests/http/{id}", func(w http.ResponseWriter, r *http.Request) {
		c := s.ins.get(r.PathValue("id"))
		if c == nil {
			writeAPIError(w, http.StatusNotFound, fmt.Sprintf("no captured request %q (the inspector keeps the last %d of each endpoint)", r.PathValue("id"), s.ins.limits.perTunnel))
			return
		}
		writeAPI(w, http.StatusOK, c.json())
	})
	mux.Handle("POST /api/requests/http", sameSiteJSON(http.HandlerFunc(s.serveReplay)))
	mux.Handle("DELETE /api/requests/http", sameSiteJSON(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ins.clear()
		w.WriteHeader(http.StatusNoContent)
	})))

	static, _ := fs.Sub(inspectUI, "inspectui")
	mux.Handle("GET /inspect/static/", http.StripPrefix("/inspect/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /inspect/http", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		var names []string
		for _, t := range s.tunnels {
			if t.target.scheme != "" {
				names = append(names, t.name)
			}
		}
		s.mu.Unlock()
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Frame-Options", "DENY") // a Replay button must not be clicked through another page
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		_ = inspectPage.Execute(w, struct{ Tunnels []string }{names})
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/inspect/http", http.StatusFound)
	})
}

// sameSiteJSON refuses a request that changes the agent's state unless
// it is JSON (a DELETE may have no body) and no browser marks it as
// sent by a page of another site.
func sameSiteJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			writeAPIError(w, http.StatusForbidden, "refused: the request comes from a page of another site (Sec-Fetch-Site: "+site+")")
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			u, err := url.Parse(origin)
			if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
				writeAPIError(w, http.StatusForbidden, "refused: the request comes from a page of another origin ("+origin+")")
				return
			}
		}
		ct := r.Header.Get("Content-Type")
		noBody := r.ContentLength == 0 && len(r.TransferEncoding) == 0
		if mt, _, _ := mime.ParseMediaType(ct); mt != "application/json" && !(r.Method == http.MethodDelete && ct == "" && noBody) {
			writeAPIError(w, http.StatusUnsupportedMediaType, "the body must be JSON: give Content-Type: application/json")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveReplay is POST /api/requests/http: it sends a captured request
// again to the upstream, where it is captured as a new request.
func (s *agentState) serveReplay(w http.ResponseWriter, r *http.Request) {
	var rr replayRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxReplayBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rr); err != nil {
		writeAPIError(w, http.StatusBadRequest, "the body: "+jsonProblem(err)+`; want {"id": "...", "tunnel_name": "...", "modifications": {"method", "uri", "headers", "body"}}`)
		return
	}
	c := s.ins.get(rr.ID)
	if c == nil {
		writeAPIError(w, http.StatusNotFound, fmt.Sprintf("no captured request %q", rr.ID))
		return
	}
	tunnel, target := c.tunnel, c.target
	if rr.TunnelName != "" {
		t := s.tunnel(rr.TunnelName)
		if t == nil || t.target.scheme == "" {
			writeAPIError(w, http.StatusNotFound, fmt.Sprintf("tunnel_name %q: no http endpoint of that name", rr.TunnelName))
			return
		}
		tunnel, target = t.name, t.target
	}
	raw, method, err := replayMessage(c, rr.Modifications)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), replayTimeout)
	defer cancel()
	if err := s.ins.replay(ctx, raw, method, tunnel, r.RemoteAddr, target); err != nil {
		writeAPIError(w, http.StatusBadGateway, fmt.Sprintf("replay to %s: %v", target, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// jsonProblem says what is wrong with a JSON body.
func jsonProblem(err error) string {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return fmt.Sprintf("more than %d bytes", mbe.Limit)
	}
	return err.Error()
}

// tunnel returns the tunnel named name, or nil.
func (s *agentState) tunnel(name string) *apiTunnel {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tunnels {
		if t.name == name {
			return t
		}
	}
	return nil
}

// replayMessage returns the HTTP/1.1 message that replays c with mods,
// and its method. The body is the captured one (refused when it was
// truncated, unless mods gives one), framed by Content-Length.
func replayMessage(c *capture, mods *replayModifications) ([]byte, string, error) {
	method, uri, header, body := c.req.method, c.req.uri, c.req.header.Clone(), string(c.req.body.data)
	if header == nil {
		header = http.Header{}
	}
	truncated := c.req.body.truncated
	var problems []string
	if mods != nil {
		if mods.Method != nil {
			method = *mods.Method
			if !isToken(method) || len(method) > 32 {
				problems = append(problems, fmt.Sprintf("modifications.method %q: want an HTTP method (GET, POST, ...)", method))
			}
		}
		if mods.URI != nil {
			uri = *mods.URI
			if !strings.HasPrefix(uri, "/") || len(uri) > 8<<10 || strings.ContainsFunc(uri, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
				problems = append(problems, fmt.Sprintf("modifications.uri %q: want a path and query starting with / (at most 8 KiB, no spaces or control characters)", uri))
			}
		}
		if mods.Headers != nil {
			host := header.Values("Host")
			header = http.Header{}
			for k, vs := range mods.Headers {
				if !isToken(k) {
					problems = append(problems, fmt.Sprintf("modifications.headers %q: not a header name", k))
					continue
				}
				for _, v := range vs {
					if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
						problems = append(problems, fmt.Sprintf("modifications.headers.%s: a value must not hold control characters (CR, LF, NUL, ...)", k))
					}
					header.Add(k, v)
				}
			}
			if header.Get("Host") == "" && len(host) > 0 {
				header["Host"] = host
			}
		}
		if mods.Body != nil {
			body, truncated = *mods.Body, false
		}
	}
	if truncated {
		problems = append(problems, fmt.Sprintf("the captured body was cut at %d of its %d bytes: give the whole body as modifications.body to replay it", len(c.req.body.data), c.req.body.size))
	}
	if len(problems) > 0 {
		return nil, "", errors.New(strings.Join(problems, "; "))
	}
	header.Del("Transfer-Encoding")
	if len(body) > 0 || header.Get("Content-Length") != "" {
		header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, uri)
	if host := header.Get("Host"); host != "" {
		fmt.Fprintf(&b, "Host: %s\r\n", host) // first, as clients send it
		header.Del("Host")
	}
	_ = header.Write(&b)
	b.WriteString("\r\n")
	b.WriteString(body)
	return []byte(b.String()), method, nil
}

// isToken says whether s is an HTTP token (a method, a header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// replay sends raw, a request of method, to target on a connection of
// its own, captured as a request of tunnel from remoteAddr, and reads
// its response. It returns once the capture is added.
func (ins *inspector) replay(ctx context.Context, raw []byte, method, tunnel, remoteAddr string, target agentTarget) error {
	up, err := (&net.Dialer{}).DialContext(ctx, "tcp", target.addr)
	if err != nil {
		return err
	}
	defer up.Close()
	if target.scheme == "https" {
		host, _, _ := net.SplitHostPort(target.addr)
		up = tls.Client(up, &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12})
	}
	if d, ok := ctx.Deadline(); ok {
		_ = up.SetDeadline(d)
	}
	tap := ins.tap(tunnel, remoteAddr, target)
	_, err = (&tee{w: up, tap: tap.req}).Write(raw)
	tap.req.Close()
	if err == nil {
		br := bufio.NewReader(io.TeeReader(up, &tee{w: io.Discard, tap: tap.resp}))
		var resp *http.Response
		for {
			resp, err = http.ReadResponse(br, &http.Request{Method: method})
			if err != nil || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
				break
			}
		}
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
		}
	}
	tap.resp.Close()
	up.Close()
	select {
	case <-tap.done:
	case <-ctx.Done():
	}
	return err
}
