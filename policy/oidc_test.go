package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/policy/limits"
)

// ada is the identity the OIDC cases sign in with.
var ada = OIDCIdentity{
	Issuer:            "https://accounts.example.com",
	Subject:           "248289761001",
	Email:             "ada@example.com",
	EmailVerified:     true,
	Name:              "Ada Lovelace",
	PreferredUsername: "ada",
}

func withOIDC(id OIDCIdentity) func(*Request) {
	return func(r *Request) { r.OIDC = id }
}

// oidcVarCases covers the oidc.* variables (issue 17): authenticated, not
// authenticated (the zero identity, which testRequest has) and an identity
// without a subject, whose other fields must not show.
var oidcVarCases = []exprCase{
	{name: "authenticated", expr: "oidc.authenticated", want: triTrue, native: true, req: withOIDC(ada)},
	{name: "authenticated: not", expr: "oidc.authenticated", want: triFalse, native: true},
	{name: "authenticated: no subject", expr: "oidc.authenticated", want: triFalse, native: true,
		req: withOIDC(OIDCIdentity{Issuer: ada.Issuer, Email: ada.Email, EmailVerified: true})},
	{name: "subject", expr: "oidc.subject == '248289761001'", want: triTrue, native: true, req: withOIDC(ada)},
	{name: "subject: not", expr: "oidc.subject == ''", want: triTrue, native: true},
	{name: "issuer", expr: "oidc.issuer == 'https://accounts.example.com'", want: triTrue, native: true, req: withOIDC(ada)},
	{name: "issuer: not", expr: "oidc.issuer == ''", want: triTrue, native: true},
	{name: "issuer: no subject", expr: "oidc.issuer == ''", want: triTrue, native: true,
		req: withOIDC(OIDCIdentity{Issuer: ada.Issuer})},
	{name: "email", expr: "oidc.email == 'ada@example.com'", want: triTrue, native: true, req: withOIDC(ada)},
	{name: "email: suffix", expr: "oidc.email.endsWith('@example.com')", want: triTrue, native: true, req: withOIDC(ada)},
	{name: "email: not", expr: "oidc.email == ''", want: triTrue, native: true},
	{name: "email: no subject", expr: "oidc.email == ''", want: triTrue, native: true,
		req: withOIDC(OIDCIdentity{Email: ada.Email})},
	{name: "email: absent claim", expr: "oidc.email == '' && oidc.authenticated", want: triTrue, native: true,
		req: withOIDC(OIDCIdentity{Issuer: ada.Issuer, Subject: ada.Subject})},
	{name: "email_verified", expr: "oidc.email_verified", want: triTrue, native: true, req: withOIDC(ada)},
	{name: "email_verified: false claim", expr: "oidc.email_verified", want: triFalse, native: true,
		req: withOIDC(OIDCIdentity{Subject: ada.Subject, Email: ada.Email})},
	{name: "email_verified: not", expr: "oidc.email_verified", want: triFalse, native: true},
	{name: "email_verified: no subject", expr: "oidc.email_verified", want: triFalse, native: true,
		req: withOIDC(OIDCIdentity{Email: ada.Email, EmailVerified: true})},
	{name: "name", expr: "oidc.name == 'Ada Lovelace'", want: triTrue, native: true, req: withOIDC(ada)},
	{name: "name: not", expr: "oidc.name == ''", want: triTrue, native: true},
	{name: "name: no subject", expr: "oidc.name == ''", want: triTrue, native: true,
		req: withOIDC(OIDCIdentity{Name: ada.Name})},
	{name: "preferred_username", expr: "oidc.preferred_username == 'ada'", want: triTrue, native: true, req: withOIDC(ada)},
	{name: "preferred_username: not", expr: "oidc.preferred_username == ''", want: triTrue, native: true},
	{name: "preferred_username: no subject", expr: "oidc.preferred_username == ''", want: triTrue, native: true,
		req: withOIDC(OIDCIdentity{PreferredUsername: ada.PreferredUsername})},
	{name: "in a list", expr: "oidc.preferred_username in ['ada', 'grace']", want: triTrue, native: true, req: withOIDC(ada)},
	{name: "on cel-go", expr: "oidc.email.split('@')[1] == 'example.com' && oidc.name.lowerAscii() == 'ada lovelace'", want: triTrue,
		req: withOIDC(ada)},
	{name: "on cel-go: not", expr: "[oidc.subject, oidc.issuer, oidc.email, oidc.name, oidc.preferred_username].all(s, s == '')", want: triTrue},
}

// TestOIDCVariables evaluates every oidc.* case in inbound and outbound
// rules, on cel-go and natively, and checks that both paths agree in
// result and cost.
func TestOIDCVariables(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	for _, tc := range oidcVarCases {
		for _, ph := range []Phase{Inbound, Outbound} {
			key := KeyInbound
			if ph == Outbound {
				key = KeyOutbound
			}
			tc.phase = ph
			t.Run(tc.name+"/"+key, func(t *testing.T) { checkExprCase(t, e, tc) })
		}
	}
}

