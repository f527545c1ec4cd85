package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
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
	if code, v := do(a, "GET", "/credentials/"+id, ""); code != 200 || v["description"] != lastDesc || v["metadata"] != lastMeta {
		t.Errorf("after concurrent PATCHes through both: %v / %v; want %q / %q", v["description"], v["metadata"], lastDesc, lastMeta)
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

	if code, _ := do(b, "DELETE", "/credentials/"+id, ""); code != 204 {
		t.Fatalf("delete through b: %d", code)
	}
	if code, _ := do(a, "GET", "/credentials/"+id, ""); code != 404 {
		t.Errorf("read through a after the delete through b: %d", code)
	}
}
