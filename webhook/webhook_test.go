package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/refusedport"
	"github.com/edgeplane/edgeplane/webhook"
)

// The specification's published example (its libraries' shared test
// vector): this key, id, timestamp and payload sign to this signature.
func TestSignSpecificationVector(t *testing.T) {
	key, err := base64.StdEncoding.DecodeString("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got, err := webhook.Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
}

// verify checks a request as the specification says, by hand: v1, then
// base64(HMAC-SHA256(key, id.timestamp.body)).
func verify(key []byte, h http.Header, body []byte) bool {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "." + string(body)))
	return h.Get("webhook-signature") == "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func TestSend(t *testing.T) {
	secret := events.NewSecret()
	key, _ := events.ParseSecret(secret)
	var redirected atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !verify(key, r.Header, body) || r.Header.Get("X-Team") != "ops" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad signature", 401)
			return
		}
		ts, _ := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
		if ts != 1_800_000_000 || r.Header.Get("webhook-id") != "ev_1" {
			http.Error(w, "bad id or timestamp", 400)
			return
		}
		w.WriteHeader(204)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/target", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/target", func(w http.ResponseWriter, r *http.Request) { redirected.Add(1) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		for range 1024 {
			w.Write(make([]byte, 1024))
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	now := func() time.Time { return time.Unix(1_800_000_000, 0) }
	loopback := webhook.NewSender([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, 5*time.Second, now)
	req := func(path string) webhook.Request {
		return webhook.Request{URL: srv.URL + path, Headers: map[string]string{"X-Team": "ops"}, Key: key, ID: "ev_1", Body: []byte(`{"id":"ev_1"}`)}
	}
	ctx := context.Background()
	if err := loopback.Send(ctx, req("/ok")); err != nil {
		t.Fatalf("send: %v", err)
	}
	if err := loopback.Send(ctx, req("/redirect")); err == nil || !strings.Contains(err.Error(), "redirects are not followed") || redirected.Load() != 0 {
		t.Fatalf("redirect: %v (target hit %d times)", err, redirected.Load())
	}
	if err := loopback.Send(ctx, req("/big")); err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("500: %v", err)
	}
	// Public addresses only by default: the test server's loopback is
	// refused before any connection.
	public := webhook.NewSender(nil, 5*time.Second, now)
	if err := public.Send(ctx, req("/ok")); !errors.Is(err, webhook.ErrAddressNotAllowed) || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("public only: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	top := func(n int64) int64 { return n - 1 }
	bottom := func(int64) int64 { return 0 }
	cases := []struct {
		n        int
		low, top time.Duration
	}{
		{1, 500 * time.Millisecond, time.Second},
		{2, time.Second, 2 * time.Second},
		{5, 8 * time.Second, 16 * time.Second},
		{30, 5 * time.Minute, 10 * time.Minute},
	}
	for _, c := range cases {
		if got := webhook.Backoff(c.n, time.Second, 10*time.Minute, bottom); got != c.low {
			t.Errorf("Backoff(%d) low = %v, want %v", c.n, got, c.low)
		}
		if got := webhook.Backoff(c.n, time.Second, 10*time.Minute, top); got != c.top {
			t.Errorf("Backoff(%d) top = %v, want %v", c.n, got, c.top)
		}
	}
}

// An attempt that fails before an answer says what happened in words
// (it is the destination's delivery.last_error), never Go's chain of
// wrapped errors, and unwraps to the transport's error.
func TestSendDescribesFailures(t *testing.T) {
	mux := http.NewServeMux()
	stop := make(chan struct{})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the server notices the client hang up only after the body
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})
	mux.HandleFunc("/hangup", func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tlsSrv := httptest.NewTLSServer(mux)
	defer tlsSrv.Close()
	defer close(stop)
	refused := refusedport.Hold(t)
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	cases := []struct {
		name     string
		networks []netip.Prefix
		url      string
		want     string
		is       error
	}{
		{"address not allowed", nil, srv.URL + "/ok", "the address is not allowed: 127.0.0.1 is loopback; event destinations may reach public addresses only on this server", webhook.ErrAddressNotAllowed},
		{"address outside the networks", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, srv.URL + "/ok",
			"the address is not allowed: 127.0.0.1 is outside the allowed networks; event destinations may reach only 10.0.0.0/8 on this server", webhook.ErrAddressNotAllowed},
		{"connection refused", loopback, "http://" + refused + "/hook", "the connection to " + refused + " was refused", syscall.ECONNREFUSED},
		{"no answer in time", loopback, srv.URL + "/slow", "no answer within 200ms", nil},
		{"closed before an answer", loopback, srv.URL + "/hangup", "the connection was closed before an answer", nil},
		{"untrusted certificate", loopback, tlsSrv.URL + "/ok", "the receiver's TLS certificate was not accepted: certificate signed by unknown authority", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			timeout := 10 * time.Second
			if strings.HasSuffix(c.url, "/slow") {
				timeout = 200 * time.Millisecond
			}
			snd := webhook.NewSender(c.networks, timeout, nil)
			err := snd.Send(context.Background(), webhook.Request{URL: c.url, Key: make([]byte, 32), ID: "ev_1", Body: []byte(`{}`)})
			if err == nil || err.Error() != c.want {
				t.Fatalf("Send: %v, want %q", err, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("Send: %v does not unwrap to %v", err, c.is)
			}
		})
	}
}
