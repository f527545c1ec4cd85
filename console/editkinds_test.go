package console_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/ipaccess"
)

// editable is a resource of one kind with an edit form: made for an
// account, its page, and what the form may change, as one string.
type editable struct {
	page string
	snap func() string
}

// editKind is a kind of resource with an edit form: how to make one for
// account a of s, and the edits the tests make of it.
type editKind struct {
	name string
	make func(t *testing.T, s *server, a account) editable
	// form is the edit form's id; prefilled are in the resource's page:
	// the form shows the stored values.
	form      string
	prefilled []string
	// good are the fields a valid edit changes in the form as shown (a
	// browser sends the whole form), and the resource after it.
	good     url.Values
	wantGood string
	// bad are those of an invalid one; its field's error element and a
	// text it shows; the typed value is kept in the form.
	bad               url.Values
	badField, badText string
	kept              string
}

// editKinds are the kinds with an edit form, other than credentials
// (edit_test.go).
func editKinds() []editKind {
	ctx := context.Background()
	return []editKind{
		{name: "API key",
			make: func(t *testing.T, s *server, a account) editable {
				k, err := s.svc.CreateAPIKey(ctx, a.p, identity.CreateAPIKeyParams{Description: "d", Metadata: "m"})
				must(t, err)
				return editable{"/console/api_keys/" + k.ID, func() string {
					k, err := s.svc.GetAPIKey(ctx, a.p, k.ID)
					must(t, err)
					return k.Description + "|" + k.Metadata
				}}
			},
			form: "edit-api-key", prefilled: []string{`id="edit-api-key"`, `id="edit-description" name="description" value="d"`},
			good: url.Values{"description": {"laptop"}, "metadata": {"m"}}, wantGood: "laptop|m",
			bad:      url.Values{"description": {strings.Repeat("x", 256)}, "metadata": {"changed"}},
			badField: "description-error", badText: "255", kept: strings.Repeat("x", 256)},

		{name: "reserved domain",
			make: func(t *testing.T, s *server, a account) editable {
				d, err := s.svc.CreateReservedDomain(ctx, a.p, domains.CreateParams{Domain: strings.ReplaceAll(strings.ToLower(a.p.AccountID), "_", "-") + ".example.com", Description: "d"})
				must(t, err)
				return editable{"/console/reserved_domains/" + d.ID, func() string {
					d, err := s.svc.GetReservedDomain(ctx, a.p, d.ID)
					must(t, err)
					pol, cert := "", ""
					if d.CertificateManagementPolicy != nil {
						pol = d.CertificateManagementPolicy.PrivateKeyType
					}
					if d.Certificate != nil {
						cert = d.Certificate.ID
					}
					return d.Description + "|" + d.Metadata + "|" + pol + "|" + cert
				}}
			},
			form: "edit-domain", prefilled: []string{`id="edit-domain"`, `id="edit-description" name="description" value="d"`},
			good: url.Values{"description": {"shop"}, "metadata": {"m"}, "private_key_type": {"ecdsa"}, "certificate_id": {""}}, wantGood: "shop|m|ecdsa|",
			bad:      url.Values{"description": {"changed"}, "metadata": {""}, "private_key_type": {""}, "certificate_id": {"not-a-cert"}},
			badField: "certificate_id-error", badText: "cert_", kept: `value="not-a-cert"`},

		{name: "HTTPS edge",
			make: func(t *testing.T, s *server, a account) editable {
				e, err := s.svc.CreateHTTPSEdge(ctx, a.p, edges.CreateEdgeParams{Description: "d"})
				must(t, err)
				return editable{"/console/edges/https/" + e.ID, func() string {
					e, err := s.svc.GetHTTPSEdge(ctx, a.p, e.ID)
					must(t, err)
					return fmt.Sprint(e.Description, "|", e.Metadata, "|", e.Hostports)
				}}
			},
			form: "edit-edge", prefilled: []string{`id="edit-edge"`, `id="edit-description" name="description" value="d"`},
			good: url.Values{"description": {"web"}, "metadata": {"m"}, "hostports": {""}}, wantGood: "web|m|[]",
			bad:      url.Values{"description": {"changed"}, "metadata": {""}, "hostports": {"\nnot-a-hostport"}},
			badField: "hostports-error", badText: "line 2 (not-a-hostport): ", kept: "not-a-hostport</textarea>"},

		{name: "TLS edge",
			make: func(t *testing.T, s *server, a account) editable {
				e, err := s.svc.CreateTLSEdge(ctx, a.p, edges.CreateTLSEdgeParams{Description: "d"})
				must(t, err)
				return editable{"/console/edges/tls/" + e.ID, func() string {
					e, err := s.svc.GetTLSEdge(ctx, a.p, e.ID)
					must(t, err)
					return fmt.Sprint(e.Description, "|", e.Metadata, "|", e.Hostports)
				}}
			},
			form: "edit-edge", prefilled: []string{`id="edit-edge"`, `id="policy-form"`},
			good: url.Values{"description": {"mail"}, "metadata": {""}, "hostports": {""}}, wantGood: "mail||[]",
			bad:      url.Values{"description": {"changed"}, "metadata": {strings.Repeat("m", 4097)}, "hostports": {""}},
			badField: "metadata-error", badText: "4096", kept: strings.Repeat("m", 4097) + "</textarea>"},

		{name: "TCP edge",
			make: func(t *testing.T, s *server, a account) editable {
				e, err := s.svc.CreateTCPEdge(ctx, a.p, edges.CreateTCPEdgeParams{Description: "d"})
				must(t, err)
				return editable{"/console/edges/tcp/" + e.ID, func() string {
					e, err := s.svc.GetTCPEdge(ctx, a.p, e.ID)
					must(t, err)
					return fmt.Sprint(e.Description, "|", e.Metadata, "|", e.Hostports)
				}}
			},
			form: "edit-edge", prefilled: []string{`id="edit-edge"`},
			good: url.Values{"description": {"ssh"}, "metadata": {""}, "hostports": {""}}, wantGood: "ssh||[]",
			bad:      url.Values{"description": {"changed"}, "metadata": {""}, "hostports": {"tcp.example.com:0"}},
			badField: "hostports-error", badText: "line 1 (tcp.example.com:0): ", kept: "tcp.example.com:0</textarea>"},

		{name: "HTTPS route",
			make: func(t *testing.T, s *server, a account) editable {
				e, err := s.svc.CreateHTTPSEdge(ctx, a.p, edges.CreateEdgeParams{})
				must(t, err)
				rt, err := s.svc.CreateHTTPSEdgeRoute(ctx, a.p, e.ID, edges.CreateRouteParams{MatchType: "path_prefix", Match: "/", Description: "d"})
				must(t, err)
				return editable{"/console/edges/https/" + e.ID + "/routes/" + rt.ID, func() string {
					rt, err := s.svc.GetHTTPSEdgeRoute(ctx, a.p, e.ID, rt.ID)
					must(t, err)
					return rt.Description + "|" + rt.Metadata + "|" + rt.MatchType + "|" + rt.Match
				}}
			},
			form: "edit-route", prefilled: []string{`id="edit-route"`, `id="edit-match" name="match" value="/"`, `id="policy-form"`},
			good: url.Values{"description": {"api"}, "metadata": {""}, "match_type": {"exact_path"}, "match": {"/api"}}, wantGood: "api||exact_path|/api",
			bad:      url.Values{"description": {"changed"}, "metadata": {""}, "match_type": {"path_prefix"}, "match": {"no-slash"}},
			badField: "match-error", badText: "/", kept: `value="no-slash"`},

		{name: "IP policy",
			make: func(t *testing.T, s *server, a account) editable {
				pol, err := s.svc.CreateIPPolicy(ctx, a.p, ipaccess.CreatePolicyParams{Description: "d"})
				must(t, err)
				return editable{"/console/ip_policies/" + pol.ID, func() string {
					pol, err := s.svc.GetIPPolicy(ctx, a.p, pol.ID)
					must(t, err)
					return pol.Description + "|" + pol.Metadata
				}}
			},
			form: "edit-ip-policy", prefilled: []string{`id="edit-ip-policy"`, `id="edit-description" name="description" value="d"`, `id="create-ip-rule"`},
			good: url.Values{"description": {"office"}, "metadata": {"m"}}, wantGood: "office|m",
			bad:      url.Values{"description": {strings.Repeat("x", 256)}, "metadata": {""}},
			badField: "description-error", badText: "255", kept: strings.Repeat("x", 256)},

		{name: "IP policy rule",
			make: func(t *testing.T, s *server, a account) editable {
				pol, err := s.svc.CreateIPPolicy(ctx, a.p, ipaccess.CreatePolicyParams{})
				must(t, err)
				rule, err := s.svc.CreateIPPolicyRule(ctx, a.p, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "192.0.2.0/24", Action: "allow", Description: "d"})
				must(t, err)
				return editable{"/console/ip_policy_rules/" + rule.ID, func() string {
					rule, err := s.svc.GetIPPolicyRule(ctx, a.p, rule.ID)
					must(t, err)
					return rule.Description + "|" + rule.Metadata + "|" + rule.CIDR + "|" + rule.Action
				}}
			},
			form: "edit-ip-rule", prefilled: []string{`id="edit-ip-rule"`, `id="edit-cidr" name="cidr" value="192.0.2.0/24"`},
			good: url.Values{"description": {"d"}, "metadata": {""}, "cidr": {"198.51.100.0/24"}, "action": {"deny"}}, wantGood: "d||198.51.100.0/24|deny",
			bad:      url.Values{"description": {"changed"}, "metadata": {""}, "cidr": {"not-a-cidr"}, "action": {"allow"}},
			badField: "cidr-error", badText: "", kept: `value="not-a-cidr"`},

		{name: "IP restriction",
			make: func(t *testing.T, s *server, a account) editable {
				pol, err := s.svc.CreateIPPolicy(ctx, a.p, ipaccess.CreatePolicyParams{})
				must(t, err)
				x, err := s.svc.CreateIPRestriction(ctx, a.p, ipaccess.CreateRestrictionParams{Type: "endpoints", IPPolicyIDs: []string{pol.ID}, Description: "d"})
				must(t, err)
				return editable{"/console/ip_restrictions/" + x.ID, func() string {
					x, err := s.svc.GetIPRestriction(ctx, a.p, x.ID)
					must(t, err)
					return fmt.Sprint(x.Description, "|", x.Metadata, "|", x.Enforced, "|", len(x.IPPolicies), "|", x.Type)
				}}
			},
			form: "edit-ip-restriction", prefilled: []string{`id="edit-ip-restriction"`, `id="edit-ip_policy_ids"`, "Its type, endpoints, cannot change."},
			good: url.Values{"description": {"edge"}, "metadata": {""}, "enforced": {"on"}}, wantGood: "edge||true|1|endpoints",
			bad:      url.Values{"description": {"changed"}, "metadata": {""}, "ip_policy_ids": {"ipp_x\n\nnot-an-id"}},
			badField: "ip_policy_ids-error", badText: "line 3 (not-an-id)", kept: "not-an-id</textarea>"},

		{name: "event destination",
			make: func(t *testing.T, s *server, a account) editable {
				d, err := s.svc.CreateEventDestination(ctx, a.p, events.CreateDestinationParams{Description: "d",
					Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: "https://192.0.2.10/hook", Headers: map[string]string{"X-Team": "edge"}}}})
				must(t, err)
				return editable{"/console/event_destinations/" + d.ID, func() string {
					d, err := s.svc.GetEventDestination(ctx, a.p, d.ID)
					must(t, err)
					return fmt.Sprint(d.Description, "|", d.Metadata, "|", d.Target.HTTP.URL, "|", d.Target.HTTP.Headers)
				}}
			},
			form: "edit-destination", prefilled: []string{`id="edit-destination"`, `id="edit-url" name="url" value="https://192.0.2.10/hook"`, "X-Team: edge</textarea>"},
			good:     url.Values{"description": {"ops"}, "metadata": {""}, "url": {"https://192.0.2.11/new"}, "headers": {"X-Team: edge\nX-Env: prod"}},
			wantGood: "ops||https://192.0.2.11/new|map[X-Env:prod X-Team:edge]",
			bad:      url.Values{"description": {"changed"}, "metadata": {""}, "url": {"https://192.0.2.10/hook"}, "headers": {"Content-Type: text/plain"}},
			badField: "target-http-headers-error", badText: "Content-Type: is set by the delivery", kept: "Content-Type: text/plain</textarea>"},
	}
}

