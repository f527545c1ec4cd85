package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeAPIIPRestrictions: serve enforces an IP restriction of type
// api on the address a request comes from (the test connects from
// 127.0.0.1; -trusted-proxies lets it speak for another client): not
// enforced, requests go through, with one warning in the log for many
// requests and each counted in edgeplane_ip_restriction_decisions_total;
// enforcing it from 127.0.0.1 is refused as a lockout; enforced (on
// behalf of an allowed client), the next request from 127.0.0.1 is 403
// with the restriction named, and counted.
func TestServeAPIIPRestrictions(t *testing.T) {
	key := "epk_" + strings.Repeat("c", 40)
	s := startServe(t, []string{"-metrics-addr", "127.0.0.1:0", "-trusted-proxies", "127.0.0.1"},
		map[string]string{"EDGEPLANE_API_KEY": key})
	do := func(method, path, body string, hdr ...string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+s.addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Service-Version", "2")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	metrics := func() string {
		t.Helper()
		addr := regexp.MustCompile(`metrics on http://(\S+)/metrics`).FindStringSubmatch(s.stdout.String())
		if addr == nil {
			t.Fatalf("no metrics address: %s", s.stdout)
		}
		_, body := get(t, "http://"+addr[1]+"/metrics", nil)
		return body
	}

	code, pol := do("POST", "/ip_policies", `{"description":"not loopback"}`)
	if code != 201 {
		t.Fatalf("create policy: %d %v", code, pol)
	}
	if code, v := do("POST", "/ip_policy_rules", `{"cidr":"127.0.0.0/8","action":"deny","ip_policy_id":"`+pol["id"].(string)+`"}`); code != 201 {
		t.Fatalf("create rule: %d %v", code, v)
	}
	code, x := do("POST", "/ip_restrictions", `{"type":"api","enforced":false,"ip_policy_ids":["`+pol["id"].(string)+`"]}`)
	if code != 201 {
		t.Fatalf("create restriction: %d %v", code, x)
	}
	id := x["id"].(string)
	for range 3 {
		if code, v := do("GET", "/credentials", ""); code != 200 {
			t.Fatalf("under a restriction not enforced: %d %v", code, v)
		}
	}
	if n := strings.Count(s.stderr.String(), "would refuse this address"); n != 1 {
		t.Errorf("%d warnings logged for several requests within a minute, want 1: %s", n, s.stderr)
	}
	if m := metrics(); !strings.Contains(m, `edgeplane_ip_restriction_decisions_total{decision="warned",type="api"} 3`) {
		t.Errorf("metrics do not count the warnings: %s", grepLines(m, "ip_restriction"))
	}

	if code, v := do("PATCH", "/ip_restrictions/"+id, `{"enforced":true}`); code != 400 || !strings.Contains(v["msg"].(string)+jsonText(v["violations"]), "lock the account out") {
		t.Errorf("enforcing it from a refused address: %d %v; want 400, a lockout", code, v)
	}
	if code, v := do("PATCH", "/ip_restrictions/"+id, `{"enforced":true}`, "X-Forwarded-For", "198.51.100.7"); code != 200 {
		t.Fatalf("enforcing it on behalf of an allowed client: %d %v", code, v)
	}
	code, v := do("GET", "/credentials", "")
	if code != 403 || v["error_code"] != "ERR_SERVICE_104" || !strings.Contains(v["msg"].(string), id) {
		t.Errorf("from 127.0.0.1 under the enforced restriction: %d %v; want 403 ERR_SERVICE_104 naming %s", code, v, id)
	}
	if !strings.Contains(metrics(), `edgeplane_ip_restriction_decisions_total{decision="refused",type="api"} 1`) {
		t.Errorf("metrics do not count the refusal: %s", grepLines(metrics(), "ip_restriction"))
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
