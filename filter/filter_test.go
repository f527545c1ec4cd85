package filter_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/filter"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/resource"
)

var (
	t2024 = time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	token = "tok"
	cred  = credentials.Credential{ID: "cr_1", URI: "http://x/credentials/cr_1", CreatedAt: t2024,
		Description: "prod api", Metadata: `{"team":"edge"}`, ACL: []string{"bind:a.example.com", "bind:b.example.com"}, OwnerID: "usr_1"}
	rule = ipaccess.Rule{ID: "ipr_1", CreatedAt: t2024, CIDR: "10.0.0.0/8", Action: "allow",
		IPPolicy: resource.Ref{ID: "ipp_1", URI: "http://x/ip_policies/ipp_1"}}
	cname  = "abc.cname.example"
	domain = domains.ReservedDomain{ID: "rd_1", Domain: "app.example.com", CNAMETarget: &cname,
		Certificate: &resource.Ref{ID: "cert_1"}}
	bareDomain = domains.ReservedDomain{ID: "rd_2", Domain: "other.example.com",
		CertificateManagementStatus: &domains.CertStatus{ProvisioningJob: &domains.CertJob{StartedAt: t2024}}}
	backend = backends.TunnelGroupBackend{ID: "bkdtg_1", Labels: map[string]string{"env": "prod"},
		Tunnels: []resource.Ref{{ID: "tn_1"}, {ID: "tn_2"}}}
)

func match[T any](t *testing.T, expr string, v *T) bool {
	t.Helper()
	f, err := filter.Compile[T](&filter.Compiler{}, expr)
	if err != nil {
		t.Fatalf("Compile(%q): %v", expr, err)
	}
	return f.Match(v)
}

