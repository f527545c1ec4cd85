package tunnel_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"golang.ngrok.com/ngrok/config"
)

// TestEndpointPool: the SDK unchanged, WithPoolingEnabled(true) in two
// sessions on one domain: both binds are online under IDs of their own
// and the same URL, each reached through its session; a bind without
// pooling on the pool's domain is refused with the original's words and
// Conflict's code; when one session closes, its member goes and the
// other keeps serving.
func TestEndpointPool(t *testing.T) {
	e := newEnv(t, endpointOptions)
	e.reserve(t, "app.example.com")
	_, token := e.token(t, "bind:app.example.com")
	s1, s2, s3 := e.connect(t, e.addr, token), e.connect(t, e.addr, token), e.connect(t, e.addr, token)
	pooled := config.HTTPEndpoint(config.WithDomain("app.example.com"), config.WithPoolingEnabled(true))
	t1, err := s1.Listen(context.Background(), pooled)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := s2.Listen(context.Background(), pooled)
	if err != nil {
		t.Fatalf("the second member: %v", err)
	}
	go serve(t1)
	go serve(t2)
	if t1.ID() == t2.ID() || t1.URL() != "https://app.example.com" || t2.URL() != t1.URL() {
		t.Fatalf("members %s %s and %s %s", t1.ID(), t1.URL(), t2.ID(), t2.URL())
	}
	for _, id := range []string{t1.ID(), t2.ID()} {
		if code, body, err := e.get(t, id, "/x"); err != nil || code != 200 || !strings.HasPrefix(body, "/x from ") {
			t.Errorf("member %s: %d %q %v", id, code, body, err)
		}
		if ep := e.endpoint(t, id); !ep.PoolingEnabled || ep.Pool == nil || len(ep.Pool.Endpoints) != 2 {
			t.Errorf("member %s as read: %+v", id, ep)
		}
	}

	_, err = s3.Listen(context.Background(), config.HTTPEndpoint(config.WithDomain("app.example.com")))
	if err == nil || !strings.Contains(err.Error(), "the endpoint 'https://app.example.com' is already online as a pool of endpoints with pooling enabled. Either 1.") ||
		!strings.Contains(err.Error(), apierr.Conflict.Wire()) {
		t.Fatalf("a bind without pooling on the pool's domain: %v", err)
	}

	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := eventually(5*time.Second, func() bool {
		_, err := e.svc.Host().Tunnels().GetEndpoint(e.ctx, e.admin.AccountID, t1.ID())
		return errors.Is(err, apierr.ErrNotFound)
	}); !ok {
		t.Fatalf("member %s is still online after its session closed", t1.ID())
	}
	if code, _, err := e.get(t, t2.ID(), "/y"); err != nil || code != 200 {
		t.Errorf("the remaining member: %d %v", code, err)
	}
	if ep := e.endpoint(t, t2.ID()); ep.Pool == nil || len(ep.Pool.Endpoints) != 1 {
		t.Errorf("the pool after a member left: %+v", ep.Pool)
	}
}
