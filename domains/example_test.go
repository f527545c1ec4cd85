package domains_test

import (
	"fmt"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
)

func ExampleParseName() {
	for _, s := range []string{"App.Example.COM.", "*.example.com", "a.*.example.com", "10.0.0.1"} {
		name, err := domains.ParseName(s)
		if err != nil {
			fmt.Printf("%s: %v\n", s, err)
			continue
		}
		fmt.Println(name)
	}
	// Output:
	// app.example.com
	// *.example.com
	// a.*.example.com: may have a wildcard only as the whole first label, as in *.example.com
	// 10.0.0.1: must not end in an all-numeric label; IP addresses cannot be reserved
}

func ExampleCovers() {
	sans := []string{"example.com", "*.example.com"}
	fmt.Println(domains.Covers(sans, "example.com"))
	fmt.Println(domains.Covers(sans, "app.example.com"))
	fmt.Println(domains.Covers(sans, "a.b.example.com"))
	fmt.Println(domains.Covers(sans, "*.example.com"))
	// Output:
	// true
	// true
	// false
	// true
}

func ExampleCreateParams_Validate() {
	cfg := domains.Config{}.WithDefaults()
	err := domains.CreateParams{
		Domain:                      "edgeplane.app",
		Region:                      "mars",
		CertificateID:               "cert_00000000000000000000000000a",
		CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt"},
	}.Validate(cfg)
	for _, v := range apierr.ViolationsOf(err) {
		fmt.Println(v)
	}
	// Output:
	// region: must be one of: au, eu, ap, us, jp, in, sa
	// domain: edgeplane.app is owned by the service; reserve a subdomain such as name.edgeplane.app
	// certificate_id: cannot be combined with certificate_management_policy; give at most one of them
	// certificate_management_policy: cannot be combined with certificate_id; give at most one of them
}
