package tunnel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/tunnel"
	"golang.ngrok.com/muxado/v2"
)

// tryRPC is rpc for a goroutine other than the test's: it returns what
// went wrong instead of failing the test.
func (a *rawAgent) tryRPC(typ uint32, req, resp any) error {
	str, err := a.mux.OpenTypedStream(muxado.StreamType(typ))
	if err != nil {
		return err
	}
	defer str.Close()
	if err := json.NewEncoder(str).Encode(req); err != nil {
		return err
	}
	_ = str.SetReadDeadline(time.Now().Add(10 * time.Second))
	return json.NewDecoder(str).Decode(resp)
}

// gatedHost is a Host whose binds (StartLabeledTunnel, BindEndpoint)
// wait, once a test sets a gate, until the test opens it: each call
// announces itself on entered first. A test thus knows when each of a
// round's requests is either answered or inside the Host, and then lets
// them all go at once: the widest race a check before the Host call can
// lose, made without timing.
type gatedHost struct {
	tunnel.Host
	entered chan struct{}
	mu      sync.Mutex
	gate    chan struct{} // nil: calls pass
}

func (h *gatedHost) wait() {
	h.mu.Lock()
	gate := h.gate
	h.mu.Unlock()
	if gate != nil {
		h.entered <- struct{}{}
		<-gate
	}
}

// setGate makes binds wait for gate (nil: no wait).
func (h *gatedHost) setGate(gate chan struct{}) {
	h.mu.Lock()
	h.gate = gate
	h.mu.Unlock()
}

func (h *gatedHost) StartLabeledTunnel(ctx context.Context, accountID, sessionID string, params agents.LabeledTunnelParams) (*backends.Tunnel, error) {
	h.wait()
	return h.Host.StartLabeledTunnel(ctx, accountID, sessionID, params)
}

func (h *gatedHost) BindEndpoint(ctx context.Context, accountID, sessionID string, params agents.EndpointParams) (*agents.Endpoint, error) {
	h.wait()
	return h.Host.BindEndpoint(ctx, accountID, sessionID, params)
}

