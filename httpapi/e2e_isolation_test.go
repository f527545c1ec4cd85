package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/backends"
)

// Cross-account isolation over every resource type: account B's key gets
// 404 for every one of account A's resources, sub-resources and modules,
// with every method; B never sees them in lists and cannot reference
// them; neither account's store changes.
func TestE2ECrossAccountIsolation(t *testing.T) {
	s := newE2E(t)
	a := newFixture(t, s, s.keyA, "alpha")
	b := newFixture(t, s, s.keyB, "beta")

	// An online tunnel of A.
	cr := call(t, s, "POST", "/credentials", s.keyA, `{"acl":["bind:app=web"]}`)
	tn, err := s.svc.Host().RegisterTunnel(context.Background(), cr.json["token"].(string), backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}})
	if err != nil {
		t.Fatal(err)
	}

	beforeA, beforeB := snapshot(t, s, s.keyA), snapshot(t, s, s.keyB)

	// Everything A has, as B addresses it.
	routes := "/edges/https/" + a.https + "/routes"
	sources := "/event_subscriptions/" + a.sub + "/sources"
	resources := map[string][]string{ // path -> methods
		"/credentials/" + a.cred:                                       {"GET", "PATCH", "DELETE"},
		"/ip_policies/" + a.pol:                                        {"GET", "PATCH", "DELETE"},
		"/ip_policy_rules/" + a.rule:                                   {"GET", "PATCH", "DELETE"},
		"/ip_restrictions/" + a.ipx:                                    {"GET", "PATCH", "DELETE"},
		"/reserved_domains/" + a.rd:                                    {"GET", "PATCH", "DELETE"},
		"/reserved_domains/" + a.rd + "/certificate":                   {"DELETE"},
		"/reserved_domains/" + a.rd + "/certificate_management_policy": {"DELETE"},
		"/tls_certificates/" + a.cert:                                  {"GET", "PATCH", "DELETE"},
		"/endpoint_configurations/" + a.ec:                             {"GET", "PATCH", "DELETE"},
		"/backends/tunnel_group/" + a.bk:                               {"GET", "PATCH", "DELETE"},
		"/tunnels/" + tn.ID:                                            {"GET"},
		"/tunnel_sessions/" + a.session:                                {"GET"},
		"/tunnel_sessions/" + a.session + "/stop":                      {"POST"},
		"/endpoints/" + a.endpoint:                                     {"GET"},
		"/edges/https/" + a.https:                                      {"GET", "PATCH", "DELETE"},
		routes:                                                         {"GET", "POST"},
		routes + "/" + a.route:                                         {"GET", "PATCH", "DELETE"},
		"/edges/tls/" + a.tls:                                          {"GET", "PATCH", "DELETE"},
		"/edges/tcp/" + a.tcp:                                          {"GET", "PATCH", "DELETE"},
		"/event_subscriptions/" + a.sub:                                {"GET", "PATCH", "DELETE"},
		sources:                                                        {"GET", "POST"},
		sources + "/" + a.source:                                       {"GET", "PATCH", "DELETE"},
	}
	bodies := a.moduleBodies()
	for path := range bodies {
		resources[path] = []string{"GET", "PUT", "DELETE"}
	}
	// Bodies that B's own resources would accept: only ownership can make
	// them fail.
	bBodies := b.moduleBodies()
	writeBody := map[string]string{
		routes:  `{"match_type":"exact_path","match":"/b"}`,
		sources: `{"type":"ip_policy_deleted.v0"}`,
		"/tunnel_sessions/" + a.session + "/stop": `{}`,
	}
	for path, methods := range resources {
		for _, m := range methods {
			body := ""
			switch m {
			case "PATCH":
				body = `{}`
			case "POST":
				body = writeBody[path]
			case "PUT":
				body = bBodies[strings.NewReplacer(a.https, b.https, a.route, b.route, a.tls, b.tls, a.tcp, b.tcp).Replace(path)]
				if body == "" {
					t.Fatalf("no body for PUT %s", path)
				}
			}
			t.Run(m+" "+path, func(t *testing.T) {
				checkError(t, call(t, s, m, path, s.keyB, body), apiError{status: 404, code: errNotFound})
			})
		}
	}

	// B's lists never show A's resources.
	aIDs := []string{a.cred, a.pol, a.rule, a.ipx, a.rd, a.cert, a.ec, a.bk, a.https, a.route, a.tls, a.tcp, a.sub, a.session, a.endpoint, tn.ID, cr.json["id"].(string)}
	bView := snapshot(t, s, s.keyB)
	r := call(t, s, "GET", "/tunnels", s.keyB, "")
	if r.status != 200 {
		t.Fatalf("GET /tunnels: %d %s", r.status, r.body)
	}
	bView += string(r.body)
	for _, id := range aIDs {
		if strings.Contains(bView, id) {
			t.Errorf("B sees A's %s in its lists", id)
		}
	}
	if ids := listIDs(t, s, s.keyB, "/tunnels", "tunnels"); len(ids) != 0 {
		t.Errorf("B lists tunnels %q", ids)
	}
	if r := call(t, s, "GET", "/backends/tunnel_group/"+b.bk, s.keyB, ""); r.status != 200 || strings.Contains(string(r.body), tn.ID) {
		t.Errorf("B's backend with the same labels selects A's tunnel: %d %s", r.status, r.body)
	}

	// B cannot reference A's resources from its own.
	for _, tc := range []struct{ method, path, body, field string }{
		{"POST", "/ip_restrictions", `{"type":"api","ip_policy_ids":["` + a.pol + `"]}`, "ip_policy_ids[0]"},
		{"PATCH", "/ip_restrictions/" + b.ipx, `{"ip_policy_ids":["` + b.pol + `","` + a.pol + `"]}`, "ip_policy_ids[1]"},
		{"POST", "/ip_policy_rules", `{"cidr":"10.0.0.0/8","action":"allow","ip_policy_id":"` + a.pol + `"}`, "ip_policy_id"},
		{"POST", "/reserved_domains", `{"domain":"alpha2.example.com","certificate_id":"` + a.cert + `"}`, "certificate_id"},
		{"PATCH", "/reserved_domains/" + b.rd, `{"certificate_id":"` + a.cert + `"}`, "certificate_id"},
		{"PATCH", "/reserved_domains/" + b.rd, `{"https_endpoint_configuration_id":"` + a.ec + `"}`, "https_endpoint_configuration_id"},
		{"PUT", b.routePath("backend"), `{"backend_id":"` + a.bk + `"}`, "backend_id"},
		{"PUT", b.tcpPath("backend"), `{"backend_id":"` + a.bk + `"}`, "backend_id"},
		{"PUT", b.tlsPath("ip_restriction"), `{"ip_policy_ids":["` + a.pol + `"]}`, "ip_policy_ids[0]"},
		{"PUT", b.tcpPath("ip_restriction"), `{"ip_policy_ids":["` + b.pol + `","` + a.pol + `"]}`, "ip_policy_ids[1]"},
	} {
		t.Run("reference "+tc.method+" "+tc.path, func(t *testing.T) {
			checkError(t, call(t, s, tc.method, tc.path, s.keyB, tc.body), apiError{status: 400, code: errInvalid, fields: []string{tc.field}})
		})
	}
	r = call(t, s, "PUT", b.tlsPath("traffic_policy"), s.keyB,
		`{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"restrict-ips\",\"config\":{\"ip_policies\":[\"`+a.pol+`\"]}}]}]}"}`)
	if r.status != 400 || !strings.Contains(string(r.body), `"field":"value`) {
		t.Errorf("B's traffic policy naming A's IP policy: %d %s", r.status, r.body)
	}

	unchanged(t, s, s.keyA, beforeA)
	unchanged(t, s, s.keyB, beforeB)
	// B's stop request did not reach A's session (the API does not show
	// the mark: its tunnel server reads it).
	if ts, err := s.svc.Host().Tunnels().GetTunnelSession(context.Background(), principalOf(t, s, a).AccountID, a.session); err != nil || ts.StopRequested {
		t.Errorf("A's session after B's stop request: %+v, %v", ts, err)
	}
	// A still reads everything.
	for path, methods := range resources {
		if methods[0] == "GET" {
			if r := call(t, s, "GET", path, s.keyA, ""); r.status != 200 {
				t.Errorf("A: GET %s: %d %s", path, r.status, r.body)
			}
		}
	}
}
