package edgeplane

import "context"

// changed is called after every successful create, update or delete of a
// resource the account's callers manage, with the resource's event name
// (for example "credential", "ip_policy"), the verb ("created", "updated",
// "deleted") and the object as the API shows it (for deletes: its Ref).
// It feeds event delivery (event type "<name>_<verb>.v0") and must never
// block or fail the operation.
func (s *Service) changed(ctx context.Context, p Principal, name, verb string, obj any) {}