// TestTunnelsPerSessionUnderConcurrency: 1,000 binds on one session, in
// rounds of 16 at once (the requests a session handles at once) that
// reach the Host together, half labeled tunnels and half http endpoints,
// one in ten of those on a domain not reserved (the Host refuses it
// after its slot was reserved): exactly MaxTunnelsPerSession are held
// (at the session, in the metrics and in the store), every other bind is
// refused as too many (ERR_SERVICE_106, counted under too_many_tunnels)
// or by the Host, whose refusals give their slots back. The session
// binds exactly one more once one of its tunnels is unbound, and an
// honest agent of the account is served.
func TestTunnelsPerSessionUnderConcurrency(t *testing.T) {
	const (
		binds   = 1000
		workers = 16
		limit   = tunnel.DefaultMaxTunnelsPerSession
	)
	host := &gatedHost{entered: make(chan struct{}, workers)}
	e := newEnvHost(t, tunnel.Options{}, func(h tunnel.Host) tunnel.Host { host.Host = h; return host })
	e.reserve(t, "*.apps.example.com")
	_, token := e.token(t)
	a := dialRaw(t, e)
	if r := a.auth(t, token, "", ""); r.Error != "" {
		t.Fatalf("Auth: %+v", r)
	}

	type answer struct {
		i    int
		ID   string
		Err  error
		Resp string // the answer's Error
	}
	var retries atomic.Int64
	bind := func(i int) answer {
		typ, req := uint32(1), map[string]any{"Proto": "http", "Opts": map[string]any{"Domain": fmt.Sprintf("d%d.apps.example.com", i)}}
		switch {
		case i%2 == 0:
			typ, req = 7, map[string]any{"Labels": map[string]string{"app": fmt.Sprintf("web%d", i)}}
		case i%20 == 1:
			req["Opts"] = map[string]any{"Domain": fmt.Sprintf("d%d.unreserved.example.com", i)}
		}
		var resp struct {
			ID    string `json:"Id"`
			Error string
		}
		err := a.tryRPC(typ, req, &resp)
		for errors.Is(err, io.EOF) {
			// Closed unanswered: the server was still ending a request
			// of the previous round when this one came (it handles 16
			// at once). Sent again.
			retries.Add(1)
			err = a.tryRPC(typ, req, &resp)
		}
		return answer{i: i, ID: resp.ID, Err: err, Resp: resp.Error}
	}

	var (
		held, tooMany, byHost int
		ids, other            []string
	)
	for sent := 0; sent < binds; {
		n := min(workers, binds-sent)
		gate := make(chan struct{})
		host.setGate(gate)
		answers := make(chan answer, n)
		for i := sent; i < sent+n; i++ {
			go func() { answers <- bind(i) }()
		}
		sent += n
		var got []answer
		for entered := 0; entered+len(got) < n; {
			select {
			case <-host.entered:
				entered++
			case r := <-answers:
				got = append(got, r)
			}
		}
		close(gate)
		for len(got) < n {
			got = append(got, <-answers)
		}
		for _, r := range got {
			switch {
			case r.Err != nil:
				other = append(other, fmt.Sprintf("bind %d: %v", r.i, r.Err))
			case r.Resp == "" && r.ID != "":
				held++
				ids = append(ids, r.ID)
			case strings.Contains(r.Resp, fmt.Sprintf("at most %d tunnels", limit)) && strings.HasSuffix(r.Resp, "ERR_SERVICE_106"):
				tooMany++
			case r.i%20 == 1 && strings.Contains(r.Resp, "unreserved.example.com"):
				byHost++
			default:
				other = append(other, fmt.Sprintf("bind %d: %q", r.i, r.Resp))
			}
		}
	}
	host.setGate(nil)
	if len(other) > 0 {
		t.Fatalf("%d unexpected answers, the first: %s", len(other), other[0])
	}
	t.Logf("%d binds, %d at a time: %d held, %d refused as too many, %d refused by the Host (%d sent again)",
		binds, workers, held, tooMany, byHost, retries.Load())
	if held != limit {
		t.Errorf("%d tunnels held; want exactly %d", held, limit)
	}
	if held+tooMany+byHost != binds {
		t.Errorf("%d held + %d too many + %d by the Host; want %d answers", held, tooMany, byHost, binds)
	}
	if got := e.refusals(t, "too_many_tunnels"); got != float64(tooMany) {
		t.Errorf("edgeplane_tunnel_refusals_total{reason=\"too_many_tunnels\"} = %v; want %d", got, tooMany)
	}
	if e.m.Tunnels() != limit {
		t.Errorf("edgeplane_tunnel_tunnels sums to %d; want %d", e.m.Tunnels(), limit)
	}
	// The store holds what the session holds, no more.
	stored := 0
	for _, err := range edgeplane.All(e.ctx, e.admin, e.svc.ListTunnels) {
		if err != nil {
			t.Fatal(err)
		}
		stored++
	}
	for _, err := range edgeplane.All(e.ctx, e.admin, e.svc.ListEndpoints) {
		if err != nil {
			t.Fatal(err)
		}
		stored++
	}
	if stored != limit {
		t.Errorf("%d tunnels and endpoints stored; want %d", stored, limit)
	}

	// Unbinding one frees its slot for exactly one more.
	var un struct{ Error string }
	a.rpc(t, 2, map[string]any{"Id": ids[0]}, &un)
	if un.Error != "" {
		t.Fatalf("Unbind: %+v", un)
	}
	for n, want := range []string{"", "ERR_SERVICE_106"} {
		var resp struct {
			ID    string `json:"Id"`
			Error string
		}
		a.rpc(t, 7, map[string]any{"Labels": map[string]string{"app": fmt.Sprintf("after%d", n)}}, &resp)
		if (want == "" && (resp.Error != "" || resp.ID == "")) || (want != "" && !strings.HasSuffix(resp.Error, want)) {
			t.Errorf("bind %d after an unbind: %+v; want %q", n+1, resp, want)
		}
	}

	// An honest agent of the account is served.
	served(t, e)
	c, err := e.srv.DialTunnel(e.ctx, "", ids[1], agents.ConnHeader{ClientAddr: clientAddr, Proto: "https"})
	if err != nil {
		t.Fatalf("a tunnel the flooding session holds is not reachable: %v", err)
	}
	c.Close()
}
