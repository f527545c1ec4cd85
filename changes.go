package edgeplane

import (
	"context"
	"encoding/json"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
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
// know cannot have sources, so its changes are skipped. Every name passed
// here must be one of [events.Names] (a test checks the source tree).
func (s *Service) changed(_ context.Context, p Principal, name, verb string, obj any) {
	if s.queue == nil {
		return
	}
	typ := events.TypeOf(name, verb)
	if !s.eventTypes.Known(typ) {
		return
	}
	if err := s.enqueue(p.AccountID, typ, obj); err != nil {
		s.log.Error("event delivery: cannot encode a changed object; the change is not delivered", "type", typ, "err", err)
	}
}

// enqueue marshals obj and offers the change to the queue.
func (s *Service) enqueue(accountID, typ string, obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	s.queue.Enqueue(events.Change{AccountID: accountID, Type: typ, CreatedAt: s.timestamp(), Object: data})
	return nil
}

// Publish delivers an event of the host's own making, as if a resource of
// the account had changed: every subscription of the account with a source
// of typ receives obj (marshalled now, as JSON). typ must be in the
// registry ([Options.Events], [Service.EventTypes]); a host extends the
// registry with its own types to use this. Like the Service's own changes,
// Publish never blocks: the change is queued, or dropped and counted when
// the queue is full. Without a sink it does nothing and returns nil.
func (s *Service) Publish(ctx context.Context, accountID, typ string, obj any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !ids.Valid(accountID, AccountPrefix) {
		return apierr.Invalidf("account_id", "must be an account ID (%s followed by %d base62 characters)", AccountPrefix, ids.Len)
	}
	if err := s.eventTypes.Check(typ); err != nil {
		return err
	}
	if s.queue == nil {
		return nil
	}
	if err := s.enqueue(accountID, typ, obj); err != nil {
		return apierr.Invalidf("object", "cannot be encoded as JSON")
	}
	return nil
}