// TestEditKinds: each kind's page has an edit form pre-filled with what
// is stored; a valid edit changes what was typed and leaves the rest; an
// unchanged form saves nothing; an invalid one shows the API's message
// next to its field, keeps what was typed, and changes nothing.
func TestEditKinds(t *testing.T) {
	s := newServer(t, console.Options{})
	b := s.browser(t)
	token := b.signIn(s.a.key)
	for _, k := range editKinds() {
		t.Run(k.name, func(t *testing.T) {
			// The invalid edit first, on a resource as made.
			r := k.make(t, s, s.a)
			page := b.get(r.page)
			if page.status != http.StatusOK {
				t.Fatalf("GET %s: %d", r.page, page.status)
			}
			for _, want := range k.prefilled {
				if !strings.Contains(page.body, want) {
					t.Errorf("the page lacks %q:\n%s", want, page.body)
				}
			}
			before := r.snap()
			bad := formValues(t, page.body, k.form)
			for f, v := range k.bad {
				bad[f] = v
			}
			got := b.post(r.page+"/edit", bad)
			if got.status != http.StatusBadRequest {
				t.Fatalf("an invalid edit: %d, want 400:\n%s", got.status, got.body)
			}
			for _, want := range []string{`id="` + k.badField + `"`, `aria-invalid="true"`, k.badText, k.kept} {
				if !strings.Contains(got.body, want) {
					t.Errorf("the invalid edit's page lacks %q:\n%s", want, got.body)
				}
			}
			if after := r.snap(); after != before {
				t.Errorf("an invalid edit changed %q to %q", before, after)
			}

			good := formValues(t, page.body, k.form)
			for f, v := range k.good {
				good[f] = v
			}
			got = b.post(r.page+"/edit", good)
			if got.status != http.StatusSeeOther || got.location != r.page {
				t.Fatalf("a valid edit: %d to %q, want 303 to %s:\n%s", got.status, got.location, r.page, got.body)
			}
			if after := r.snap(); after != k.wantGood {
				t.Errorf("after a valid edit: %q, want %q", after, k.wantGood)
			}
			if page := b.get(r.page); !strings.Contains(page.body, "Saved ") {
				t.Errorf("no notice of the save:\n%s", page.body)
			}
			// The page is pre-filled with what was saved: sent again as it
			// is, it changes nothing.
			again := formValues(t, b.get(r.page).body, k.form)
			if again.Get("csrf") != token {
				t.Errorf("the form's token %q, want the session's", again.Get("csrf"))
			}
			if got := b.post(r.page+"/edit", again); got.status != http.StatusSeeOther {
				t.Fatalf("the form sent again: %d:\n%s", got.status, got.body)
			}
			if page := b.get(r.page); !strings.Contains(page.body, "Nothing changed") {
				t.Errorf("the form as shown, sent again, changed something:\n%s", page.body)
			}
			if after := r.snap(); after != k.wantGood {
				t.Errorf("after the form was sent again: %q, want %q", after, k.wantGood)
			}
		})
	}
}

