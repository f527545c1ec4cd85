package events_test

import (
	"context"
	"fmt"

	"github.com/edgeplane/edgeplane/events"
)

// An unknown type is refused with the closest known one.
func ExampleRegistry_Check() {
	reg, err := events.NewRegistry("ip_policy_created.v0", "ip_policy_updated.v0", "credential_created.v0")
	if err != nil {
		panic(err)
	}
	fmt.Println(reg.Check("ip_policy_created.v0"))
	fmt.Println(reg.Check("ip_polcy_created.v0"))
	fmt.Println(reg.Check("ip_policy_created"))
	// Output:
	// <nil>
	// invalid request: type: unknown event type "ip_polcy_created.v0"; did you mean "ip_policy_created.v0"?
	// invalid request: type: must have the shape <event_name>.v<N>, such as ip_policy_created.v0 (the version suffix .v<N> is missing)
}

// A host extends the Service's default registry with types of its own
// (the Service's are edgeplane.DefaultEventTypes()).
func ExampleNewRegistry() {
	serviceTypes := []string{"credential_created.v0", "credential_updated.v0", "credential_deleted.v0"}
	reg, err := events.NewRegistry(append(serviceTypes, "agent_connected.v0")...)
	if err != nil {
		panic(err)
	}
	fmt.Println(reg.Known("agent_connected.v0"), reg.Known("credential_created.v0"))
	// Output:
	// true true
}

// The queue hands each change's events to the sink on its own goroutine;
// Close drains it.
func ExampleQueue() {
	sink := events.SinkFunc(func(_ context.Context, ev events.Event) error {
		fmt.Println("deliver", ev.ID, ev.Type, string(ev.Object))
		return nil
	})
	expand := func(_ context.Context, c events.Change) ([]events.Event, error) {
		// The Service looks up the subscriptions here.
		return []events.Event{{ID: "ev_1", Type: c.Type, SubscriptionID: "esb_1", Object: c.Object}}, nil
	}
	q := events.NewQueue(events.Options{Sink: sink}, expand, nil)
	q.Enqueue(events.Change{AccountID: "acct_1", Type: "ip_policy_created.v0", Object: []byte(`{"id":"ipp_1"}`)})
	if err := q.Close(context.Background()); err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", q.Stats())
	// Output:
	// deliver ev_1 ip_policy_created.v0 {"id":"ipp_1"}
	// {Pending:0 Accepted:1 Dropped:0 LookupErrors:0 Delivered:1 Failed:0}
}
