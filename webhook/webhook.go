// Package webhook delivers events to event destinations as signed HTTP
// requests, at least once, in order per destination.
//
// # Format
//
// Each event is one POST of its JSON (id, type, created_at, account_id,
// subscription_id, object) with the headers of Standard Webhooks
// (https://www.standardwebhooks.com): webhook-id (the event's ID, the
// same on every retry, so a receiver deduplicates), webhook-timestamp
// (Unix seconds of the attempt) and webhook-signature ("v1," then the
// base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the destination's
// whsec_ key), signed by the specification's Go library
// (github.com/standard-webhooks/standard-webhooks/libraries).
//
// # Delivery
//
// [Run] follows every destination a [Source] lists, one goroutine each
// (the per-destination concurrency of one that keeps order). A
// destination's events come from the store's change feed after its
// cursor, the last revision delivered, which the Source keeps in the
// store: after a restart, or on the replica that takes over, delivery
// resumes from it, so an event is delivered at least once and a
// duplicate only repeats what was not yet recorded as delivered (at
// most one batch). An answer 2xx is a delivery; anything else (another
// status, a timeout, a refused connection or address) is retried with
// exponential backoff and equal jitter ([Backoff]), from MinBackoff
// doubling up to MaxBackoff, while later events of the destination wait. Once an
// event has failed for longer than the retry window, it is dropped
// (counted) and the destination marked failing: from then on each event
// gets one attempt, dropped when it fails, until one succeeds and the
// destination is ok again. The log says when a destination turns failing
// and when it recovers, once each, not at each attempt. When the feed has
// compacted past a cursor the revisions lost are counted as skipped,
// never silently passed over.
//
// [Metrics] follow each destination: its attempts by outcome, its
// retries, the revisions skipped, and its lag (revisions after its
// cursor, age of its oldest event not yet delivered), which is 0 once it
// has caught up with the feed.
//
// # Bounds
//
// Destinations reach public addresses only unless the operator names the
// networks allowed (package internal/netguard, checked on every address
// dialled; the Service refuses a destination pointing elsewhere when it
// is created, but a name can resolve elsewhere later); redirects are not
// followed (a 3xx is a failure); a response
// body is read to at most [MaxResponseBytes]; each attempt gets Timeout;
// at most MaxInFlight attempts run at once across all destinations.
//
// # Imports
//
// Run reads the destinations, their events and their delivery states
// through [Source], declared here: the Service's Host implements it. The
// package imports the leaf events (and internal/netguard), never the root
// package or the policy engine; internal/layering's tests keep it so.
package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/edgeplane/edgeplane/internal/netguard"
)

// MaxResponseBytes is how much of a receiver's response body is read.
const MaxResponseBytes = 64 << 10

// ErrAddressNotAllowed is the cause (under errors.Is) of an attempt to a
// destination whose address the network policy refused.
var ErrAddressNotAllowed = errors.New("webhook: destination address not allowed")

// Sign returns the Standard Webhooks signature header of an event: "v1,"
// then the base64 HMAC-SHA256 of "<id>.<unix timestamp>.<body>" under key.
func Sign(key []byte, id string, at time.Time, body []byte) (string, error) {
	wh, err := standardwebhooks.NewWebhookRaw(key)
	if err != nil {
		return "", err
	}
	return wh.Sign(id, at, body)
}

// Request is one attempt to deliver an event.
type Request struct {
	// URL receives the event.
	URL string
	// Headers are the destination's own headers.
	Headers map[string]string
	// Key signs the event.
	Key []byte
	// ID is the event's ID (webhook-id).
	ID string
	// Body is the event's JSON.
	Body []byte
}

// Sender makes attempts: signed POSTs through a client that dials only
// the addresses its policy allows and follows no redirects.
type Sender struct {
	client  *http.Client
	now     func() time.Time
	timeout time.Duration
	allowed string // the networks allowed, in words (netguard.Policy.String)
}

// NewSender returns a Sender whose attempts reach public addresses, or,
// when networks is not empty, only those networks; each attempt gets
// timeout (default 10s). now is the clock of webhook-timestamp (default
// time.Now).
func NewSender(networks []netip.Prefix, timeout time.Duration, now func() time.Time) *Sender {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if now == nil {
		now = time.Now
	}
	guard := netguard.New(networks)
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: guard.Control(ErrAddressNotAllowed)}
	t := &http.Transport{
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	c := &http.Client{Transport: t, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Sender{client: c, now: now, timeout: timeout, allowed: guard.String()}
}

// Send makes one attempt and returns nil when the receiver answered 2xx,
// else an error that says what happened, in words for the destination's
// owner (it is their delivery.last_error): the status and the start of
// the body, or what failed before an answer ("the connection to
// 10.1.2.3:9 was refused", "no answer within 10s", "the address is not
// allowed: ..."), never Go's chain of wrapped errors, which the error
// unwraps to.
func (s *Sender) Send(ctx context.Context, r Request) error {
	at := s.now()
	sig, err := Sign(r.Key, r.ID, at, r.Body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return err
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "edgeplane-webhooks")
	req.Header.Set(standardwebhooks.HeaderWebhookID, r.ID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := s.client.Do(req)
	if err != nil {
		return s.describe(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	snippet := string(body)
	if len(snippet) > 200 {
		snippet = snippet[:200]
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return fmt.Errorf("answered %s (redirects are not followed)", resp.Status)
	}
	return fmt.Errorf("answered %s: %q", resp.Status, snippet)
}

// attemptError is an attempt's failure before an answer: what happened,
// in words, and the transport's error.
type attemptError struct {
	msg string
	err error
}

func (e *attemptError) Error() string { return e.msg }
func (e *attemptError) Unwrap() error { return e.err }

// describe returns err, the failure of an attempt's request, as an
// error that says what happened in words and unwraps to err.
func (s *Sender) describe(err error) error {
	var (
		refused *netguard.RefusedError
		dnsErr  *net.DNSError
		certErr *tls.CertificateVerificationError
		opErr   *net.OpError
		netErr  net.Error
	)
	var msg string
	switch {
	case errors.As(err, &refused):
		msg = "the address is not allowed: " + refused.Reason + "; event destinations may reach " + s.allowed + " on this server"
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		msg = "the host " + dnsErr.Name + " did not resolve (no such host)"
	case errors.As(err, &dnsErr):
		msg = "the host " + dnsErr.Name + " did not resolve (the name server failed)"
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		msg = fmt.Sprintf("no answer within %v", s.timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		msg = "the connection was refused"
		if errors.As(err, &opErr) && opErr.Addr != nil {
			msg = "the connection to " + opErr.Addr.String() + " was refused"
		}
	case errors.As(err, &certErr):
		msg = "the receiver's TLS certificate was not accepted: " + strings.TrimPrefix(certErr.Err.Error(), "x509: ")
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		msg = "the connection was closed before an answer"
	default:
		msg = "the request failed: " + innermost(err).Error()
	}
	return &attemptError{msg: msg, err: err}
}

// innermost returns the last error of err's chain (its first cause).
func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// Backoff returns the wait before attempt n+1 after n failed attempts
// (n >= 1): a random duration in [d/2, d], d = min·2^(n-1) capped at max
// ("equal jitter", so waits grow yet replicas and destinations spread).
func Backoff(n int, minWait, maxWait time.Duration, rnd func(int64) int64) time.Duration {
	d := minWait
	for i := 1; i < n && d < maxWait; i++ {
		d *= 2
	}
	d = min(d, maxWait)
	if rnd == nil {
		rnd = rand.Int64N
	}
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + time.Duration(rnd(int64(half)+1))
}
