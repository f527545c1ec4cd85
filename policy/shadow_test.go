package policy

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestShadowDeny checks deny with enforce false (issue 19, item 7): the
// rule's later actions run, evaluation goes on, and
// actions.service.deny.denied tells what would have happened.
func TestShadowDeny(t *testing.T) {
	tests := []struct {
		name    string
		target  Target
		enforce string
		want    Verdict
		logged  string
	}{
		{"HTTP shadow", TargetHTTP, `"enforce":false`, Continue, "true"},
		{"HTTP enforced", TargetHTTP, `"enforce":true`, Respond, ""},
		{"HTTP default enforced", TargetHTTP, ``, Respond, ""},
		{"connection shadow", TargetConnection, `"enforce":false`, Continue, "true"},
		{"connection enforced", TargetConnection, ``, Close, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, sink := newTestEngine(t, Options{})
			cfg := "{" + tt.enforce + "}"
			doc := `{"inbound":[{"expressions":["conn.client_port == 40000"],"actions":[{"type":"deny","config":` + cfg + `},
			  {"type":"log","config":{"metadata":{"v":"first"}}}]},
			  {"expressions":["actions.service.deny.denied"],"actions":[{"type":"log","config":{"metadata":{"v":"${string(actions.service.deny.denied)}"}}}]}]}`
			if tt.enforce == "" || strings.Contains(tt.enforce, "true") {
				// An enforced deny ends the rule: nothing may follow it.
				doc = `{"inbound":[{"expressions":["conn.client_port == 40000"],"actions":[{"type":"deny","config":` + cfg + `}]},
				  {"expressions":["actions.service.deny.denied"],"actions":[{"type":"log","config":{"metadata":{"v":"${string(actions.service.deny.denied)}"}}}]}]}`
			}
			p := mustCompile(t, e, doc, CompileOptions{Target: tt.target})
			var res Result
			if tt.target == TargetConnection {
				c := testRequest().Conn
				res = p.Connect(&c, time.Time{})
			} else {
				res = p.Inbound(testRequest())
			}
			if res.Verdict != tt.want {
				t.Fatalf("verdict %v, want %v", res.Verdict, tt.want)
			}
			if tt.logged == "" {
				if len(sink.logs) != 0 {
					t.Fatalf("logs %+v", sink.logs)
				}
				return
			}
			if len(sink.logs) != 2 || sink.logs[0].Metadata["v"] != "first" || sink.logs[1].Metadata["v"] != tt.logged {
				t.Fatalf("logs %+v", sink.logs)
			}
		})
	}
}

func TestShadowDenyActionsAfterEnforcedRefused(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	_, err := e.CompileJSON([]byte(`{"inbound":[{"actions":[{"type":"deny","config":{"enforce":true}},{"type":"log"}]}]}`), CompileOptions{})
	if err == nil || !strings.Contains(err.Error(), "inbound[0].actions[1]: this action can never run") {
		t.Fatalf("err = %v", err)
	}
	_, err = e.CompileJSON([]byte(`{"inbound":[{"actions":[{"type":"deny","config":{"enforce":"no"}}]}]}`), CompileOptions{})
	if err == nil || !strings.Contains(err.Error(), "inbound[0].actions[0].config.enforce: must be a boolean") {
		t.Fatalf("err = %v", err)
	}
}

