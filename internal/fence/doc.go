// Package fence makes the reads of an edgeplane Service that its caches
// answer see every acknowledged write, on every replica. A read the
// record cache or the authentication cache would answer first makes sure
// the caches have applied every change committed before the read began
// ([Fence.Wait]): it reads the store's revision, then waits until the
// caches' follower of the change feed has applied it (Kubernetes'
// consistent reads from cache do the same). The revision reads are
// coalesced: one round trip to the store serves every read that arrived
// before it was sent, so concurrent reads cost one query per round trip,
// not one each. A transport fences once per request ([Fence.Context])
// and the reads under the context it gets need no fence of their own. A
// read the caches cannot answer goes to the store, which is current
// already.
//
// A store that no other process can write ([store.Exclusive], memstore)
// needs no fence: the Service's own writes invalidate its caches before
// they return, and it builds no Fence (a nil *Fence passes at once).
//
// It imports the store contract and internal/revwait (the follower's
// revision mark); never the root package.
package fence
