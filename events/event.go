package events

import (
	"context"
	"encoding/json"
	"time"
)

// Event is one delivery: a change of a resource of an account, for one
// subscription of that account with a source of the event's type.
type Event struct {
	// ID is the event's identifier, EventPrefix followed by an opaque
	// string; unique per delivery, so a sink can deduplicate.
	ID string `json:"id"`
	// Type is the event type, such as "ip_policy_created.v0".
	Type string `json:"type"`
	// CreatedAt is when the change happened.
	CreatedAt time.Time `json:"created_at"`
	// AccountID is the account whose resource changed.
	AccountID string `json:"account_id"`
	// SubscriptionID is the subscription the event is delivered for.
	SubscriptionID string `json:"subscription_id"`
	// Object is the resource as the API shows it after the change (for a
	// delete, its Ref), as JSON. Each event has its own copy.
	Object json.RawMessage `json:"object"`
}

// Sink receives events; the host provides it (a webhook sender, a message
// queue producer, a test recorder). Deliver is called from one goroutine at
// a time, in the order the changes happened, with a context that ends at
// the delivery timeout or when delivery is shut down. An error counts the
// event as failed; it is logged and never retried. A sink that must not
// lose events should persist them and retry on its own.
type Sink interface {
	Deliver(ctx context.Context, ev Event) error
}

// SinkFunc adapts a function to a [Sink].
type SinkFunc func(ctx context.Context, ev Event) error

// Deliver calls f(ctx, ev).
func (f SinkFunc) Deliver(ctx context.Context, ev Event) error { return f(ctx, ev) }
