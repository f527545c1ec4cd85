package edgeplane

import (
	"context"
	"encoding/json"

	"github.com/edgeplane/edgeplane/events"
)

// changed is called after every successful create, update or delete of a
// resource the account's callers manage, with the resource's event name
// (for example "credential", "ip_policy"), the verb ("created", "updated",
// "deleted") and the object as the API shows it (for deletes: its Ref).
// It feeds event delivery (event type "<name>_<verb>.v0") and must never
// block or fail the operation.
//
// Without a sink it does nothing. Otherwise, for a type the registry
// knows, it marshals obj at once (so that later changes the caller makes
// to obj, such as setting a credential's token, are never seen) and offers
// the change to the bounded queue without blocking; the queue's worker
// finds the subscriptions and calls the sink. A type the registry does not
// know cannot have sources, so its changes are skipped.
func (s *Service) changed(_ context.Context, p Principal, name, verb string, obj any) {
	if s.queue == nil {
		return
	}
	typ := events.TypeOf(name, verb)
	if !s.eventTypes.Known(typ) {
		return
	}
	data, err := json.Marshal(obj)
	if err != nil {
		s.log.Error("event delivery: cannot encode a changed object; the change is not delivered", "type", typ, "err", err)
		return
	}
	s.queue.Enqueue(events.Change{AccountID: p.AccountID, Type: typ, CreatedAt: s.timestamp(), Object: data})
}
