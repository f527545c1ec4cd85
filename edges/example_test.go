package edges_test

import (
	"fmt"

	"github.com/edgeplane/edgeplane/edges"
)

// Replace parameters are validated, then turned into the module to store:
// header names lower-cased, add and remove never null.
func ExampleResponseHeadersParams() {
	p := edges.ResponseHeadersParams{
		Add:    map[string]string{"X-Frame-Options": "DENY"},
		Remove: []string{"Server"},
	}
	if err := p.Validate(); err != nil {
		panic(err)
	}
	m := p.Module()
	fmt.Println(m.Enabled, m.Add, m.Remove)

	bad := edges.ResponseHeadersParams{Add: map[string]string{"X-Trace": "1", "x-trace": "2", "Set-Cookie": "a=1\r\nX: y"}}
	fmt.Println(bad.Validate())
	// Output:
	// true map[x-frame-options:DENY] [server]
	// invalid request: add["Set-Cookie"]: header value must not contain CR, LF or NUL characters; add["x-trace"]: duplicates header "X-Trace" (header names are case-insensitive); give each header once
}

// The effective values behind the stored defaults.
func ExampleTLSTermination_EffectiveMinVersion() {
	m := edges.TLSTerminationParams{}.Module()
	fmt.Printf("%s %v %q\n", m.TerminateAt, m.MinVersion, m.EffectiveMinVersion())
	up := edges.TLSTerminationParams{TerminateAt: edges.TerminateAtUpstream}.Module()
	fmt.Printf("%s %q\n", up.TerminateAt, up.EffectiveMinVersion())
	oidc := edges.OIDCParams{Issuer: "https://idp.example", ClientID: "c", ClientSecret: "s"}.Module()
	fmt.Printf("%q %q\n", oidc.CookiePrefix, oidc.EffectiveCookiePrefix())
	// Output:
	// edge <nil> "1.2"
	// upstream ""
	// "" "service."
}