func TestMatch(t *testing.T) {
	withToken := cred
	withToken.Token = &token
	tests := []struct {
		name string
		got  func(t *testing.T) bool
		want bool
	}{
		{"string equality", func(t *testing.T) bool { return match(t, `obj.description == "prod api"`, &cred) }, true},
		{"string inequality", func(t *testing.T) bool { return match(t, `obj.description == "prod"`, &cred) }, false},
		{"startsWith", func(t *testing.T) bool { return match(t, `obj.description.startsWith("prod")`, &cred) }, true},
		{"startsWith no", func(t *testing.T) bool { return match(t, `obj.description.startsWith("api")`, &cred) }, false},
		{"in list", func(t *testing.T) bool { return match(t, `"bind:b.example.com" in obj.acl`, &cred) }, true},
		{"in list no", func(t *testing.T) bool { return match(t, `"bind:c.example.com" in obj.acl`, &cred) }, false},
		{"field in literal list", func(t *testing.T) bool { return match(t, `obj.owner_id in ["usr_2", "usr_1"]`, &cred) }, true},
		{"and", func(t *testing.T) bool {
			return match(t, `obj.owner_id == "usr_1" && obj.description.endsWith("api")`, &cred)
		}, true},
		{"and one false", func(t *testing.T) bool { return match(t, `obj.owner_id == "usr_1" && obj.description == "x"`, &cred) }, false},
		{"or", func(t *testing.T) bool { return match(t, `obj.owner_id == "usr_2" || obj.id == "cr_1"`, &cred) }, true},
		{"or both false", func(t *testing.T) bool { return match(t, `obj.owner_id == "usr_2" || obj.id == "cr_2"`, &cred) }, false},
		{"timestamp after", func(t *testing.T) bool {
			return match(t, `obj.created_at > timestamp("2024-01-01T00:00:00Z")`, &cred)
		}, true},
		{"timestamp before", func(t *testing.T) bool {
			return match(t, `obj.created_at < timestamp("2024-06-01T12:00:00Z")`, &cred)
		}, false},
		{"exists over list", func(t *testing.T) bool { return match(t, `obj.acl.exists(a, a.startsWith("bind:b"))`, &cred) }, true},
		{"null token", func(t *testing.T) bool { return match(t, `obj.token == null`, &cred) }, true},
		{"set token", func(t *testing.T) bool { return match(t, `obj.token == "tok"`, &withToken) }, true},
		{"set token not null", func(t *testing.T) bool { return match(t, `obj.token != null`, &withToken) }, true},
		{"ref id", func(t *testing.T) bool { return match(t, `obj.ip_policy.id == "ipp_1"`, &rule) }, true},
		{"ref uri", func(t *testing.T) bool { return match(t, `obj.ip_policy.uri.endsWith("/ipp_1")`, &rule) }, true},
		{"ref id no", func(t *testing.T) bool { return match(t, `obj.ip_policy.id == "ipp_2"`, &rule) }, false},
		{"nullable string set", func(t *testing.T) bool { return match(t, `obj.cname_target.startsWith("abc")`, &domain) }, true},
		{"nullable string null", func(t *testing.T) bool { return match(t, `obj.cname_target == null`, &bareDomain) }, true},
		{"method on null does not match", func(t *testing.T) bool {
			return match(t, `obj.cname_target.startsWith("abc")`, &bareDomain)
		}, false},
		{"nullable object set", func(t *testing.T) bool {
			return match(t, `obj.certificate != null && obj.certificate.id == "cert_1"`, &domain)
		}, true},
		{"nullable object null", func(t *testing.T) bool { return match(t, `obj.certificate == null`, &bareDomain) }, true},
		{"field of null object does not match", func(t *testing.T) bool {
			return match(t, `obj.certificate.id == "cert_1"`, &bareDomain)
		}, false},
		{"null time", func(t *testing.T) bool {
			return match(t, `obj.certificate_management_status.renews_at == null`, &bareDomain)
		}, true},
		{"null time is not epoch", func(t *testing.T) bool {
			return match(t, `obj.certificate_management_status.renews_at < timestamp("2000-01-01T00:00:00Z")`, &bareDomain)
		}, false},
		{"nested time", func(t *testing.T) bool {
			return match(t, `obj.certificate_management_status.provisioning_job.started_at == timestamp("2024-06-01T12:00:00Z")`, &bareDomain)
		}, true},
		{"map key", func(t *testing.T) bool {
			return match(t, `"env" in obj.labels && obj.labels["env"] == "prod"`, &backend)
		}, true},
		{"absent map key does not match", func(t *testing.T) bool { return match(t, `obj.labels["team"] == "x"`, &backend) }, false},
		{"list of refs", func(t *testing.T) bool { return match(t, `obj.tunnels.exists(r, r.id == "tn_2")`, &backend) }, true},
		{"size", func(t *testing.T) bool { return match(t, `size(obj.tunnels) == 2`, &backend) }, true},
		{"not", func(t *testing.T) bool { return match(t, `!(obj.id == "bkdtg_1")`, &backend) }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.got(t); got != tc.want {
				t.Errorf("match = %v, want %v", got, tc.want)
			}
		})
	}
}