var (
	inputField    = regexp.MustCompile(`<input ([^>]*)>`)
	textareaField = regexp.MustCompile(`(?s)<textarea [^>]*name="([^"]+)"[^>]*>(.*?)</textarea>`)
	selectField   = regexp.MustCompile(`(?s)<select [^>]*name="([^"]+)"[^>]*>(.*?)</select>`)
	selected      = regexp.MustCompile(`<option value="([^"]*)" selected>`)
	attr          = regexp.MustCompile(`([a-z-]+)(?:="([^"]*)")?`)
)

// formValues returns what a browser sends of the form of that id in
// body, as shown: its inputs (a checkbox when checked, as "on"),
// textareas and selects.
func formValues(t *testing.T, body, id string) url.Values {
	t.Helper()
	start := strings.Index(body, `id="`+id+`"`)
	if start < 0 {
		t.Fatalf("no form %q in the page:\n%s", id, body)
	}
	form := body[start:]
	form = form[:strings.Index(form, "</form>")]
	v := url.Values{}
	for _, m := range inputField.FindAllStringSubmatch(form, -1) {
		attrs := map[string]string{}
		for _, a := range attr.FindAllStringSubmatch(m[1], -1) {
			attrs[a[1]] = html.UnescapeString(a[2])
		}
		switch {
		case attrs["name"] == "":
		case attrs["type"] == "checkbox":
			if _, checked := attrs["checked"]; checked {
				v.Add(attrs["name"], "on")
			}
		default:
			v.Add(attrs["name"], attrs["value"])
		}
	}
	for _, m := range textareaField.FindAllStringSubmatch(form, -1) {
		v.Add(m[1], html.UnescapeString(m[2]))
	}
	for _, m := range selectField.FindAllStringSubmatch(form, -1) {
		if sel := selected.FindStringSubmatch(m[2]); sel != nil {
			v.Add(m[1], html.UnescapeString(sel[1]))
		}
	}
	return v
}

