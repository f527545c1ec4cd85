package ipaccess_test

import (
	"fmt"
	"net/netip"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/ipaccess"
)

func ExampleSet_Allowed() {
	set, err := ipaccess.NewSet([]ipaccess.Rule{
		{CIDR: "192.0.2.0/24", Action: ipaccess.ActionAllow},
		{CIDR: "192.0.2.128/25", Action: ipaccess.ActionDeny},
		{CIDR: "2001:db8::/32", Action: ipaccess.ActionAllow},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ip := range []string{"192.0.2.10", "192.0.2.200", "::ffff:192.0.2.10", "2001:db8::1", "198.51.100.1"} {
		fmt.Println(ip, set.Allowed(netip.MustParseAddr(ip)))
	}
	// Output:
	// 192.0.2.10 true
	// 192.0.2.200 false
	// ::ffff:192.0.2.10 true
	// 2001:db8::1 true
	// 198.51.100.1 false
}

func ExampleNormalizeCIDR() {
	for _, s := range []string{"10.1.2.3/8", "192.0.2.1", "2001:db8::1", "::ffff:10.0.0.0/104", "fe80::1%eth0"} {
		n, err := ipaccess.NormalizeCIDR(s)
		if err != nil {
			fmt.Println(s, "->", err)
			continue
		}
		fmt.Println(s, "->", n)
	}
	// Output:
	// 10.1.2.3/8 -> 10.0.0.0/8
	// 192.0.2.1 -> 192.0.2.1/32
	// 2001:db8::1 -> 2001:db8::1/128
	// ::ffff:10.0.0.0/104 -> 10.0.0.0/8
	// fe80::1%eth0 -> invalid cidr: must not contain an IPv6 zone
}

func ExampleCreateRestrictionParams_Validate() {
	p := ipaccess.CreateRestrictionParams{
		Type:        "ssh",
		IPPolicyIDs: []string{"ipp_1abcdefghijklmnopqrstuvwxyz", "ipp_1abcdefghijklmnopqrstuvwxyz", "cr_1"},
	}
	for _, v := range apierr.ViolationsOf(p.Validate()) {
		fmt.Println(v)
	}
	// Output:
	// type: must be one of: dashboard, api, agent, endpoints
	// ip_policy_ids[1]: duplicates ip_policy_ids[0]; each policy may be listed once
	// ip_policy_ids[2]: must be an IP policy ID (ipp_ followed by 27 base62 characters)
}
