package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/ipaccess"
)

// fieldErrorRE finds the element of the IP policy IDs' errors.
var fieldErrorRE = regexp.MustCompile(`(?s)<div class="field-error" id="ip_policy_ids-error">.*?</div>`)

// TestEdgeIPRestriction: the IP restriction module of a TLS and a TCP
// edge is set from the edge's page with IP policy IDs one per line (a
// malformed, duplicated, unknown or another account's ID refused at its
// line with nothing changed), shown as set, disabled and enabled again,
// and removed; a form without the CSRF token changes nothing.
func TestEdgeIPRestriction(t *testing.T) {
	s := newServer(t, console.Options{})
	ctx := context.Background()
	b := s.browser(t)
	token := b.signIn(s.a.key)

	p1, err := s.svc.CreateIPPolicy(ctx, s.a.p, ipaccess.CreatePolicyParams{Description: "office"})
	must(t, err)
	p2, err := s.svc.CreateIPPolicy(ctx, s.a.p, ipaccess.CreatePolicyParams{Description: "vpn"})
	must(t, err)
	theirs, err := s.svc.CreateIPPolicy(ctx, s.b.p, ipaccess.CreatePolicyParams{Description: "secret-b"})
	must(t, err)
	tls, err := s.svc.CreateTLSEdge(ctx, s.a.p, edges.CreateTLSEdgeParams{})
	must(t, err)
	tcp, err := s.svc.CreateTCPEdge(ctx, s.a.p, edges.CreateTCPEdgeParams{})
	must(t, err)

	unknown := "ipp_" + strings.Repeat("a", len(p1.ID)-4)
	type module struct {
		page string
		get  func() *edges.IPRestriction
	}
	for _, m := range []module{
		{"/console/edges/tls/" + tls.ID, func() *edges.IPRestriction {
			e, err := s.svc.GetTLSEdge(ctx, s.a.p, tls.ID)
			must(t, err)
			return e.IPRestriction
		}},
		{"/console/edges/tcp/" + tcp.ID, func() *edges.IPRestriction {
			e, err := s.svc.GetTCPEdge(ctx, s.a.p, tcp.ID)
			must(t, err)
			return e.IPRestriction
		}},
	} {
		page := b.get(m.page)
		if !strings.Contains(page.body, `id="ipmodule-form"`) || !strings.Contains(page.body, "None is set: the edge checks no client's address against IP policies.") ||
			!strings.Contains(page.body, `id="ipmodule-enabled" name="enabled" value="on" checked`) || strings.Contains(page.body, `id="remove-ipmodule"`) {
			t.Fatalf("%s: the page lacks the IP restriction's form as unset and enabled:\n%s", m.page, page.body)
		}
		for _, bad := range []struct{ ids, want string }{
			{"", "must list at least one IP policy ID"},
			{p1.ID + "\n\nnot-a-policy", "line 3 (not-a-policy): must be an IP policy ID"},
			{p1.ID + "\n" + p1.ID, "line 2 (" + p1.ID + "): duplicates ip_policy_ids[0]"},
			{p1.ID + "\n" + theirs.ID, "line 2 (" + theirs.ID + "): IP policy " + theirs.ID + " not found in this account"},
			{unknown, "line 1 (" + unknown + "): IP policy " + unknown + " not found in this account"},
		} {
			got := b.post(m.page+"/ip_restriction", url.Values{"csrf": {token}, "ip_policy_ids": {bad.ids}, "enabled": {"on"}})
			field := fieldErrorRE.FindString(got.body) // the message at the field, not the IDs echoed in the box
			if got.status < 400 || got.status == http.StatusForbidden || !strings.Contains(field, bad.want) || !strings.Contains(got.body, `id="edit-edge"`) || strings.Contains(got.body, "secret-b") {
				t.Errorf("%s: IDs %q: %d, want the edge's page with %q at the field:\n%s", m.page, bad.ids, got.status, bad.want, got.body)
			}
			if mod := m.get(); mod != nil {
				t.Fatalf("%s: IDs %q were refused, yet the module is %+v", m.page, bad.ids, mod)
			}
		}
		if got := b.post(m.page+"/ip_restriction", url.Values{"csrf": {"wrong"}, "ip_policy_ids": {p1.ID}, "enabled": {"on"}}); got.status != http.StatusForbidden || m.get() != nil {
			t.Errorf("%s: without the CSRF token: %d, want 403 and no module", m.page, got.status)
		}

		got := b.post(m.page+"/ip_restriction", url.Values{"csrf": {token}, "ip_policy_ids": {" " + p2.ID + " \n\n" + p1.ID + "\n"}, "enabled": {"on"}})
		if got.status != http.StatusSeeOther || got.location != m.page {
			t.Fatalf("%s: set: %d to %q: %s", m.page, got.status, got.location, got.body)
		}
		mod := m.get()
		if mod == nil || !mod.Enabled || len(mod.IPPolicies) != 2 || mod.IPPolicies[0].ID != p2.ID || mod.IPPolicies[1].ID != p1.ID {
			t.Fatalf("%s: the module set: %+v; want enabled with %s and %s in that order", m.page, mod, p2.ID, p1.ID)
		}
		page = b.get(m.page)
		for _, want := range []string{"IP restriction enabled: 2 IP policies.", p2.ID + "\n" + p1.ID + "</textarea>", `id="remove-ipmodule"`,
			"Only clients whose address the IP policies allow reach the edge.", edges.ModuleIPRestriction} {
			if !strings.Contains(page.body, want) {
				t.Errorf("%s: the page after setting lacks %q:\n%s", m.page, want, page.body)
			}
		}

		// Unchecked, the box sends nothing: the module stays, disabled.
		if got := b.post(m.page+"/ip_restriction", url.Values{"csrf": {token}, "ip_policy_ids": {p1.ID}}); got.status != http.StatusSeeOther {
			t.Fatalf("%s: disable: %d %s", m.page, got.status, got.body)
		}
		if mod := m.get(); mod == nil || mod.Enabled || len(mod.IPPolicies) != 1 {
			t.Fatalf("%s: the module disabled: %+v", m.page, mod)
		}
		if page := b.get(m.page); !strings.Contains(page.body, "Set but disabled") || strings.Contains(page.body, `name="enabled" value="on" checked`) {
			t.Errorf("%s: the page does not show the module disabled:\n%s", m.page, page.body)
		}

		if got := b.post(m.page+"/ip_restriction/delete", url.Values{"csrf": {token}}); got.status != http.StatusSeeOther || got.location != m.page {
			t.Fatalf("%s: remove: %d to %q", m.page, got.status, got.location)
		}
		if mod := m.get(); mod != nil {
			t.Fatalf("%s: the module after its removal: %+v", m.page, mod)
		}
		if page := b.get(m.page); !strings.Contains(page.body, "IP restriction removed") {
			t.Errorf("%s: the page after the removal lacks its notice:\n%s", m.page, page.body)
		}
	}

	// An IP policy in use by an edge is not deleted from its page.
	_, err = s.svc.ReplaceTCPEdgeIPRestriction(ctx, s.a.p, tcp.ID, edges.IPRestrictionParams{IPPolicyIDs: []string{p1.ID}})
	must(t, err)
	if got := b.post("/console/ip_policies/"+p1.ID+"/delete", url.Values{"csrf": {token}}); got.status != http.StatusConflict {
		t.Errorf("deleting an IP policy an edge uses: %d, want 409", got.status)
	}
}
