package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/console"
)

// TestIPAccess: an IP policy, its rules and a restriction are made from
// their forms (the API's violations at their field, a policy ID's at its
// line), listed and deleted; a policy in use cannot be deleted, and the
// page says so with the API's message.
func TestIPAccess(t *testing.T) {
	s := newServer(t, console.Options{})
	ctx := context.Background()
	b := s.browser(t)
	token := b.signIn(s.a.key)

	got := b.post("/console/ip_policies", url.Values{"csrf": {token}, "description": {"office"}})
	if got.status != http.StatusSeeOther || !strings.HasPrefix(got.location, "/console/ip_policies/ipp_") {
		t.Fatalf("create policy: %d to %q: %s", got.status, got.location, got.body)
	}
	policyPage := got.location
	policyID := strings.TrimPrefix(policyPage, "/console/ip_policies/")

	// A rule from the policy's page: its errors are shown there.
	bad := b.post("/console/ip_policy_rules", url.Values{"csrf": {token}, "back": {"policy"}, "ip_policy_id": {policyID}, "cidr": {"300.1.2.3/8"}, "action": {"allow"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, `id="cidr-error"`) || !strings.Contains(bad.body, "office") {
		t.Fatalf("a bad rule: %d, want 400 on the policy's page with the CIDR's error:\n%s", bad.status, bad.body)
	}
	got = b.post("/console/ip_policy_rules", url.Values{"csrf": {token}, "back": {"policy"}, "ip_policy_id": {policyID}, "cidr": {"192.0.2.0/24"}, "action": {"allow"}})
	if got.status != http.StatusSeeOther || got.location != policyPage {
		t.Fatalf("add rule: %d to %q: %s", got.status, got.location, got.body)
	}
	page := b.get(policyPage)
	if !strings.Contains(page.body, "192.0.2.0/24") || !strings.Contains(page.body, "Added rule ipr_") {
		t.Errorf("the policy's page lacks its rule: %s", page.body)
	}
	// From the rules page, with the policy ID typed.
	bad = b.post("/console/ip_policy_rules", url.Values{"csrf": {token}, "ip_policy_id": {"nope"}, "cidr": {"198.51.100.0/24"}, "action": {"sideways"}})
	for _, want := range []string{`id="ip_policy_id-error"`, `id="action-error"`} {
		if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, want) {
			t.Errorf("a bad rule: %d, want 400 with %s:\n%s", bad.status, want, bad.body)
		}
	}
	got = b.post("/console/ip_policy_rules", url.Values{"csrf": {token}, "ip_policy_id": {policyID}, "cidr": {"198.51.100.7"}, "action": {"deny"}})
	if got.status != http.StatusSeeOther || got.location != "/console/ip_policy_rules" {
		t.Fatalf("add rule: %d to %q: %s", got.status, got.location, got.body)
	}
	rules := b.get("/console/ip_policy_rules?" + url.Values{"filter": {`obj.action == "deny"`}}.Encode())
	if !strings.Contains(rules.body, "198.51.100.7/32") || strings.Contains(rules.body, "192.0.2.0/24") {
		t.Errorf("the filtered rules: %s", rules.body)
	}

	// Restrictions.
	bad = b.post("/console/ip_restrictions", url.Values{"csrf": {token}, "type": {"endpoints"}, "ip_policy_ids": {policyID + "\nipp_nope"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, `id="ip_policy_ids-error"`) || !strings.Contains(bad.body, "line 2 (ipp_nope): ") {
		t.Fatalf("a bad restriction: %d:\n%s", bad.status, bad.body)
	}
	got = b.post("/console/ip_restrictions", url.Values{"csrf": {token}, "type": {"endpoints"}, "ip_policy_ids": {policyID}, "enforced": {"on"}})
	if got.status != http.StatusSeeOther || !strings.HasPrefix(got.location, "/console/ip_restrictions/ipx_") {
		t.Fatalf("create restriction: %d to %q: %s", got.status, got.location, got.body)
	}
	restriction := got.location
	if page := b.get(restriction); !strings.Contains(page.body, policyID) || !strings.Contains(page.body, "endpoints") {
		t.Errorf("the restriction's page: %s", page.body)
	}
	inUse := b.post(policyPage+"/delete", url.Values{"csrf": {token}})
	if inUse.status != http.StatusConflict || !strings.Contains(inUse.body, `id="error-message"`) || !strings.Contains(inUse.body, strings.TrimPrefix(restriction, "/console/ip_restrictions/")) {
		t.Errorf("deleting a policy in use: %d, want 409 naming the restriction: %s", inUse.status, inUse.body)
	}
	if _, err := s.svc.GetIPPolicy(ctx, s.a.p, policyID); err != nil {
		t.Fatalf("a policy in use was deleted: %v", err)
	}
	if del := b.post(restriction+"/delete", url.Values{"csrf": {token}}); del.status != http.StatusSeeOther {
		t.Fatalf("delete restriction: %d", del.status)
	}
	if del := b.post(policyPage+"/delete", url.Values{"csrf": {token}}); del.status != http.StatusSeeOther {
		t.Fatalf("delete policy: %d: %s", del.status, del.body)
	}
	if _, err := s.svc.GetIPPolicy(ctx, s.a.p, policyID); err == nil {
		t.Error("the policy is still there")
	}
}
