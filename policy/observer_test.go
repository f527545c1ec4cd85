package policy

import (
	"reflect"
	"sync"
	"testing"
	"time"
)

type recObserver struct {
	mu     sync.Mutex
	events []any
}

func (o *recObserver) add(e any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
}

func (o *recObserver) RuleMatched(r RuleEvent) { o.add(r) }
func (o *recObserver) ActionRan(a ActionEvent) { o.add(a) }
func (o *recObserver) Evaluated(e EvaluationEvent) {
	if e.Duration < 0 {
		panic("negative duration")
	}
	e.Duration = 0
	o.add(e)
}

// TestObserver checks the events of the metrics hooks (issue 19, item 9),
// in order, for the inbound and outbound phases and a connection policy.
func TestObserver(t *testing.T) {
	obs := &recObserver{}
	e, _ := newTestEngine(t, Options{Observer: obs})
	p := mustCompile(t, e, `{"on_http_request":[
	  {"name":"skip","expressions":["false"],"actions":[{"type":"deny"}]},
	  {"name":"tag","actions":[{"type":"add-headers","config":{"headers":{"x-a":"1"}}},{"type":"log"}]},
	  {"expressions":["true"],"actions":[{"type":"deny","config":{"status_code":404}}]}],
	  "on_http_response":[{"actions":[{"type":"log"}]}]}`, CompileOptions{})
	in := p.Inbound(testRequest())
	p.Outbound(testRequest(), testResponse(), &in)
	c := mustCompile(t, e, `{"on_tcp_connect":[{"actions":[{"type":"restrict-ips","config":{"allow":["10.0.0.0/8"]}}]}]}`, CompileOptions{Target: TargetConnection})
	c.Connect(&testRequest().Conn, time.Time{})
	want := []any{
		RuleEvent{Phase: Inbound, Rule: "tag", Location: "on_http_request[1]"},
		ActionEvent{Phase: Inbound, Type: "add-headers", Rule: "tag", Location: "on_http_request[1].actions[0]"},
		ActionEvent{Phase: Inbound, Type: "log", Rule: "tag", Location: "on_http_request[1].actions[1]"},
		RuleEvent{Phase: Inbound, Location: "on_http_request[2]"},
		ActionEvent{Phase: Inbound, Type: "deny", Location: "on_http_request[2].actions[0]"},
		EvaluationEvent{Target: TargetHTTP, Phase: Inbound, Verdict: Respond},
		RuleEvent{Phase: Outbound, Location: "on_http_response[0]"},
		ActionEvent{Phase: Outbound, Type: "log", Location: "on_http_response[0].actions[0]"},
		EvaluationEvent{Target: TargetHTTP, Phase: Outbound, Verdict: Continue},
		RuleEvent{Phase: Inbound, Location: "on_tcp_connect[0]"},
		ActionEvent{Phase: Inbound, Type: "restrict-ips", Location: "on_tcp_connect[0].actions[0]"},
		EvaluationEvent{Target: TargetConnection, Phase: Inbound, Verdict: Close},
	}
	if !reflect.DeepEqual(obs.events, want) {
		t.Fatalf("events\n%+v\nwant\n%+v", obs.events, want)
	}
}
