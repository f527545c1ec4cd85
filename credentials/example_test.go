package credentials_test

import (
	"fmt"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
)

func ExampleParseACL() {
	acl, err := credentials.ParseACL([]string{
		"bind:*.example.com",
		"bind:1.tcp.example.com:20002",
		"bind:env=prod",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(acl.AllowsDomain("api.example.com"))
	fmt.Println(acl.AllowsDomain("example.com"))
	fmt.Println(acl.AllowsAddr("1.tcp.example.com:20002"))
	fmt.Println(acl.AllowsAddr("1.tcp.example.com:20003"))
	fmt.Println(acl.AllowsLabels(map[string]string{"env": "prod"}))
	fmt.Println(acl.AllowsLabels(map[string]string{"env": "dev"}))
	// Output:
	// true
	// false
	// true
	// false
	// true
	// false
}

func ExampleParseACL_invalid() {
	_, err := credentials.ParseACL([]string{"bind:example.com", "bind:foo.*.example.com", "allow:x"})
	for _, v := range apierr.ViolationsOf(err) {
		fmt.Println(v)
	}
	// Output:
	// acl[1]: wildcard * is allowed only as the whole first label of a domain, as in bind:*.example.com
	// acl[2]: must be "*" or a bind rule of the form bind:<domain>, bind:<host>:<port> or bind:<key>=<value>
}

func ExampleACL_Rules() {
	acl, _ := credentials.ParseACL([]string{"bind:*.Example.COM", "bind:tcp.example.com:443", "bind:team=*", "bind:*"})
	for _, r := range acl.Rules() {
		fmt.Printf("%-6s %s\n", r.Kind, r)
	}
	// Output:
	// domain bind:*.example.com
	// addr   bind:tcp.example.com:443
	// label  bind:team=*
	// all    *
}

func ExampleCreateParams_Validate() {
	p := credentials.CreateParams{
		Description: "ci runner",
		ACL:         []string{"bind:example.com", "bind:example.com:0"},
		OwnerID:     "alice",
	}
	for _, v := range apierr.ViolationsOf(p.Validate()) {
		fmt.Println(v)
	}
	// Output:
	// acl[1]: address port must be a number from 1 to 65535; an address rule is bind:<host>:<port>
	// owner_id: must be a user ID (usr_ followed by 27 base62 characters) or a bot ID (bot_ followed by 27 base62 characters)
}

func ExampleUpdateParams_Apply() {
	c := credentials.Credential{Description: "old", Metadata: "keep", ACL: []string{"*"}}
	desc := "new"
	credentials.UpdateParams{Description: &desc, ACL: &[]string{}}.Apply(&c)
	fmt.Printf("%q %q %q\n", c.Description, c.Metadata, c.ACL)
	// Output:
	// "new" "keep" []
}

func ExampleHashToken() {
	tok, err := credentials.NewToken("cr_2BjSiaW8q7lZoHf5oy7tzj3cMqA")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(tok), tok[:len(credentials.TokenPrefix)+28], len(credentials.HashToken(tok)))
	// Output:
	// 75 ept_2BjSiaW8q7lZoHf5oy7tzj3cMqA_ 64
}

func ExampleTokenCredentialID() {
	tok, err := credentials.NewToken("cr_2BjSiaW8q7lZoHf5oy7tzj3cMqA")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(credentials.TokenCredentialID(tok))
	fmt.Println(credentials.TokenCredentialID("ept_rI9Q8CgMOY1n4kL4i2PeMgM8eNt-7YwA9wx5M05VVE4")) // a legacy token
	// Output:
	// cr_2BjSiaW8q7lZoHf5oy7tzj3cMqA true
	//  false
}