var locRE = regexp.MustCompile(`^\d+:\d+: `)

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name, expr string
		want       string // a substring of the (single) reason
		loc        string // the reason's line:column prefix, "" when it has none
	}{
		{"syntax", `obj.description ==`, "Syntax error", "1:19"},
		{"syntax second line", "obj.id == \"a\" &&\n  obj.(", "Syntax error", "2:7"},
		{"unknown field", `obj.descripton == "x"`, "undefined field 'descripton'", "1:4"},
		{"Go field name", `obj.Description == "x"`, "undefined field 'Description'", "1:4"},
		{"wrong type", `obj.created_at > 5`, "no matching overload", "1:16"},
		{"string vs int", `obj.description == 5`, "no matching overload", "1:17"},
		{"unknown variable", `cred.id == "x"`, "undeclared reference to 'cred'", "1:1"},
		{"not boolean", `obj.description`, "must be a boolean expression, got one of type string", "1:1"},
		{"bad timestamp literal", `obj.created_at > timestamp("yesterday")`, "invalid timestamp", "1:28"},
		{"too costly", `obj.metadata.contains(obj.description)`, "exceeds the limit of 1000000", "1:1"},
		{"too costly nested", `obj.acl.exists(a, obj.acl.exists(b, a.contains(b)))`, "exceeds the limit", "1:1"},
		{"too deeply nested comprehensions", `obj.acl.exists(a, obj.acl.exists(b, obj.acl.exists(c, a == c)))`, "nesting", ""},
		{"too long", `obj.id == "` + strings.Repeat("a", filter.MaxBytes) + `"`, "must be at most 4096 bytes, got 4108", ""},
		{"empty", "  ", "empty", ""},
		{"invalid UTF-8", "obj.id == \"\xff\"", "UTF-8", ""},
		{"too deep", strings.Repeat("(", 60) + "true" + strings.Repeat(")", 60), "", ""},
	}
	c := &filter.Compiler{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := filter.Compile[credentials.Credential](c, tc.expr)
			if err == nil {
				t.Fatalf("Compile(%q) = %v, want an error", tc.expr, f)
			}
			if apierr.CodeOf(err) != apierr.InvalidArgument || !errors.Is(err, apierr.ErrInvalidArgument) {
				t.Fatalf("code = %v, want InvalidArgument", apierr.CodeOf(err))
			}
			vs := apierr.ViolationsOf(err)
			if len(vs) == 0 {
				t.Fatalf("no violations in %v", err)
			}
			for _, v := range vs {
				if v.Field != "filter" {
					t.Errorf("violation field = %q, want filter", v.Field)
				}
			}
			if !strings.Contains(vs[0].Reason, tc.want) {
				t.Errorf("reason = %q, want it to contain %q", vs[0].Reason, tc.want)
			}
			if tc.loc != "" && !strings.HasPrefix(vs[0].Reason, tc.loc+": ") {
				t.Errorf("reason = %q, want it to start with %q", vs[0].Reason, tc.loc+": ")
			}
			if tc.loc == "" && tc.want == "nesting" && !locRE.MatchString(vs[0].Reason) {
				t.Errorf("reason = %q, want a line:column", vs[0].Reason)
			}
		})
	}
}

func TestCompileLongestAllowed(t *testing.T) {
	expr := `obj.id == "` + strings.Repeat("a", filter.MaxBytes-len(`obj.id == ""`)) + `"`
	if len(expr) != filter.MaxBytes {
		t.Fatalf("len = %d", len(expr))
	}
	if _, err := filter.Compile[credentials.Credential](nil, expr); err != nil {
		t.Fatalf("Compile of %d bytes: %v", len(expr), err)
	}
}

func TestNilCompiler(t *testing.T) {
	f, err := filter.Compile[ipaccess.Rule](nil, `obj.action == "allow"`)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Match(&rule) || f.String() != `obj.action == "allow"` {
		t.Errorf("Match = false or String = %q", f.String())
	}
}

func TestSameTextOtherType(t *testing.T) {
	c := &filter.Compiler{}
	if _, err := filter.Compile[ipaccess.Rule](c, `obj.action == "allow"`); err != nil {
		t.Fatal(err)
	}
	// A cached filter of another type must not be reused: a credential has no action.
	if _, err := filter.Compile[credentials.Credential](c, `obj.action == "allow"`); err == nil {
		t.Fatal("a credential filter over obj.action compiled")
	}
}

func BenchmarkMatch(b *testing.B) {
	f, err := filter.Compile[credentials.Credential](nil, `obj.description.startsWith("prod") && "bind:b.example.com" in obj.acl && obj.created_at > timestamp("2024-01-01T00:00:00Z")`)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !f.Match(&cred) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkCompileCached(b *testing.B) {
	c := &filter.Compiler{}
	const expr = `obj.description.startsWith("prod") && obj.owner_id == "usr_1"`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := filter.Compile[credentials.Credential](c, expr); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := filter.Compile[credentials.Credential](nil, `obj.description.startsWith("prod") && obj.owner_id == "usr_1"`); err != nil {
			b.Fatal(err)
		}
	}
}
