// Package follow is the one follower of a store's change feed: it reads
// the revision, pages through the changes after it, resyncs when the feed
// has been compacted past it, waits for commits, and backs off after
// failures, on behalf of a [Handler] that keeps something true to the
// store (event delivery, a cache, an edge proxy's configs).
//
// # Model
//
// A follower is at a revision: every change up to it has been handed to
// the handler. [Start] takes the revision to follow from, or a negative
// one to begin with [Handler.Resync], which reads the state afresh and
// returns the revision it reflects. The follower then reads a page of
// changes after its revision ([Options].Page, with or without their data:
// [Options].Payload), hands them to [Handler.Apply] as a [Batch], and
// moves to the batch's revision. When a batch reaches the end of the feed
// (it is [Batch].Current) the follower waits for the next commit
// ([store.Feed.Wait]), then lets commits gather for [Options].Gather
// before it reads them, so that a burst is read as one page.
//
// # Failures
//
// A failed Resync, read or Apply is reported to [Handler.Failed] as a
// [Failure], and retried after a backoff that doubles with each
// consecutive failure, from [Backoff].Min up to [Backoff].Max; a
// successful Apply ends the run of failures. An Apply that fails has
// taken its changes (the follower moves past them): the handler keeps the
// work it still owes, and the follower calls Apply again, with the
// changes read since (perhaps none), until it succeeds. A read that finds
// the feed compacted past the follower ([*store.CompactedError]) is no
// failure to back off from: it is reported (Backoff zero) and the
// follower resyncs at once.
//
// # Stopping
//
// [Follower.Stop] ends the follower at once, cancelling the context of a
// handler call in progress. [Follower.Drain] stops waiting for commits
// but applies every change up to a revision first (event delivery: what
// committed before Close is still reported), or stops at once when its
// context ends.
//
// # Time
//
// Backoffs and gathering wait on [Options].After, a timer a test replaces
// with one it fires by hand, so that no test sleeps for time to pass.
package follow