// TestOIDCDeny checks a deny by identity through Inbound and Outbound:
// Ada passes, another user and an unauthenticated request are refused.
func TestOIDCDeny(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	deny := `{"name":"only ada","expressions":["!oidc.authenticated || oidc.email != 'ada@example.com'"],"actions":[{"type":"deny","config":{"status_code":403}}]}`
	p := mustCompile(t, e, `{"inbound":[`+deny+`],"outbound":[`+deny+`]}`, CompileOptions{})
	grace := ada
	grace.Subject, grace.Email = "1", "grace@example.com"
	for _, tc := range []struct {
		name string
		id   OIDCIdentity
		want Verdict
	}{
		{"ada", ada, Continue},
		{"grace", grace, Respond},
		{"not authenticated", OIDCIdentity{}, Respond},
		{"no subject", OIDCIdentity{Email: ada.Email}, Respond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := testRequest()
			req.OIDC = tc.id
			in := p.Inbound(req)
			out := p.Outbound(req, testResponse(), nil)
			if in.Verdict != tc.want || out.Verdict != tc.want {
				t.Fatalf("inbound %v, outbound %v; want %v", in.Verdict, out.Verdict, tc.want)
			}
			if tc.want == Respond && (in.StatusCode != 403 || in.Location != "inbound[0].actions[0]" || out.Location != "outbound[0].actions[0]") {
				t.Fatalf("inbound %+v, outbound %+v", in, out)
			}
		})
	}
}

// TestOIDCVariablesNotOnConnections checks that the oidc.* variables are
// HTTP-only: a connection policy reading one is refused, saying why.
func TestOIDCVariablesNotOnConnections(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	for _, v := range []string{"oidc.authenticated", "oidc.subject", "oidc.issuer", "oidc.email", "oidc.email_verified", "oidc.name", "oidc.preferred_username"} {
		t.Run(v, func(t *testing.T) {
			expr := v + " == ''"
			if v == "oidc.authenticated" || v == "oidc.email_verified" {
				expr = v
			}
			_, err := e.CompileJSON([]byte(phaseDoc(KeyInbound, expr)), CompileOptions{Target: TargetConnection})
			if err == nil || !strings.Contains(err.Error(), v+" is only available in HTTP policies") {
				t.Fatalf("compile error %v; want %s to be HTTP-only", err, v)
			}
		})
	}
}

// TestOIDCCostBounds checks the sizes the cost model assumes for the
// oidc.* strings: the worst-case estimate of v.contains(v) is exactly its
// runtime cost with v at the bound (limits.MaxOIDCClaimBytes, limits.MaxOIDCIssuerBytes),
// and a string one byte longer costs more than the estimate.
func TestOIDCCostBounds(t *testing.T) {
	for _, tc := range []struct {
		v     string
		bound int
		set   func(*OIDCIdentity, string)
	}{
		{"oidc.subject", limits.MaxOIDCClaimBytes, func(id *OIDCIdentity, s string) { id.Subject = s }},
		{"oidc.email", limits.MaxOIDCClaimBytes, func(id *OIDCIdentity, s string) { id.Email = s }},
		{"oidc.name", limits.MaxOIDCClaimBytes, func(id *OIDCIdentity, s string) { id.Name = s }},
		{"oidc.preferred_username", limits.MaxOIDCClaimBytes, func(id *OIDCIdentity, s string) { id.PreferredUsername = s }},
		{"oidc.issuer", limits.MaxOIDCIssuerBytes, func(id *OIDCIdentity, s string) { id.Issuer = s }},
	} {
		t.Run(tc.v, func(t *testing.T) {
			e, _ := newTestEngine(t, Options{})
			expr := fmt.Sprintf("%s.contains(%s)", tc.v, tc.v)
			est := estimateOf(t, e, expr)
			p := mustCompile(t, e, phaseDoc(KeyInbound, expr), CompileOptions{})
			runCost := func(n int) uint64 {
				req := testRequest()
				req.OIDC = ada
				tc.set(&req.OIDC, strings.Repeat("x", n))
				native, lowered, celRes, celErr, cc := evalCondCost(t, p, Inbound, req, nil, nil, 0)
				if celRes != triTrue || !lowered || native != triTrue || cc.native != cc.cel {
					t.Fatalf("n=%d: CEL %v (%v), native %v (lowered %v), costs %d and %d", n, celRes, celErr, native, lowered, cc.cel, cc.native)
				}
				return cc.cel
			}
			if c := runCost(tc.bound); c != est {
				t.Errorf("cost at the bound %d: %d, estimate %d", tc.bound, c, est)
			}
			if c := runCost(tc.bound + 1); c <= est {
				t.Errorf("cost beyond the bound %d: %d, estimate %d", tc.bound+1, c, est)
			}
		})
	}
}

// BenchmarkEvaluateOIDCRule evaluates a deny rule on the identity, as an
// OIDC route's policy would (natively, every oidc.* variable read without
// allocating), on a request by an admitted user.
func BenchmarkEvaluateOIDCRule(b *testing.B) {
	p := mustCompileB(b, `{"inbound":[{"expressions":["!oidc.authenticated || !oidc.email_verified || !oidc.email.endsWith('@example.com') || oidc.preferred_username in ['mallory', 'eve']"],"actions":[{"type":"deny"}]}]}`)
	if p.in.rules[0].conds[0].native == nil {
		b.Fatal("not reduced to native code")
	}
	req := benchRequest()
	req.OIDC = ada
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Inbound(req); res.Verdict != Continue {
			b.Fatal(res.Verdict)
		}
	}
}