// TestRestrictIPsResults checks restrict-ips's action and matched_cidr
// result variables, enforced and in shadow mode, in HTTP and connection
// policies.
func TestRestrictIPsResults(t *testing.T) {
	tests := []struct {
		name    string
		config  string
		client  string
		action  string
		matched string
	}{
		{"in a deny range", `"deny":["198.51.100.0/24","10.0.0.0/8"]`, "198.51.100.10", "deny", "198.51.100.0/24"},
		{"outside the deny ranges", `"deny":["10.0.0.0/8"]`, "198.51.100.10", "allow", ""},
		{"in an allow range", `"allow":["10.0.0.0/8","198.51.100.10"]`, "198.51.100.10", "allow", "198.51.100.10/32"},
		{"outside the allow ranges", `"allow":["10.0.0.0/8"]`, "198.51.100.10", "deny", ""},
		{"deny wins over allow", `"allow":["198.51.100.0/24"],"deny":["198.51.100.10"]`, "198.51.100.10", "deny", "198.51.100.10/32"},
		{"IPv6", `"deny":["2001:db8::/32"]`, "2001:db8::1", "deny", "2001:db8::/32"},
		{"refused by the IP policies", `"allow":["198.51.100.0/24"],"ip_policies":["ipp_1"]`, "198.51.100.10", "deny", ""},
		{"allowed by the IP policies", `"ip_policies":["ipp_1"]`, "10.1.2.3", "allow", ""},
	}
	for _, tt := range tests {
		for _, target := range []Target{TargetHTTP, TargetConnection} {
			for _, enforce := range []bool{true, false} {
				name := tt.name + "/" + target.String()
				if !enforce {
					name += "/shadow"
				}
				t.Run(name, func(t *testing.T) {
					e, sink := newTestEngine(t, Options{})
					cfg := tt.config
					if !enforce {
						cfg += `,"enforce":false`
					}
					doc := `{"inbound":[{"actions":[{"type":"restrict-ips","config":{` + cfg + `}}]},
					  {"actions":[{"type":"log","config":{"metadata":{"action":"${actions.service.restrict_ips.action}","cidr":"${actions.service.restrict_ips.matched_cidr}"}}}]}]}`
					p := mustCompile(t, e, doc, CompileOptions{Target: target, IPPolicies: allowResolver("10.0.0.0/8")})
					req := testRequest()
					req.Conn.ClientAddr = netip.AddrPortFrom(netip.MustParseAddr(tt.client), 1)
					var res Result
					if target == TargetConnection {
						res = p.Connect(&req.Conn, time.Time{})
					} else {
						res = p.Inbound(req)
					}
					refused := res.Verdict != Continue
					if refused != (enforce && tt.action == "deny") {
						t.Fatalf("verdict %v", res.Verdict)
					}
					if refused {
						return // the log rule did not run
					}
					if len(sink.logs) != 1 || sink.logs[0].Metadata["action"] != tt.action || sink.logs[0].Metadata["cidr"] != tt.matched {
						t.Fatalf("logs %+v, want action %q, matched_cidr %q", sink.logs, tt.action, tt.matched)
					}
				})
			}
		}
	}
}

// TestURLResults checks the matches and url result variables of redirect
// and url-rewrite.
func TestURLResults(t *testing.T) {
	tests := []struct {
		name    string
		action  string
		matches string
		url     string
	}{
		{"redirect without from", `{"type":"redirect","config":{"to":"https://other.example.com/"}}`, "true", "https://other.example.com/"},
		{"redirect matching", `{"type":"redirect","config":{"from":"/v1/(.*)$","to":"/v2/$1"}}`, "true", "https://api.example.com:8443/v2/users/42?a=1&a=2&b=x%20y"},
		{"redirect not matching", `{"type":"redirect","config":{"from":"/nothing","to":"/v2"}}`, "false", ""},
		{"url-rewrite matching", `{"type":"url-rewrite","config":{"from":"/v1/","to":"/v2/"}}`, "true", "https://api.example.com:8443/v2/users/42?a=1&a=2&b=x%20y"},
		{"url-rewrite not matching", `{"type":"url-rewrite","config":{"from":"/nothing","to":"/v2"}}`, "false", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, sink := newTestEngine(t, Options{})
			ns := "redirect"
			if strings.Contains(tt.action, "url-rewrite") {
				ns = "url_rewrite"
			}
			doc := `{"inbound":[{"actions":[` + tt.action + `]}],
			  "outbound":[{"actions":[{"type":"log","config":{"metadata":{"m":"${string(actions.service.` + ns + `.matches)}","u":"${actions.service.` + ns + `.url}"}}}]}]}`
			p := mustCompile(t, e, doc, CompileOptions{})
			in := p.Inbound(testRequest())
			p.Outbound(testRequest(), testResponse(), &in)
			if len(sink.logs) != 1 || sink.logs[0].Metadata["m"] != tt.matches || sink.logs[0].Metadata["u"] != tt.url {
				t.Fatalf("logs %+v, want matches %s, url %q", sink.logs, tt.matches, tt.url)
			}
		})
	}
}
