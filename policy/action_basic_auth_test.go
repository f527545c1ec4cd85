package policy

import (
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func bcryptHash(t testing.TB, password string, cost int) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func pbkdf2Hash(t testing.TB, password string, iter int) string {
	t.Helper()
	salt := []byte("0123456789abcdef")
	k, err := pbkdf2.Key(sha256.New, password, salt, iter, 32)
	if err != nil {
		t.Fatal(err)
	}
	return "$pbkdf2-sha256$" + itoa(iter) + "$" + base64.RawStdEncoding.EncodeToString(salt) + "$" + base64.RawStdEncoding.EncodeToString(k)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func basicHeader(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

func basicAuthDoc(t testing.TB, extra string, creds ...string) string {
	js, _ := json.Marshal(creds)
	cfg := `{"credentials":` + string(js)
	if extra != "" {
		cfg += "," + extra
	}
	return `{"on_http_request":[{"actions":[{"type":"basic-auth","config":` + cfg + `}}]},
	  {"actions":[{"type":"log","config":{"metadata":{"ok":"${string(actions.service.basic_auth.authenticated)}","user":"${actions.service.basic_auth.username}"}}}]}]}`
}

// TestBasicAuth checks basic-auth (issue 19, item 8) with bcrypt and
// PBKDF2 hashes, enforced and in shadow mode.
func TestBasicAuth(t *testing.T) {
	alice := bcryptHash(t, "wonderland", bcrypt.MinCost)
	bob := pbkdf2Hash(t, "builder", MinPBKDF2Iterations)
	tests := []struct {
		name   string
		header []string
		user   string // authenticated as; "" refused
	}{
		{"bcrypt", []string{basicHeader("alice", "wonderland")}, "alice"},
		{"pbkdf2", []string{basicHeader("bob", "builder")}, "bob"},
		{"scheme case-insensitive", []string{"basic " + base64.StdEncoding.EncodeToString([]byte("bob:builder"))}, "bob"},
		{"password with a colon", []string{basicHeader("alice", "wonder:land")}, ""},
		{"wrong password", []string{basicHeader("alice", "builder")}, ""},
		{"wrong password, pbkdf2", []string{basicHeader("bob", "wonderland")}, ""},
		{"unknown user", []string{basicHeader("carol", "wonderland")}, ""},
		{"no header", nil, ""},
		{"bearer", []string{"Bearer abc"}, ""},
		{"not base64", []string{"Basic !!!"}, ""},
		{"no colon", []string{"Basic " + base64.StdEncoding.EncodeToString([]byte("alice"))}, ""},
		{"two headers", []string{basicHeader("alice", "wonderland"), basicHeader("bob", "builder")}, ""},
		{"too long", []string{basicHeader("alice", "wonderland") + strings.Repeat(" ", MaxBasicAuthHeaderBytes)}, ""},
	}
	for _, enforce := range []bool{true, false} {
		for _, tt := range tests {
			name := tt.name
			extra := `"realm":"api"`
			if !enforce {
				name += "/shadow"
				extra += `,"enforce":false`
			}
			t.Run(name, func(t *testing.T) {
				e, sink := newTestEngine(t, Options{})
				p := mustCompile(t, e, basicAuthDoc(t, extra, "alice:"+alice, "bob:"+bob), CompileOptions{})
				req := testRequest()
				if tt.header != nil {
					req.Header["Authorization"] = tt.header
				}
				res := p.Inbound(req)
				if tt.user == "" && enforce {
					if res.Verdict != Respond || res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != `Basic realm="api", charset="UTF-8"` {
						t.Fatalf("result %+v, want 401 with a challenge", res)
					}
					return
				}
				if res.Verdict != Continue {
					t.Fatalf("result %+v", res)
				}
				wantOK := "true"
				if tt.user == "" {
					wantOK = "false"
				}
				if len(sink.logs) != 1 || sink.logs[0].Metadata["ok"] != wantOK || sink.logs[0].Metadata["user"] != tt.user {
					t.Fatalf("logs %+v, want authenticated %s as %q", sink.logs, wantOK, tt.user)
				}
			})
		}
	}
}

// TestBasicAuthCache checks that a verified password is not hashed again
// within the cache's lifetime, and is after it.
func TestBasicAuthCache(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	p := mustCompile(t, e, basicAuthDoc(t, "", "alice:"+bcryptHash(t, "pw", bcrypt.MinCost)), CompileOptions{})
	a := p.in.rules[0].actions[0].action.(*basicAuthAction)
	req := testRequest()
	req.Header["Authorization"] = []string{basicHeader("alice", "pw")}
	for range 3 {
		if res := p.Inbound(req); res.Verdict != Continue {
			t.Fatal(res)
		}
	}
	if n := a.hashes.Load(); n != 1 {
		t.Fatalf("%d hash verifications for 3 requests, want 1", n)
	}
	bad := testRequest()
	bad.Header["Authorization"] = []string{basicHeader("alice", "wrong")}
	p.Inbound(bad)
	p.Inbound(bad)
	if n := a.hashes.Load(); n != 3 {
		t.Fatalf("%d hash verifications, want 3 (failures are not cached)", n)
	}
	req.Time = t1.Add(basicAuthCacheTTL)
	p.Inbound(req)
	if n := a.hashes.Load(); n != 4 {
		t.Fatalf("%d hash verifications after the cache expired, want 4", n)
	}
}

// TestBasicAuthUnknownUserCostsAHash: an unknown username is refused after
// a hash verification like a wrong password, so that response times do not
// tell which usernames exist.
func TestBasicAuthUnknownUserCostsAHash(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	p := mustCompile(t, e, basicAuthDoc(t, "", "alice:"+bcryptHash(t, "pw", bcrypt.MinCost)), CompileOptions{})
	a := p.in.rules[0].actions[0].action.(*basicAuthAction)
	req := testRequest()
	req.Header["Authorization"] = []string{basicHeader("mallory", "pw")}
	if res := p.Inbound(req); res.Verdict == Continue {
		t.Fatalf("an unknown user was let in: %+v", res)
	}
	if n := a.hashes.Load(); n != 1 {
		t.Errorf("an unknown username cost %d hash verifications, want 1 (as a known one)", n)
	}
}

func TestBasicAuthCompileErrors(t *testing.T) {
	const at = `on_http_request[0].actions[0].config.`
	tests := []struct {
		name, doc, want string
	}{
		{"plain password", basicAuthDoc(t, "", "alice:secret"), at + `credentials[0]: the password must be a salted hash`},
		{"no username", basicAuthDoc(t, "", ":"+bcryptHash(t, "x", bcrypt.MinCost)), at + `credentials[0]: must be "username:salted-hash"`},
		{"duplicate", basicAuthDoc(t, "", "a:"+bcryptHash(t, "x", bcrypt.MinCost), "a:"+bcryptHash(t, "y", bcrypt.MinCost)), at + `credentials[1]: username "a" appears twice`},
		{"bcrypt cost too high", basicAuthDoc(t, "", "a:$2b$13$"+strings.Repeat("a", 53)), at + `credentials[0]: bcrypt cost 13 is over the limit of 12`},
		{"bad bcrypt", basicAuthDoc(t, "", "a:$2b$1"), at + `credentials[0]: invalid bcrypt hash`},
		{"pbkdf2 few iterations", basicAuthDoc(t, "", "a:"+pbkdf2Hash(t, "x", 1000)), at + `credentials[0]: PBKDF2 iterations must be a number from 10000 to 1000000`},
		{"pbkdf2 bad base64", basicAuthDoc(t, "", "a:$pbkdf2-sha256$10000$!!$!!"), at + `credentials[0]: PBKDF2 salt and key must be unpadded standard base64`},
		{"no credentials", basicAuthDoc(t, ""), at + `credentials: is required`},
		{"bad realm", basicAuthDoc(t, `"realm":"a\"b"`, "a:"+bcryptHash(t, "x", bcrypt.MinCost)), at + `realm: must be 1 to 256 printable ASCII characters`},
		{"outbound", `{"on_http_response":[{"actions":[{"type":"basic-auth","config":{"credentials":["a:x"]}}]}]}`, `on_http_response[0].actions[0].type: basic-auth is only available in inbound`},
		{"connection", `{"on_tcp_connect":[{"actions":[{"type":"basic-auth","config":{"credentials":["a:x"]}}]}]}`, `on_tcp_connect[0].actions[0].type: basic-auth is only available in HTTP policies`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newTestEngine(t, Options{})
			target := TargetHTTP
			if strings.Contains(tt.doc, "on_tcp_connect") {
				target = TargetConnection
			}
			_, err := e.CompileJSON([]byte(tt.doc), CompileOptions{Target: target})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestBasicAuthKeysRateLimit shows a rate limit keyed by the
// authenticated user, through a CEL bucket key expression.
func TestBasicAuthKeysRateLimit(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"on_http_request":[{"actions":[
	  {"type":"basic-auth","config":{"credentials":["alice:`+pbkdf2Hash(t, "pw", MinPBKDF2Iterations)+`","bob:`+pbkdf2Hash(t, "pw2", MinPBKDF2Iterations)+`"]}},
	  {"type":"rate-limit","config":{"name":"per-user","algorithm":"sliding_window","capacity":1,"rate":"60s","bucket_key":["actions.service.basic_auth.username"]}}]}]}`, CompileOptions{})
	mk := func(u, pw string) *Request {
		r := testRequest()
		r.Header["Authorization"] = []string{basicHeader(u, pw)}
		r.Time = t1.Add(time.Second)
		return r
	}
	if p.Inbound(mk("alice", "pw")).Verdict != Continue || p.Inbound(mk("bob", "pw2")).Verdict != Continue {
		t.Fatal("first requests refused")
	}
	if res := p.Inbound(mk("alice", "pw")); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("alice's second request: %+v", res)
	}
}
