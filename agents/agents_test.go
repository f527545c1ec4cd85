package agents_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
)

func TestEndpointParamsValidate(t *testing.T) {
	ok := agents.EndpointParams{Proto: agents.ProtoHTTPS, Domain: "app.example.com", ForwardsTo: "app://laptop", Metadata: "{}", Description: "web"}
	with := func(f func(*agents.EndpointParams)) agents.EndpointParams {
		p := ok
		f(&p)
		return p
	}
	for _, tc := range []struct {
		name   string
		params agents.EndpointParams
		fields []string // violations, in order; none: valid
	}{
		{"https", ok, nil},
		{"each proto", with(func(p *agents.EndpointParams) { p.Proto = agents.ProtoTCP }), nil},
		{"tls passthrough", with(func(p *agents.EndpointParams) { p.Proto, p.PassthroughTLS = agents.ProtoTLS, true }), nil},
		{"longest texts", with(func(p *agents.EndpointParams) {
			p.ForwardsTo = strings.Repeat("f", agents.MaxForwardsToBytes)
			p.Metadata = strings.Repeat("m", agents.MaxMetadataBytes)
			p.Description = strings.Repeat("é", agents.MaxDescriptionBytes/2)
		}), nil},
		{"no proto", with(func(p *agents.EndpointParams) { p.Proto = "" }), []string{"Proto"}},
		{"ssh", with(func(p *agents.EndpointParams) { p.Proto = "ssh" }), []string{"Proto"}},
		{"upper case proto", with(func(p *agents.EndpointParams) { p.Proto = "HTTPS" }), []string{"Proto"}},
		{"passthrough for tcp", with(func(p *agents.EndpointParams) { p.Proto, p.PassthroughTLS = agents.ProtoTCP, true }), []string{"PassthroughTLS"}},
		{"every text too long", with(func(p *agents.EndpointParams) {
			p.ForwardsTo = strings.Repeat("f", agents.MaxForwardsToBytes+1)
			p.Metadata = strings.Repeat("m", agents.MaxMetadataBytes+1)
			p.Description = strings.Repeat("d", agents.MaxDescriptionBytes+1)
		}), []string{"ForwardsTo", "Metadata", "Description"}},
		{"not UTF-8", with(func(p *agents.EndpointParams) { p.Metadata = "\xff" }), []string{"Metadata"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.params.Validate()
			var got []string
			for _, v := range apierr.ViolationsOf(err) {
				got = append(got, v.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Fatalf("Validate() = %v; want violations of %q", err, tc.fields)
			}
			if err != nil && apierr.CodeOf(err) != apierr.InvalidArgument {
				t.Errorf("code %v, want InvalidArgument", apierr.CodeOf(err))
			}
		})
	}
}

// FuzzEndpointParamsValidate: any input is judged without panic, and what
// passes is within every rule; a message repeats at most a bounded part
// of the agent's proto.
func FuzzEndpointParamsValidate(f *testing.F) {
	f.Add("https", "app://laptop", "{}", "web", false)
	f.Add("tls", "", "", "", true)
	f.Add("\xff\xfe"+strings.Repeat("x", 100), "\xff", "", "", true)
	f.Fuzz(func(t *testing.T, proto, forwardsTo, metadata, description string, passthrough bool) {
		p := agents.EndpointParams{Proto: proto, ForwardsTo: forwardsTo, Metadata: metadata, Description: description, PassthroughTLS: passthrough}
		err := p.Validate()
		if err == nil {
			switch {
			case proto != "http" && proto != "https" && proto != "tcp" && proto != "tls",
				len(forwardsTo) > agents.MaxForwardsToBytes || len(metadata) > agents.MaxMetadataBytes || len(description) > agents.MaxDescriptionBytes,
				!utf8.ValidString(forwardsTo) || !utf8.ValidString(metadata) || !utf8.ValidString(description),
				passthrough && proto != "tls":
				t.Fatalf("%+v passed", p)
			}
			return
		}
		if len(err.Error()) > 1000 {
			t.Fatalf("a message of %d bytes", len(err.Error()))
		}
	})
}
