package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// hookReceiver records the events edgeplane serve delivers, verifying
// each signature with the specification's verifier.
type hookReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	wh     *standardwebhooks.Webhook
	counts map[string]int    // webhook-id -> requests
	object map[string]string // object ID -> webhook-id
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{counts: map[string]int{}, object: map[string]string{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.wh == nil || r.wh.Verify(body, req.Header) != nil {
			t.Errorf("unverified request %s", body)
			http.Error(w, "bad signature", 401)
			return
		}
		var ev struct {
			ID     string
			Object struct{ ID string }
		}
		_ = json.Unmarshal(body, &ev)
		r.counts[ev.ID]++
		r.object[ev.Object.ID] = ev.ID
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// has reports whether every ID in ids arrived.
func (r *hookReceiver) has(ids []string) (missing int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if _, ok := r.object[id]; !ok {
			missing++
		}
	}
	return missing
}

// apiDo calls the server at addr with the tests' admin key (epk_ and 40
// c's) and returns the status and the decoded body; 0 when the call
// failed.
func apiDo(addr, method, path, body string) (int, map[string]any) {
	client := &http.Client{Timeout: 5 * time.Second}
	req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer epk_"+strings.Repeat("c", 40))
	req.Header.Set("Service-Version", "2")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var v map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&v)
	return resp.StatusCode, v
}

// setUpHook creates a destination for rcv and a subscription to
// credential_created.v0 sending to it.
func setUpHook(t *testing.T, addr string, rcv *hookReceiver) {
	code, v := apiDo(addr, "POST", "/event_destinations", `{"target":{"http":{"url":"`+rcv.srv.URL+`/hook"}}}`)
	if code != 201 {
		t.Fatalf("create destination: %d %v", code, v)
	}
	wh, err := standardwebhooks.NewWebhook(v["target"].(map[string]any)["http"].(map[string]any)["secret"].(string))
	if err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	rcv.wh = wh
	rcv.mu.Unlock()
	if code, v := apiDo(addr, "POST", "/event_subscriptions", `{"sources":[{"type":"credential_created.v0"}],"destination_ids":["`+v["id"].(string)+`"]}`); code != 201 {
		t.Fatalf("create subscription: %d %v", code, v)
	}
}

// streamUntilKilled creates credentials until cmd dies (killed after
// after) and returns the IDs acknowledged.
func streamUntilKilled(t *testing.T, addr string, cmd *exec.Cmd, after time.Duration) []string {
	kill := time.AfterFunc(after, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
	defer kill.Stop()
	var acked []string
	for i := 0; ; i++ {
		code, v := apiDo(addr, "POST", "/credentials", `{"description":"c"}`)
		if code == 201 {
			acked = append(acked, v["id"].(string))
		}
		if code == 0 {
			break
		}
		if i > 100_000 {
			t.Fatal("the server was never killed")
		}
	}
	_ = cmd.Wait()
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged before the kill")
	}
	return acked
}

// waitArrived waits (functionally, bounded generously) until every
// acknowledged credential's event arrived.
func waitArrived(t *testing.T, rcv *hookReceiver, acked []string) {
	deadline := time.Now().Add(60 * time.Second)
	for rcv.has(acked) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged writes' events never arrived", rcv.has(acked), len(acked))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eventEnv is the environment of the event tests' servers: the admin
// key, destinations on loopback, a short lease.
func eventEnv(extra ...string) []string {
	return append([]string{"EDGEPLANE_API_KEY=epk_" + strings.Repeat("c", 40), "EDGEPLANE_EVENT_NETWORKS=127.0.0.0/8", "EDGEPLANE_EVENT_LEASE=2s"}, extra...)
}

// TestEventsCrashSafetySQLite: edgeplane serve delivers by default; it
// is killed with SIGKILL during a stream of writes and restarted on the
// same file: every acknowledged write's event reaches the receiver (at
// least once).
func TestEventsCrashSafetySQLite(t *testing.T) {
	eventsCrashSafety(t, "sqlite:"+filepath.Join(t.TempDir(), "events.db"), eventEnv()...)
}

// TestEventsCrashSafetyPostgres is the same on PostgreSQL.
func TestEventsCrashSafetyPostgres(t *testing.T) {
	eventsCrashSafety(t, freshPostgres(t), eventEnv(sealKeyEnv)...)
}

func eventsCrashSafety(t *testing.T, spec string, env ...string) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	rcv := newHookReceiver(t)
	addr, cmd := startProcess(t, spec, env...)
	setUpHook(t, addr, rcv)
	acked := streamUntilKilled(t, addr, cmd, 500*time.Millisecond)
	startProcess(t, spec, env...)
	waitArrived(t, rcv, acked)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	t.Logf("%d writes acknowledged before SIGKILL, every event delivered after the restart (%d events, %d repeated deliveries)", len(acked), len(rcv.counts), rcv.repeats())
}

// repeats counts the deliveries of an event after its first; mu held.
func (r *hookReceiver) repeats() int {
	n := 0
	for _, c := range r.counts {
		n += c - 1
	}
	return n
}

