package filter_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/filter"
)

// FuzzCompile: any text either compiles into a filter that can be
// evaluated on a resource without panicking, or is refused with
// violations that all name filter, never echoing more than the limit.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`obj.domain == "a.example.com"`,
		`obj.domain.startsWith("a") && obj.cname_target == null`,
		`obj.certificate != null && obj.certificate.id in ["cert_1", "cert_2"]`,
		`obj.created_at > timestamp("2024-01-01T00:00:00Z") || obj.region == "eu"`,
		`obj.certificate_management_status.provisioning_job.started_at < timestamp("2030-01-01T00:00:00Z")`,
		`obj.domain.matches("^a+$")`,
		`obj.descripton == "x"`,
		`obj.created_at > 5`,
		`obj.domain ==`,
		"obj.domain == \"\xff\"",
		`[1,2,3].exists(x, [1,2].exists(y, [1].exists(z, x == y + z)))`,
		strings.Repeat("(", 100) + "true" + strings.Repeat(")", 100),
	} {
		f.Add(s)
	}
	c := &filter.Compiler{}
	cname := "x.cname.example"
	rds := []*domains.ReservedDomain{
		{},
		{ID: "rd_1", Domain: "a.example.com", CNAMETarget: &cname,
			CertificateManagementStatus: &domains.CertStatus{ProvisioningJob: &domains.CertJob{}}},
	}
	f.Fuzz(func(t *testing.T, expr string) {
		flt, err := filter.Compile[domains.ReservedDomain](c, expr)
		if err != nil {
			if apierr.CodeOf(err) != apierr.InvalidArgument {
				t.Fatalf("Compile(%q): code %v: %v", expr, apierr.CodeOf(err), err)
			}
			vs := apierr.ViolationsOf(err)
			if len(vs) == 0 {
				t.Fatalf("Compile(%q): no violations", expr)
			}
			for _, v := range vs {
				if v.Field != "filter" || v.Reason == "" || !utf8.ValidString(v.Reason) {
					t.Fatalf("Compile(%q): violation %+v", expr, v)
				}
			}
			return
		}
		if len(expr) > filter.MaxBytes {
			t.Fatalf("compiled %d bytes", len(expr))
		}
		for _, rd := range rds {
			flt.Match(rd)
		}
	})
}
