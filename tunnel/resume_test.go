package tunnel_test

import (
	"crypto/tls"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/tunnel"
	"golang.ngrok.com/muxado/v2"
)

// rawAgent is an agent that speaks the protocol by hand, to send what
// the SDK decides for itself (the session it resumes, its cookie).
type rawAgent struct {
	tc  *tls.Conn
	mux muxado.TypedStreamSession
}

func dialRaw(t *testing.T, e *env) *rawAgent {
	t.Helper()
	return dialRawTo(t, e, e.addr)
}

// dialRawTo connects a raw agent to the tunnel server at addr.
func dialRawTo(t *testing.T, e *env, addr string) *rawAgent {
	t.Helper()
	tc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: e.pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	a := &rawAgent{tc: tc, mux: muxado.NewTypedStreamSession(muxado.Client(tc, &muxado.Config{}))}
	t.Cleanup(func() { a.mux.Close() })
	return a
}

type rawAuthResp struct {
	ClientID string `json:"ClientId"`
	Error    string
	Extra    struct{ Cookie string }
}

// auth sends Auth with token, resuming clientID with cookie.
func (a *rawAgent) auth(t *testing.T, token, clientID, cookie string) rawAuthResp {
	t.Helper()
	str, err := a.mux.OpenTypedStream(0)
	if err != nil {
		t.Fatal(err)
	}
	defer str.Close()
	req := map[string]any{"Version": []string{"3", "2"}, "ClientId": clientID,
		"Extra": map[string]any{"Authtoken": token, "Cookie": cookie, "Version": "raw", "ClientType": "test"}}
	if err := json.NewEncoder(str).Encode(req); err != nil {
		t.Fatal(err)
	}
	var resp rawAuthResp
	_ = str.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := json.NewDecoder(str).Decode(&resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

// closed reports whether the server closed a's connection within d.
func (a *rawAgent) closed(d time.Duration) bool {
	done := make(chan struct{})
	go func() { a.mux.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// TestResumeTakesOver: an agent that reconnects with its session's ID and
// cookie takes the old session over at once; a forged cookie, or the
// cookie of another credential, takes nothing over.
func TestResumeTakesOver(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	_, token := e.token(t)
	_, otherToken := e.token(t)

	first := dialRaw(t, e)
	r1 := first.auth(t, token, "", "")
	if r1.Error != "" || r1.ClientID == "" || r1.Extra.Cookie == "" {
		t.Fatalf("first Auth: %+v", r1)
	}

	// Another credential presenting the first session's ID and cookie: no
	// takeover (the cookie is sealed for the first credential).
	intruder := dialRaw(t, e)
	if r := intruder.auth(t, otherToken, r1.ClientID, r1.Extra.Cookie); r.Error != "" {
		t.Fatalf("the other credential's Auth: %+v", r)
	}
	// The same credential with a forged cookie: no takeover either.
	forger := dialRaw(t, e)
	if r := forger.auth(t, token, r1.ClientID, r1.Extra.Cookie[:len(r1.Extra.Cookie)-4]+"AAAA"); r.Error != "" {
		t.Fatalf("the forged cookie's Auth: %+v", r)
	}
	if first.closed(300 * time.Millisecond) {
		t.Fatal("a foreign or forged cookie closed the session it named")
	}

	// The agent itself, back on a new connection: the old one is closed
	// at once and its record removed.
	again := dialRaw(t, e)
	r2 := again.auth(t, token, r1.ClientID, r1.Extra.Cookie)
	if r2.Error != "" || r2.ClientID == r1.ClientID {
		t.Fatalf("the resuming Auth: %+v", r2)
	}
	start := time.Now()
	if !first.closed(2 * time.Second) {
		t.Fatal("the session taken over is still open")
	}
	t.Logf("the session taken over was closed %v after the agent's new Auth", time.Since(start))
	if _, ok := eventually(time.Second, func() bool {
		_, err := e.svc.GetTunnelSession(e.ctx, e.admin, r1.ClientID)
		return err != nil
	}); !ok {
		t.Error("the record of the session taken over is still there")
	}
	if e.m.Sessions() != 3 { // intruder, forger, again
		t.Errorf("%d sessions; want 3", e.m.Sessions())
	}
}

type rawBindResp struct {
	ID    string `json:"Id"`
	URL   string
	Error string
	Extra struct{ Token string }
}

// bind sends an http endpoint Bind for domain under id with token.
func (a *rawAgent) bind(t *testing.T, id, token, domain string) rawBindResp {
	t.Helper()
	str, err := a.mux.OpenTypedStream(1)
	if err != nil {
		t.Fatal(err)
	}
	defer str.Close()
	req := map[string]any{"Id": id, "Proto": "http", "ForwardsTo": "app://test", "Opts": map[string]any{"Domain": domain},
		"Extra": map[string]any{"Token": token}}
	if err := json.NewEncoder(str).Encode(req); err != nil {
		t.Fatal(err)
	}
	var resp rawBindResp
	_ = str.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := json.NewDecoder(str).Decode(&resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestEndpointTokens: an endpoint bound again under its ID needs the
// token its bind handed out: a forged token, or the token of another
// credential's endpoint, is refused; the endpoint's own token rebinds it
// under the same ID and URL.
func TestEndpointTokens(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	e.reserve(t, "app.example.com")
	e.reserve(t, "other.example.com")
	_, token := e.token(t)
	_, otherToken := e.token(t)

	first := dialRaw(t, e)
	first.auth(t, token, "", "")
	b1 := first.bind(t, "", "", "app.example.com")
	if b1.Error != "" || b1.ID == "" || b1.Extra.Token == "" || b1.URL != "http://app.example.com" {
		t.Fatalf("first bind: %+v", b1)
	}
	other := dialRaw(t, e)
	other.auth(t, otherToken, "", "")
	b2 := other.bind(t, "", "", "other.example.com")
	if b2.Error != "" {
		t.Fatalf("the other credential's bind: %+v", b2)
	}

	again := dialRaw(t, e)
	again.auth(t, token, "", "")
	for name, tok := range map[string]string{
		"forged":                  b1.Extra.Token[:len(b1.Extra.Token)-4] + "AAAA",
		"none":                    "",
		"another endpoint's":      b2.Extra.Token,
		"another credential's ID": b1.Extra.Token, // for b2's ID below
	} {
		id := b1.ID
		if name == "another credential's ID" {
			id = b2.ID
		}
		if r := again.bind(t, id, tok, "app.example.com"); !strings.Contains(r.Error, "ERR_SERVICE_104") {
			t.Errorf("a rebind with %s token: %+v; want ERR_SERVICE_104", name, r)
		}
	}
	r := again.bind(t, b1.ID, b1.Extra.Token, "app.example.com")
	if r.Error != "" || r.ID != b1.ID || r.URL != b1.URL {
		t.Fatalf("the rebind with the endpoint's own token: %+v", r)
	}
	if ep := e.endpoint(t, b1.ID); ep.TunnelSession == nil {
		t.Errorf("the rebound endpoint: %+v", ep)
	}
}

// TestExpiredResumeTokens: tokens older than ResumeTokenTTL take
// nothing over. A reconnect with an expired cookie opens a fresh session
// and leaves the old one to its heartbeat; a rebind with an expired bind
// token is refused while another session holds the endpoint
// (ERR_SERVICE_103) and binds the same ID and URL once that session has
// ended, as the SDK, which keeps an endpoint's first token, retries.
func TestExpiredResumeTokens(t *testing.T) {
	e := newEnv(t, tunnel.Options{ResumeTokenTTL: time.Nanosecond}) // every token has expired by the time it is used
	e.reserve(t, "app.example.com")
	_, token := e.token(t)

	first := dialRaw(t, e)
	r1 := first.auth(t, token, "", "")
	b1 := first.bind(t, "", "", "app.example.com")
	if r1.Error != "" || b1.Error != "" || b1.Extra.Token == "" {
		t.Fatalf("first Auth and bind: %+v %+v", r1, b1)
	}

	again := dialRaw(t, e)
	if r2 := again.auth(t, token, r1.ClientID, r1.Extra.Cookie); r2.Error != "" || r2.ClientID == r1.ClientID {
		t.Fatalf("the Auth with an expired cookie: %+v; want a fresh session", r2)
	}
	if first.closed(300 * time.Millisecond) {
		t.Fatal("an expired cookie took its session over")
	}
	if got := e.refusals(t, "resume_expired"); got != 1 {
		t.Errorf("edgeplane_tunnel_refusals_total{reason=\"resume_expired\"} = %v; want 1", got)
	}

	r := again.bind(t, b1.ID, b1.Extra.Token, "app.example.com")
	if !strings.Contains(r.Error, "too old to take it over") || !strings.HasSuffix(r.Error, "ERR_SERVICE_103") {
		t.Fatalf("a rebind with an expired token while the first session holds the endpoint: %+v; want ERR_SERVICE_103", r)
	}
	if ep := e.endpoint(t, b1.ID); ep.TunnelSession == nil || ep.TunnelSession.ID != r1.ClientID {
		t.Fatalf("the refused rebind moved the endpoint: %+v", ep)
	}
	// A forged token is still refused as forged, not as expired.
	if r := again.bind(t, b1.ID, b1.Extra.Token[:len(b1.Extra.Token)-4]+"AAAA", "app.example.com"); !strings.HasSuffix(r.Error, "ERR_SERVICE_104") {
		t.Errorf("a forged token: %+v; want ERR_SERVICE_104", r)
	}

	first.mux.Close() // the first session ends: its record and endpoint are removed
	_, ok := eventually(5*time.Second, func() bool {
		r = again.bind(t, b1.ID, b1.Extra.Token, "app.example.com")
		return r.Error == ""
	})
	if !ok {
		t.Fatalf("the rebind once the first session ended: %+v", r)
	}
	if r.ID != b1.ID || r.URL != b1.URL {
		t.Errorf("the rebind: %+v; want ID %s and URL %s", r, b1.ID, b1.URL)
	}
}

// rpc sends one request of stream type typ and decodes the answer.
func (a *rawAgent) rpc(t *testing.T, typ uint32, req, resp any) {
	t.Helper()
	str, err := a.mux.OpenTypedStream(muxado.StreamType(typ))
	if err != nil {
		t.Fatal(err)
	}
	defer str.Close()
	if err := json.NewEncoder(str).Encode(req); err != nil {
		t.Fatal(err)
	}
	_ = str.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := json.NewDecoder(str).Decode(resp); err != nil {
		t.Fatal(err)
	}
}

// TestRequestsBeforeAuthAndSrvInfo: every request but Auth is refused
// before a successful Auth (the protocol's error, naming the rule); a
// second Auth is refused; SrvInfo answers the server's region.
func TestRequestsBeforeAuthAndSrvInfo(t *testing.T) {
	e := newEnv(t, tunnel.Options{Region: "eu"})
	_, token := e.token(t)
	a := dialRaw(t, e)
	for _, typ := range []uint32{1, 2, 7, 8} {
		var resp struct{ Error string }
		a.rpc(t, typ, map[string]any{}, &resp)
		if !strings.Contains(resp.Error, "authenticate first") || !strings.HasSuffix(resp.Error, "\n\nERR_SERVICE_105") {
			t.Errorf("request type %d before Auth: %q", typ, resp.Error)
		}
	}
	if r := a.auth(t, token, "", ""); r.Error != "" {
		t.Fatalf("Auth: %+v", r)
	}
	if r := a.auth(t, token, "", ""); !strings.Contains(r.Error, "already authenticated") {
		t.Errorf("a second Auth: %+v", r)
	}
	var info struct{ Region string }
	a.rpc(t, 8, struct{}{}, &info)
	if info.Region != "eu" {
		t.Errorf("SrvInfo: %+v", info)
	}
}

// TestMessageTooLarge: a request over MaxMessageBytes is refused as too
// large, and the session goes on.
func TestMessageTooLarge(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	_, token := e.token(t)
	a := dialRaw(t, e)
	if r := a.auth(t, token, "", ""); r.Error != "" {
		t.Fatalf("Auth: %+v", r)
	}
	str, err := a.mux.OpenTypedStream(7)
	if err != nil {
		t.Fatal(err)
	}
	defer str.Close()
	go json.NewEncoder(str).Encode(map[string]any{"Labels": map[string]string{"app": "web"}, "Metadata": strings.Repeat("m", tunnel.MaxMessageBytes)})
	var resp struct{ Error string }
	_ = str.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := json.NewDecoder(str).Decode(&resp); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(resp.Error, "ERR_SERVICE_109") {
		t.Errorf("an oversized request: %q; want ERR_SERVICE_109", resp.Error)
	}
	var info struct{ Region string }
	a.rpc(t, 8, struct{}{}, &info) // the session still answers
}