// TestEditDomainCertificate: a managed domain's form offers no "off"
// (turning management off is a form of its own, which keeps the
// certificate), and attaching a certificate and a policy at once is the
// API's refusal, at both fields, with nothing changed.
func TestEditDomainCertificate(t *testing.T) {
	ctx := context.Background()
	s := newServer(t, console.Options{})
	b := s.browser(t)
	token := b.signIn(s.a.key)
	d, err := s.svc.CreateReservedDomain(ctx, s.a.p, domains.CreateParams{Domain: "*.shop.example.com",
		CertificateManagementPolicy: &domains.CertPolicyParams{Authority: domains.AuthorityLetsEncrypt, PrivateKeyType: domains.KeyTypeRSA}})
	must(t, err)
	path := "/console/reserved_domains/" + d.ID
	page := b.get(path)
	if strings.Contains(page.body, `<option value="">off</option>`) || !strings.Contains(page.body, `<option value="rsa" selected>`) || !strings.Contains(page.body, `id="unmanage"`) {
		t.Fatalf("a managed domain's form:\n%s", page.body)
	}
	form := formValues(t, page.body, "edit-domain")
	form.Set("private_key_type", "ecdsa")
	form.Set("certificate_id", "cert_"+strings.Repeat("a", 27))
	got := b.post(path+"/edit", form)
	if got.status != http.StatusBadRequest || !strings.Contains(got.body, `id="certificate_id-error"`) || !strings.Contains(got.body, `id="certificate_management_policy-error"`) {
		t.Fatalf("a policy and a certificate at once: %d:\n%s", got.status, got.body)
	}
	if after, _ := s.svc.GetReservedDomain(ctx, s.a.p, d.ID); after.CertificateManagementPolicy == nil || after.CertificateManagementPolicy.PrivateKeyType != "rsa" {
		t.Errorf("the refused edit changed the policy: %+v", after.CertificateManagementPolicy)
	}

	got = b.post(path+"/certificate_management_policy/delete", url.Values{"csrf": {token}})
	if got.status != http.StatusSeeOther || got.location != path {
		t.Fatalf("turning management off: %d to %q", got.status, got.location)
	}
	if after, _ := s.svc.GetReservedDomain(ctx, s.a.p, d.ID); after.CertificateManagementPolicy != nil {
		t.Error("management is still on")
	}
	page = b.get(path)
	if !strings.Contains(page.body, "Certificate management is off") || !strings.Contains(page.body, `<option value="" selected>off</option>`) || strings.Contains(page.body, `id="unmanage"`) {
		t.Errorf("after turning management off:\n%s", page.body)
	}
}
