package tunnel

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
)

func TestEndpointParams(t *testing.T) {
	s := &Server{opts: Options{TCPHost: "tcp.example.test", TCPLow: 20000, TCPHigh: 20099, DomainBase: "agents.example.test"}}
	for _, tc := range []struct {
		name  string
		proto string
		opts  string
		extra bindExtra
		want  agents.EndpointParams // Proto, Domain, Addr, PassthroughTLS, TrafficPolicy compared
		bad   []string              // violations' fields
	}{
		{name: "the SDK's https", proto: "https", opts: `{"URL":"","Domain":"app.example.com","Hostname":"","Subdomain":"","Auth":"","HostHeaderRewrite":false,"LocalURLScheme":"","ProxyProto":0,"Compression":null,"BasicAuth":null,"TrafficPolicy":""}`,
			want: agents.EndpointParams{Proto: "https", Domain: "app.example.com"}},
		{name: "hostname", proto: "http", opts: `{"Hostname":"app.example.com"}`, want: agents.EndpointParams{Proto: "http", Domain: "app.example.com"}},
		{name: "a URL", proto: "https", opts: `{"URL":"https://App.example.com"}`, want: agents.EndpointParams{Proto: "https", Domain: "app.example.com"}},
		{name: "a bare URL", proto: "tls", opts: `{"URL":"app.example.com:443","TLSTermination":null}`, want: agents.EndpointParams{Proto: "tls", Domain: "app.example.com", PassthroughTLS: true}},
		{name: "URL and Domain agree", proto: "https", opts: `{"URL":"https://app.example.com:443","Domain":"APP.example.com"}`, want: agents.EndpointParams{Proto: "https", Domain: "APP.example.com"}},
		{name: "tls terminated", proto: "tls", opts: `{"Domain":"app.example.com","TLSTermination":{}}`, want: agents.EndpointParams{Proto: "tls", Domain: "app.example.com"}},
		{name: "tcp", proto: "tcp", opts: `{"Addr":"tcp.example.test:20001","TrafficPolicy":"{}"}`, want: agents.EndpointParams{Proto: "tcp", Addr: "tcp.example.test:20001", TrafficPolicy: "{}"}},
		{name: "tcp URL", proto: "tcp", opts: `{"URL":"tcp://tcp.example.test:20001"}`, want: agents.EndpointParams{Proto: "tcp", Addr: "tcp.example.test:20001"}},
		{name: "no options", proto: "tcp", opts: `null`, want: agents.EndpointParams{Proto: "tcp"}},
		{name: "agent-side options", proto: "tls", opts: `{"Domain":"a.example.com","MutualTLSAtAgent":true,"TLSTermination":null}`, want: agents.EndpointParams{Proto: "tls", Domain: "a.example.com", PassthroughTLS: true}},

		{name: "basic auth", proto: "https", opts: `{"Domain":"a.example.com","BasicAuth":{"credentials":[]}}`, bad: []string{"Opts.BasicAuth"}},
		{name: "compression and PROXY protocol", proto: "https", opts: `{"Domain":"a.example.com","Compression":{},"ProxyProto":2}`, bad: []string{"Opts.Compression", "Opts.ProxyProto"}},
		{name: "a subdomain", proto: "https", opts: `{"Subdomain":"a"}`, bad: []string{"Opts.Subdomain"}},
		{name: "a URL of another scheme", proto: "https", opts: `{"URL":"http://a.example.com"}`, bad: []string{"Opts.URL"}},
		{name: "a URL of another port", proto: "https", opts: `{"URL":"https://a.example.com:8443"}`, bad: []string{"Opts.URL"}},
		{name: "URL and Domain disagree", proto: "https", opts: `{"URL":"https://a.example.com","Domain":"b.example.com"}`, bad: []string{"Opts.URL"}},
		{name: "the agent's certificate", proto: "tls", opts: `{"Domain":"a.example.com","TLSTermination":{"cert":"Y2VydA==","key":"a2V5"}}`, bad: []string{"Opts.TLSTermination"}},
		{name: "a tcp URL of another scheme", proto: "tcp", opts: `{"URL":"https://a.example.com"}`, bad: []string{"Opts.URL"}},
		{name: "a typed option of another type", proto: "https", opts: `{"Domain":5}`, bad: []string{"Opts.Domain"}},
		{name: "not an object", proto: "https", opts: `[1]`, bad: []string{"Opts"}},
		{name: "pooled, with an IP policy and two bindings", proto: "https", opts: `{"Domain":"a.example.com"}`,
			extra: bindExtra{PoolingEnabled: true, IPPolicyRef: "ipp_1", Bindings: []string{"public", "internal"}},
			bad:   []string{"Extra.IPPolicyRef", "Extra.Bindings"}},
		{name: "an unknown binding", proto: "https", opts: `{"Domain":"a.example.com"}`, extra: bindExtra{Bindings: []string{"kubernetes"}}, bad: []string{"Extra.Bindings[0]"}},
		{name: "public, said so", proto: "https", opts: `{"Domain":"a.example.com"}`, extra: bindExtra{Bindings: []string{"public"}},
			want: agents.EndpointParams{Proto: "https", Domain: "a.example.com", Binding: "public"}},
		{name: "internal", proto: "https", opts: `{"URL":"https://API.internal"}`, extra: bindExtra{Bindings: []string{"internal"}},
			want: agents.EndpointParams{Proto: "https", Domain: "api.internal", Binding: "internal"}},
		{name: "internal with a port", proto: "http", opts: `{"URL":"http://api.internal:8080"}`, extra: bindExtra{Bindings: []string{"internal"}},
			want: agents.EndpointParams{Proto: "http", Domain: "api.internal", Binding: "internal", Port: 8080}},
		{name: "internal by Domain", proto: "https", opts: `{"Domain":"api.internal"}`, extra: bindExtra{Bindings: []string{"internal"}},
			want: agents.EndpointParams{Proto: "https", Domain: "api.internal", Binding: "internal"}},
		{name: "internal without .internal", proto: "https", opts: `{"URL":"https://api.example.com"}`, extra: bindExtra{Bindings: []string{"internal"}}, bad: []string{"Opts.URL"}},
		{name: "internal without a URL", proto: "https", opts: `{}`, extra: bindExtra{Bindings: []string{"internal"}}, bad: []string{"Opts.URL"}},
		{name: "internal with a bad port", proto: "https", opts: `{"URL":"https://api.internal:0"}`, extra: bindExtra{Bindings: []string{"internal"}}, bad: []string{"Opts.URL"}},
		{name: "public with an internal URL", proto: "https", opts: `{"URL":"https://api.internal"}`, bad: []string{"Opts.URL"}},
		{name: "public with an internal Domain", proto: "http", opts: `{"Domain":"api.internal."}`, extra: bindExtra{Bindings: []string{"public"}}, bad: []string{"Opts.Domain"}},
		{name: "public without a domain", proto: "https", opts: `{}`, want: agents.EndpointParams{Proto: "https", Binding: "public", DomainBase: "agents.example.test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := bindMsg{ID: "ep_1", Proto: tc.proto, ForwardsTo: "app://laptop", Opts: json.RawMessage(tc.opts), Extra: tc.extra}
			o, err := decodeOpts(req.Opts)
			var p agents.EndpointParams
			if err == nil {
				p, err = s.endpointParams(req, o)
			}
			var got []string
			for _, v := range apierr.ViolationsOf(err) {
				got = append(got, v.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.bad, ",") {
				t.Fatalf("violations %q (%v), want %q", got, err, tc.bad)
			}
			if tc.bad != nil {
				return
			}
			if tc.want.Binding != "" && (p.Binding != tc.want.Binding || p.Port != tc.want.Port) {
				t.Errorf("binding %q port %d, want %q %d", p.Binding, p.Port, tc.want.Binding, tc.want.Port)
			}
			if tc.want.DomainBase != "" && p.DomainBase != tc.want.DomainBase {
				t.Errorf("domain base %q, want %q", p.DomainBase, tc.want.DomainBase)
			}
			if p.Proto != tc.want.Proto || p.Domain != tc.want.Domain || p.Addr != tc.want.Addr || p.PassthroughTLS != tc.want.PassthroughTLS ||
				p.TrafficPolicy != tc.want.TrafficPolicy || p.ID != "ep_1" || p.ForwardsTo != "app://laptop" || p.TCPLow != 20000 || p.TCPHost != "tcp.example.test" {
				t.Errorf("params %+v", p)
			}
		})
	}
}

func TestEchoOpts(t *testing.T) {
	tcp := &agents.Endpoint{Proto: "tcp", Hostport: "tcp.example.test:20007"}
	for _, tc := range []struct {
		name, opts, asked string
		ep                *agents.Endpoint
		want              string
	}{
		{"as asked", `{"Domain":"a.example.com","Compression":null}`, "", &agents.Endpoint{Proto: "https"}, `{"Domain":"a.example.com","Compression":null}`},
		{"a named address", `{"Addr":"tcp.example.test:20007"}`, "tcp.example.test:20007", tcp, `{"Addr":"tcp.example.test:20007"}`},
		{"a picked address", `{"URL":"","Addr":"","ProxyProto":0}`, "", tcp, `{"Addr":"tcp.example.test:20007","ProxyProto":0,"URL":""}`},
		{"no options", ``, "", tcp, `{"Addr":"tcp.example.test:20007"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(echoOpts(json.RawMessage(tc.opts), tc.ep, tc.asked)); got != tc.want {
				t.Errorf("echoOpts = %s, want %s", got, tc.want)
			}
		})
	}
}

// FuzzDecodeOpts: any options an agent sends are judged without panic;
// what is refused is an invalid argument with violations under Opts, and
// what is taken sets only options the Server reads.
func FuzzDecodeOpts(f *testing.F) {
	for _, s := range []string{`{"Domain":"a.example.com","BasicAuth":null}`, `{"Compression":{}}`, `null`, `[`, `{"TLSTermination":{"cert":"eA=="}}`, `{"ProxyProto":0.0}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		o, err := decodeOpts(json.RawMessage(raw))
		if err != nil {
			vs := apierr.ViolationsOf(err)
			if apierr.CodeOf(err) != apierr.InvalidArgument || len(vs) == 0 {
				t.Fatalf("refusal %v", err)
			}
			for _, v := range vs {
				if !strings.HasPrefix(v.Field, "Opts") {
					t.Fatalf("violation of %q", v.Field)
				}
			}
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(raw), &m) == nil {
			for k, v := range m {
				if !isUnset(v) && !slices.Contains(optsRead, k) && !slices.Contains(optsAgentSide, k) {
					t.Fatalf("took the set option %s: %s", k, v)
				}
			}
		}
		_ = o
	})
}

// TestTunnelSlots: the slots of MaxTunnelsPerSession (here 2) are the
// tunnels held and the binds in progress; a rebind of a tunnel held
// takes one even when none is free, and keeps it for the tunnel should
// an Unbind free the tunnel's meanwhile, so that the session never holds
// more than the limit whatever the order.
func TestTunnelSlots(t *testing.T) {
	type step struct {
		op   string // reserve <id>, release, fill <id>, unbind <id>
		id   string
		want bool // reserve: reserved
	}
	for _, tc := range []struct {
		name  string
		steps []step
		held  int
	}{
		{"two reserved, the third refused", []step{{"reserve", "", true}, {"reserve", "", true}, {"reserve", "", false}}, 0},
		{"a release frees a slot", []step{{"reserve", "", true}, {"reserve", "", true}, {"release", "", false}, {"reserve", "", true}, {"reserve", "", false}}, 0},
		{"filled slots stay taken", []step{{"reserve", "", true}, {"fill", "a", false}, {"reserve", "", true}, {"fill", "b", false}, {"reserve", "", false}}, 2},
		{"a rebind of a held tunnel when full", []step{{"reserve", "", true}, {"fill", "a", false}, {"reserve", "", true}, {"fill", "b", false},
			{"reserve", "a", true}, {"fill", "a", false}, {"reserve", "", false}}, 2},
		{"a rebind keeps the slot an unbind frees", []step{{"reserve", "", true}, {"fill", "a", false}, {"reserve", "", true}, {"fill", "b", false},
			{"reserve", "a", true}, {"unbind", "a", false}, {"reserve", "", false}, {"fill", "a", false}, {"reserve", "", false}}, 2},
		{"a rebind of an ID not held needs a free slot", []step{{"reserve", "", true}, {"fill", "a", false}, {"reserve", "", true}, {"fill", "b", false},
			{"reserve", "c", false}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess := &session{srv: &Server{opts: Options{MaxTunnelsPerSession: 2}}, tunnels: map[string]struct{}{}}
			for i, st := range tc.steps {
				switch st.op {
				case "reserve":
					_, held := sess.tunnels[st.id]
					again, ok := sess.reserve(st.id)
					if ok != st.want || again != (held && st.id != "") {
						t.Fatalf("step %d, reserve(%q): again %v, reserved %v; want %v, %v", i, st.id, again, ok, held, st.want)
					}
				case "release":
					sess.release()
				case "fill":
					sess.fill(st.id)
				case "unbind":
					delete(sess.tunnels, st.id)
				}
				if n := len(sess.tunnels); n > 2 {
					t.Fatalf("step %d: %d tunnels held; at most 2", i, n)
				}
			}
			if len(sess.tunnels) != tc.held {
				t.Errorf("%d tunnels held; want %d", len(sess.tunnels), tc.held)
			}
		})
	}
}