// createMany creates n credentials through addr and returns their IDs.
func createMany(t *testing.T, addr string, n int) []string {
	var ids []string
	for range n {
		code, v := apiDo(addr, "POST", "/credentials", `{"description":"c"}`)
		if code != 201 {
			t.Fatalf("create: %d %v", code, v)
		}
		ids = append(ids, v["id"].(string))
	}
	return ids
}

// TestEventsTwoReplicasPostgres: two servers on one PostgreSQL database
// deliver each event once (the one that holds the lease delivers; writes
// through either are delivered), and when the delivering one is killed
// the other takes over: every later write's event arrives too.
func TestEventsTwoReplicasPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	spec := freshPostgres(t)
	env := eventEnv(sealKeyEnv)
	rcv := newHookReceiver(t)
	addrA, cmdA := startProcess(t, spec, env...)
	setUpHook(t, addrA, rcv)
	// A is alone: once its first event arrives, it holds the lease.
	waitArrived(t, rcv, createMany(t, addrA, 1))
	addrB, _ := startProcess(t, spec, env...)
	ids := append(createMany(t, addrB, 50), createMany(t, addrA, 50)...)
	waitArrived(t, rcv, ids)
	rcv.mu.Lock()
	if n := rcv.repeats(); n != 0 {
		t.Errorf("with both replicas up, %d events were delivered more than once", n)
	}
	rcv.mu.Unlock()

	_ = cmdA.Process.Signal(syscall.SIGKILL)
	_ = cmdA.Wait()
	later := createMany(t, addrB, 50)
	waitArrived(t, rcv, later)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	t.Logf("%d events, each delivered once while both replicas ran; after the deliverer's SIGKILL the other delivered the %d later ones (%d repeated deliveries in all)",
		len(ids)+1, len(later), rcv.repeats())
}

// TestServeEventNetworks: serve refuses, at create and at update, an
// event destination that delivery could not reach, naming
// target.http.url and the networks allowed: by default public addresses
// only; with -event-networks 127.0.0.0/8, loopback and nothing else.
func TestServeEventNetworks(t *testing.T) {
	env := map[string]string{"EDGEPLANE_API_KEY": "epk_" + strings.Repeat("c", 40)}
	for _, c := range []struct {
		name     string
		args     []string
		accepted []string
		refused  map[string]string // URL -> what the reason says
	}{
		{"default", nil, []string{"https://93.184.215.14/hook"}, map[string]string{
			"http://10.1.2.3:9/":  "10.1.2.3 is private (10.0.0.0/8); event destinations may reach public addresses only",
			"http://127.0.0.1:9/": "127.0.0.1 is loopback; event destinations may reach public addresses only",
		}},
		{"-event-networks 127.0.0.0/8", []string{"-event-networks", "127.0.0.0/8"}, []string{"http://127.0.0.1:9/", "http://127.1.2.3/hook"}, map[string]string{
			"http://10.1.2.3:9/":         "10.1.2.3 is outside the allowed networks; event destinations may reach only 127.0.0.0/8",
			"https://93.184.215.14/hook": "93.184.215.14 is outside the allowed networks; event destinations may reach only 127.0.0.0/8",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startServe(t, c.args, env)
			var id string
			for _, u := range c.accepted {
				code, v := apiDo(s.addr, "POST", "/event_destinations", `{"target":{"http":{"url":"`+u+`"}}}`)
				if code != 201 {
					t.Fatalf("create at %s: %d %v", u, code, v)
				}
				id = v["id"].(string)
				if code, v := apiDo(s.addr, "PATCH", "/event_destinations/"+id, `{"target":{"http":{"url":"`+u+`"}}}`); code != 200 {
					t.Fatalf("update to %s: %d %v", u, code, v)
				}
			}
			for u, want := range c.refused {
				for _, r := range []struct{ method, path string }{{"POST", "/event_destinations"}, {"PATCH", "/event_destinations/" + id}} {
					code, v := apiDo(s.addr, r.method, r.path, `{"target":{"http":{"url":"`+u+`"}}}`)
					vs, _ := v["violations"].([]any)
					if code != 400 || v["error_code"] != "ERR_SERVICE_100" || len(vs) != 1 {
						t.Fatalf("%s %s at %s: %d %v", r.method, r.path, u, code, v)
					}
					violation := vs[0].(map[string]any)
					if violation["field"] != "target.http.url" || !strings.Contains(violation["reason"].(string), want) {
						t.Errorf("%s at %s: violation %v, want target.http.url: %q", r.method, u, violation, want)
					}
				}
			}
			// The update refused changed nothing.
			if code, v := apiDo(s.addr, "GET", "/event_destinations/"+id, ""); code != 200 ||
				v["target"].(map[string]any)["http"].(map[string]any)["url"] != c.accepted[len(c.accepted)-1] {
				t.Errorf("after the refused updates: %d %v", code, v)
			}
		})
	}
}
