package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/console"
)

// TestReservedDomains: a domain reserved from the form shows the DNS
// records it needs (its CNAME, and for a managed wildcard the
// _acme-challenge CNAME) and its certificate's status; the API's
// violations are shown at their field; delete releases it.
func TestReservedDomains(t *testing.T) {
	s := newServer(t, console.Options{})
	b := s.browser(t)
	token := b.signIn(s.a.key)

	bad := b.post("/console/reserved_domains", url.Values{"csrf": {token}, "domain": {"not a domain"}, "description": {strings.Repeat("d", 300)}})
	if bad.status != http.StatusBadRequest {
		t.Fatalf("%d, want 400", bad.status)
	}
	for _, want := range []string{`id="domain-error"`, `id="description-error"`, `value="not a domain"`} {
		if !strings.Contains(bad.body, want) {
			t.Errorf("the form lacks %q:\n%s", want, bad.body)
		}
	}

	cases := []struct {
		name, domain string
		managed      bool
		records      []string // names of the records wanted
		status       string
	}{
		{"managed wildcard", "*.example.com", true, []string{"*.example.com", "_acme-challenge.example.com"}, "provisioning"},
		{"plain", "app.example.net", false, []string{"app.example.net"}, "none"},
		{"service-owned", "demo.edgeplane.app", true, nil, "provisioning"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"csrf": {token}, "domain": {tc.domain}, "private_key_type": {"ecdsa"}}
			if tc.managed {
				form.Set("managed", "on")
			}
			got := b.post("/console/reserved_domains", form)
			if got.status != http.StatusSeeOther || !strings.HasPrefix(got.location, "/console/reserved_domains/rd_") {
				t.Fatalf("%d to %q: %s", got.status, got.location, got.body)
			}
			id := strings.TrimPrefix(got.location, "/console/reserved_domains/")
			d, err := s.svc.GetReservedDomain(context.Background(), s.a.p, id)
			if err != nil {
				t.Fatal(err)
			}
			page := b.get(got.location)
			if !strings.Contains(page.body, tc.status) {
				t.Errorf("the page does not show the certificate as %q", tc.status)
			}
			if len(tc.records) == 0 && !strings.Contains(page.body, `id="no-dns"`) {
				t.Errorf("the page does not say that no record is needed")
			}
			for _, name := range tc.records {
				if !strings.Contains(page.body, "<td><code>"+name+"</code></td><td>CNAME</td>") {
					t.Errorf("no CNAME record for %s:\n%s", name, page.body)
				}
			}
			if d.CNAMETarget != nil && !strings.Contains(page.body, *d.CNAMETarget) {
				t.Errorf("the page lacks the CNAME target %s", *d.CNAMETarget)
			}
			if d.ACMEChallengeCNAMETarget != nil && !strings.Contains(page.body, *d.ACMEChallengeCNAMETarget) {
				t.Errorf("the page lacks the ACME challenge target %s", *d.ACMEChallengeCNAMETarget)
			}
			if list := b.get("/console/reserved_domains"); !strings.Contains(list.body, tc.domain) {
				t.Errorf("the list lacks %s", tc.domain)
			}
			del := b.post("/console/reserved_domains/"+id+"/delete", url.Values{"csrf": {token}})
			if del.status != http.StatusSeeOther || del.location != "/console/reserved_domains" {
				t.Fatalf("delete: %d to %q", del.status, del.location)
			}
			if _, err := s.svc.GetReservedDomain(context.Background(), s.a.p, id); err == nil {
				t.Error("the domain is still reserved")
			}
			if page := b.get("/console/reserved_domains"); !strings.Contains(page.body, "Deleted reserved domain "+id) {
				t.Error("no notice of the deletion")
			}
		})
	}
}
