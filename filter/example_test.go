package filter_test

import (
	"fmt"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/filter"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/resource"
)

func Example() {
	var c filter.Compiler // keeps compiled filters; share one
	f, err := filter.Compile[ipaccess.Rule](&c, `obj.ip_policy.id == "ipp_1" && obj.cidr.startsWith("10.")`)
	if err != nil {
		panic(err)
	}
	rules := []ipaccess.Rule{
		{ID: "ipr_1", CIDR: "10.0.0.0/8", IPPolicy: resource.Ref{ID: "ipp_1"}},
		{ID: "ipr_2", CIDR: "192.168.0.0/16", IPPolicy: resource.Ref{ID: "ipp_1"}},
		{ID: "ipr_3", CIDR: "10.1.0.0/16", IPPolicy: resource.Ref{ID: "ipp_2"}},
	}
	for i := range rules {
		if f.Match(&rules[i]) {
			fmt.Println(rules[i].ID)
		}
	}

	_, err = filter.Compile[ipaccess.Rule](&c, `obj.cdir == "10.0.0.0/8"`)
	for _, v := range apierr.ViolationsOf(err) {
		fmt.Println(v)
	}
	// Output:
	// ipr_1
	// filter: 1:4: undefined field 'cdir'
}
