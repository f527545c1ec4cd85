package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// sealKeyEnv is the sealing key the PostgreSQL tests' servers share.
const sealKeyEnv = "EDGEPLANE_SEAL_KEY=QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI="

// freshPostgres returns the URL of an empty schema of the test database
// (EDGEPLANE_TEST_POSTGRES_URL; the test is skipped without it), dropped
// when the test ends.
func freshPostgres(t *testing.T) string {
	t.Helper()
	base := os.Getenv("EDGEPLANE_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("set EDGEPLANE_TEST_POSTGRES_URL to run the PostgreSQL tests; .ci/run starts a throwaway cluster and does")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("EDGEPLANE_TEST_POSTGRES_URL: %v", err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 8)
	rand.Read(b)
	schema := "edgeplane_cmd_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// TestTwoServersOnePostgres: two edgeplane serve processes on one
// PostgreSQL share their state: a resource created through one is read,
// updated and deleted through the other; concurrent PATCHes of different
// fields through both lose none; a domain reserved through both at once
// is reserved exactly once.
func TestTwoServersOnePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	spec := freshPostgres(t)
	secret := "epk_" + strings.Repeat("p", 40)
	a, _ := startProcess(t, spec, sealKeyEnv, "EDGEPLANE_API_KEY="+secret)
	b, _ := startProcess(t, spec, sealKeyEnv) // the store is in use: the same key works
	client := &http.Client{Timeout: 10 * time.Second}
	do := func(addr, method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Service-Version", "2")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}

	code, c := do(a, "POST", "/credentials", `{"description":"from a"}`)
	if code != 201 {
		t.Fatalf("create through a: %d %v", code, c)
	}
	id := c["id"].(string)
	if code, v := do(b, "GET", "/credentials/"+id, ""); code != 200 || v["description"] != "from a" {
		t.Fatalf("read through b: %d %v", code, v)
	}

	// Concurrent PATCHes of two different fields, one server each.
	const rounds = 40
	var wg sync.WaitGroup
	var lastDesc, lastMeta string
	wg.Go(func() {
		for i := range rounds {
			d := "d" + strings.Repeat("x", i%5) + string(rune('a'+i%26))
			if code, _ := do(a, "PATCH", "/credentials/"+id, `{"description":"`+d+`"}`); code == 200 {
				lastDesc = d
			}
		}
	})
	wg.Go(func() {
		for i := range rounds {
			m := "m" + string(rune('a'+i%26)) + strings.Repeat("y", i%3)
			if code, _ := do(b, "PATCH", "/credentials/"+id, `{"metadata":"`+m+`"}`); code == 200 {
				lastMeta = m
			}
		}
	})
	wg.Wait()
	// Each server reads through its own record cache, which follows the
	// other's writes through the change feed; a read first waits until
	// its cache has applied every change committed before it (the fence):
	// right after both answered, a read through either has both last
	// writes, with no wait of the test's.
	for _, addr := range []string{a, b} {
		if code, v := do(addr, "GET", "/credentials/"+id, ""); code != 200 || v["description"] != lastDesc || v["metadata"] != lastMeta {
			t.Errorf("after concurrent PATCHes through both, %s reads %d %v / %v; want %q / %q", addr, code, v["description"], v["metadata"], lastDesc, lastMeta)
		}
	}

	// One domain reserved through both at once: exactly one succeeds.
	codes := make([]int, 2)
	var race sync.WaitGroup
	for i, addr := range []string{a, b} {
		race.Go(func() { codes[i], _ = do(addr, "POST", "/reserved_domains", `{"domain":"race.example.com"}`) })
	}
	race.Wait()
	if !(codes[0] == 201 && codes[1] == 409) && !(codes[0] == 409 && codes[1] == 201) {
		t.Errorf("the same domain through both servers: %v; want one 201 and one 409", codes)
	}

	// a serves reads from its record cache (it has the credential
	// cached: read it), fenced: a delete through b is seen through a at
	// once, as infrastructure-as-code tools confirm a delete.
	if code, _ := do(a, "GET", "/credentials/"+id, ""); code != 200 {
		t.Fatalf("read through a: %d", code)
	}
	if code, _ := do(b, "DELETE", "/credentials/"+id, ""); code != 204 {
		t.Fatalf("delete through b: %d", code)
	}
	if code, v := do(a, "GET", "/credentials/"+id, ""); code != 404 {
		t.Errorf("right after the delete through b, a read through a answers %d %v; want 404", code, v)
	}

	// An API key revoked by another process (edgeplane admin) stops
	// authenticating on a replica that has it cached within a second.
	admin := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if code := run(context.Background(), append([]string{"admin", args[0], "-store", spec}, args[1:]...), func(string) string { return "" }, &out, &out, nil); code != 0 {
			t.Fatalf("admin %v: exit %d, %s", args, code, out.String())
		}
		return out.String()
	}
	acct := regexp.MustCompile(`acct_\w+`).FindString(admin("list-accounts"))
	bot := strings.TrimSpace(admin("create-bot", "-account", acct, "-name", "ci"))
	created := admin("create-api-key", "-account", acct, "-owner", bot)
	secret2 := regexp.MustCompile(`secret \(shown once\): (epk_\S+)`).FindStringSubmatch(created)
	keyID := regexp.MustCompile(`ak_\w+`).FindString(created)
	if secret2 == nil || keyID == "" || acct == "" {
		t.Fatalf("create-api-key printed %q", created)
	}
	get := func() int {
		req, _ := http.NewRequest("GET", "http://"+b+"/credentials", nil)
		req.Header.Set("Authorization", "Bearer "+secret2[1])
		req.Header.Set("Service-Version", "2")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != 200 {
		t.Fatalf("the new key through b: %d", code)
	}
	admin("revoke-api-key", "-account", acct, "-id", keyID)
	if code := get(); code != 401 {
		t.Errorf("right after edgeplane admin revoked it, the key authenticates on b: %d", code)
	}
}

// within calls cond until it is true or d has passed, and says how long
// it took. It measures how fast a change made by one process reaches
// another, which no injected clock can stand in for.
func within(d time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > d {
			return time.Since(start), false
		}
		time.Sleep(5 * time.Millisecond)
	}
}
