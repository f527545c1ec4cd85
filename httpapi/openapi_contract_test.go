package httpapi_test

// The contract between the OpenAPI document and the server: every request
// the tests send through server.do (so every end-to-end call) and its
// response are checked against the document with kin-openapi's
// openapi3filter. The document may not refuse a request the server
// accepts, and every response must be one the document describes: its
// status among the operation's, its headers and its body valid against the
// schema. A path or method the document does not have must be answered
// 404 or 405 (with Allow) and the Error schema.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// contract is the document of a Handler over a Service whose base URL is
// base, loaded and validated by kin-openapi, with its router.
type contract struct {
	raw    []byte
	doc    *openapi3.T
	router routers.Router
	seen   sync.Map // exchange hash -> error (nil: agrees)
}

// loadContract serves GET /openapi.json from a fresh Handler with base
// as its base URL and loads the document.
func loadContract(base string) (*contract, error) {
	h, err := httpapi.New(mustService(edgeplane.New(memstore.New(), edgeplane.Options{BaseURL: base})), httpapi.Options{})
	if err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	if rec.Code != 200 {
		return nil, fmt.Errorf("GET /openapi.json: %d", rec.Code)
	}
	return parseContract(rec.Body.Bytes())
}

func parseContract(raw []byte) (*contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	return &contract{raw: raw, doc: doc, router: router}, nil
}

// e2eContract is the contract of the servers newServer starts.
var e2eContract = sync.OnceValues(func() (*contract, error) { return loadContract(base) })

// bearerOnly is the document's security check: the bearer scheme with a
// key (whether the key is valid is the server's business).
func bearerOnly(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	scheme, key, _ := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
		return errors.New("no bearer API key")
	}
	return nil
}

// checkContract checks one exchange of server.do against the document.
// req is the request as sent (its URL that of the test server), body its
// body.
func checkContract(t testing.TB, req *http.Request, body string, status int, header http.Header, respBody []byte) {
	t.Helper()
	if req.Method == http.MethodOptions || req.Method == http.MethodHead {
		return // CORS preflights and HEAD are protocol, not operations
	}
	c, err := e2eContract()
	if err != nil {
		t.Fatalf("OpenAPI document: %v", err)
	}
	if err := c.checkOnce(req, body, status, header, respBody); err != nil {
		t.Errorf("%s %s: the exchange disagrees with the OpenAPI document: %v\nrequest body: %.300s\nresponse %d: %.500s",
			req.Method, req.URL.RequestURI(), err, body, status, respBody)
	}
}

// checkOnce is check, remembering the verdicts on exchanges already seen:
// kin-openapi compiles a JSON Schema validator for every body it checks,
// and the end-to-end tests repeat many exchanges (snapshots of an account
// before and after a refused request).
func (c *contract) checkOnce(sent *http.Request, body string, status int, header http.Header, respBody []byte) error {
	h := sha256.New()
	for _, part := range []string{sent.Method, sent.URL.RequestURI(), sent.Header.Get("Authorization"), sent.Header.Get(httpapi.HeaderVersion),
		sent.Header.Get("Content-Type"), body, strconv.Itoa(status), header.Get("Content-Type"), header.Get("Allow"),
		header.Get("Retry-After"), strconv.FormatBool(header.Get(httpapi.HeaderOperationID) != ""), string(respBody)} {
		h.Write([]byte(strconv.Itoa(len(part)) + ":" + part))
	}
	key := string(h.Sum(nil))
	if v, ok := c.seen.Load(key); ok {
		err, _ := v.(error)
		return err
	}
	err := c.check(sent, body, status, header, respBody)
	c.seen.Store(key, err)
	return err
}

func (c *contract) check(sent *http.Request, body string, status int, header http.Header, respBody []byte) error {
	ctx := context.Background()
	// The document's server is the Service's base URL.
	u, err := url.Parse(base + sent.URL.RequestURI())
	if err != nil {
		return fmt.Errorf("request URI: %w", err)
	}
	req := sent.Clone(ctx)
	req.URL = u
	req.Host = u.Host
	req.Body = io.NopCloser(strings.NewReader(body))
	route, params, err := c.router.FindRoute(req)
	for name, v := range params {
		if err == nil && v == "" {
			// The router lets a parameter match nothing
			// (PATCH /ip_policies matches PATCH /ip_policies/{id}).
			err = fmt.Errorf("empty path parameter %s", name)
		}
	}
	if err != nil {
		// Not in the document: the server must say so, 404 or 405 (the
		// document's router tells them apart less well than the mux).
		switch {
		case status == http.StatusMethodNotAllowed && header.Get("Allow") == "":
			return errors.New("405 without an Allow header")
		case status != http.StatusNotFound && status != http.StatusMethodNotAllowed:
			return fmt.Errorf("the document has no such operation (%v), yet the server answered %d", err, status)
		}
		return c.errorBody(respBody)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: bearerOnly, MultiError: true},
	}
	if reqErr := openapi3filter.ValidateRequest(ctx, in); reqErr != nil && (status < 400 || status >= 500) {
		return fmt.Errorf("the document refuses the request (%v), yet the server answered %d", reqErr, status)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(respBody)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("response: %w", err)
	}
	return c.responseHeaders(route, status, header)
}

// responseHeaders checks that the headers the document requires of the
// response are there (openapi3filter checks their values).
func (c *contract) responseHeaders(route *routers.Route, status int, header http.Header) error {
	resp := route.Operation.Responses.Status(status)
	if resp == nil || resp.Value == nil {
		return nil
	}
	for name, h := range resp.Value.Headers {
		if h.Value != nil && h.Value.Required && header.Get(name) == "" {
			return fmt.Errorf("response %d lacks the required header %s", status, name)
		}
	}
	return nil
}

// errorBody validates b against the Error schema.
func (c *contract) errorBody(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("error body is not JSON: %w", err)
	}
	ref := c.doc.Components.Schemas["Error"]
	if ref == nil || ref.Value == nil {
		return errors.New("the document has no Error schema")
	}
	return ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
}
