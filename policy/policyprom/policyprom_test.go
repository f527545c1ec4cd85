package policyprom_test

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/policy/policyprom"
)

func request() *policy.Request {
	return &policy.Request{Method: "GET", Host: "example.com", Path: "/admin", Header: http.Header{},
		Conn: policy.Conn{ClientAddr: netip.MustParseAddrPort("198.51.100.1:1")}, Time: time.Unix(1e9, 0)}
}

func newEngine(t testing.TB, c *policyprom.Collector) *policy.Engine {
	t.Helper()
	e, err := policy.NewEngine(policy.Options{Observer: c, Sink: policy.NewSlogSink(nil)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestCollector(t *testing.T) {
	c := policyprom.New(policyprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	e := newEngine(t, c)
	p, err := e.CompileJSON([]byte(`{"on_http_request":[
	  {"name":"tag","actions":[{"type":"add-headers","config":{"headers":{"x-a":"1"}}},{"type":"log"}]},
	  {"expressions":["req.url.path.startsWith('/admin')"],"actions":[{"type":"deny"}]}],
	  "on_http_response":[{"name":"never","expressions":["false"],"actions":[{"type":"log"}]}]}`), policy.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		in := p.Inbound(request())
		p.Outbound(request(), &policy.Response{StatusCode: 200}, &in)
	}
	want := `
# HELP edgeplane_policy_actions_total Traffic policy actions executed, by phase and action type (bounded; the rest as other).
# TYPE edgeplane_policy_actions_total counter
edgeplane_policy_actions_total{action="add-headers",phase="inbound"} 3
edgeplane_policy_actions_total{action="deny",phase="inbound"} 3
edgeplane_policy_actions_total{action="log",phase="inbound"} 3
# HELP edgeplane_policy_evaluations_total Traffic policy evaluations by target, phase and verdict.
# TYPE edgeplane_policy_evaluations_total counter
edgeplane_policy_evaluations_total{phase="inbound",target="http",verdict="respond"} 3
edgeplane_policy_evaluations_total{phase="outbound",target="http",verdict="continue"} 3
# HELP edgeplane_policy_rules_matched_total Traffic policy rules that applied, by phase and rule name (bounded; the rest as other).
# TYPE edgeplane_policy_rules_matched_total counter
edgeplane_policy_rules_matched_total{phase="inbound",rule="on_http_request[1]"} 3
edgeplane_policy_rules_matched_total{phase="inbound",rule="tag"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"edgeplane_policy_actions_total", "edgeplane_policy_evaluations_total", "edgeplane_policy_rules_matched_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "edgeplane_policy_evaluation_duration_seconds"); n != 2 {
		t.Fatalf("%d duration series, want 2", n)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) != 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// TestCollectorBoundsLabels checks that rule names beyond the bound count
// as other, and long names are cut.
func TestCollectorBoundsLabels(t *testing.T) {
	c := policyprom.New(policyprom.Options{MaxRuleLabels: 2})
	e := newEngine(t, c)
	var rules []string
	for i := range 5 {
		rules = append(rules, `{"name":"r`+strconv.Itoa(i)+strings.Repeat("x", 100)+`","actions":[{"type":"log"}]}`)
	}
	p, err := e.CompileJSON([]byte(`{"inbound":[`+strings.Join(rules, ",")+`]}`), policy.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Inbound(request())
	p.Inbound(request())
	if n := testutil.CollectAndCount(c, "edgeplane_policy_rules_matched_total"); n != 3 {
		t.Fatalf("%d rule series, want 3 (2 and other)", n)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "edgeplane_policy_rules_matched_total" {
			continue
		}
		var other float64
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "rule" {
					continue
				}
				if len(l.GetValue()) > policyprom.MaxLabelBytes {
					t.Fatalf("label of %d bytes", len(l.GetValue()))
				}
				if l.GetValue() == policyprom.OtherLabel {
					other = m.GetCounter().GetValue()
				}
			}
		}
		if other != 6 {
			t.Fatalf("other = %v, want 6 (3 rules, 2 evaluations)", other)
		}
	}
}

// BenchmarkEvaluateObserved is a five-rule policy evaluated with the
// collector as Observer.
func BenchmarkEvaluateObserved(b *testing.B) {
	c := policyprom.New(policyprom.Options{})
	e := newEngine(b, c)
	p, err := e.CompileJSON([]byte(`{"inbound":[
	  {"name":"a","expressions":["req.method == 'DELETE'"],"actions":[{"type":"deny"}]},
	  {"name":"b","expressions":["req.url.path.startsWith('/x')"],"actions":[{"type":"deny"}]},
	  {"name":"c","expressions":["req.host == 'example.com'"],"actions":[{"type":"deny","config":{"enforce":false}}]}]}`), policy.CompileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	req := request()
	req.Path = "/"
	b.ReportAllocs()
	for b.Loop() {
		p.Inbound(req)
	}
}
