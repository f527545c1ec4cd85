// Package recordcache is the record cache of a Service: the decoded
// documents of records it has read, by kind, account and ID, so that a read
// served from it costs neither a store round trip nor a JSON decode.
//
// # Keeping it true
//
// It is kept true by two paths:
//
//   - every write through the Service goes through [Invalidating], which
//     invalidates the record written, and for a delete the cached records
//     below it (its children, which the store deletes with it), before the
//     write returns: a caller always reads its own writes;
//   - a follower of the store's change feed calls [Cache.ApplyChange] for
//     each record another process (another replica, edgeplane admin)
//     wrote, as soon as the feed shows it.
//
// A read that misses takes a [Ticket] ([Cache.Note]) before it reads the
// store and caches what it read ([Cache.Put]) only if no invalidation came
// since, so a value read before a write can never be cached after the
// write's invalidation. While the follower is not current (starting, or
// the feed unreadable) the cache is bypassed and emptied ([Cache.Flush]):
// reads go to the store. Its size is bounded in bytes.
package recordcache
