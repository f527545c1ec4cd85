// Package ratelimit is an in-process, keyed, sliding-window rate limiter
// that never admits more than its capacity in any window, keeps constant
// memory per key whatever the window, and neither allocates nor reads the
// system clock per request. It serves the `rate-limit` traffic policy action
// (SPEC 2.8: one [Limiter] per action instance, keyed by the request's
// bucket key) and the management API's own per-account limit.
//
// A [Limiter] answers one question per request: may a request of bucket
// key k at time t proceed? [Limiter.AllowAt] (or [Limiter.AllowBytesAt])
// returns a [Decision]; a rejected request should get HTTP 429 with
// retry-after set to [Decision.RetryAfterSeconds]. A Decision also carries
// feedback for rate-limit response headers: the capacity (Limit), how many
// more requests at the same time the bucket would admit (Remaining, never
// more than an exact sliding window would leave) and how long until that
// number grows (Reset, [Decision.ResetSeconds]).
//
// # Semantics
//
// Capacity C and rate (window) W are per bucket and per process (per
// ingress server, SPEC 2.8).
//
//   - Only admitted requests consume capacity. A rejected request leaves no
//     trace, so a client that honours retry-after gets through.
//   - Never over-admit: for every admitted request at time t, the bucket's
//     admitted requests in (t-W, t] number at most C, times taken as
//     effective times (see "A clock that goes backwards" below; they are
//     the request times when the clock does not go back). This holds for
//     every sequence of times, by construction: a request is admitted only
//     if the admissions counted in every slot that overlaps (t-W, t], the
//     oldest partly overlapping one included in full, are fewer than C, or
//     if the bucket's latest admission is at or before t-W, when none is
//     in (t-W, t].
//   - Exact when empty: each bucket keeps the exact time (to the
//     nanosecond) of its latest admission, so a request a window or more
//     after it finds the bucket empty and is admitted, and the counters
//     restart from it.
//   - Bounded harshness: time is cut into slots of width g = W/10 aligned
//     on the Unix epoch (N = 10 slots per window; 6s for a 60s rate, 144m for
//     24h; in general g = W/k for the largest k <= 10 dividing W in
//     nanoseconds, and k = 10 for every valid [Config] rate). The limiter
//     may reject early, but a rejection at effective time t implies at
//     least C admissions in (t-W-g, t], with two exceptions, both for a key
//     the limiter does not track: one stamped behind a bucket its shard
//     forgot (below), and one whose shard is full of buckets at capacity
//     (see Memory). Since W/10 <= max(10s, W/10), this is at least as
//     tight as a slot width of max(10s, W/N) would give.
//   - Retry-after: with no other traffic on the bucket, a retry at
//     t + RetryAfter (or at t + RetryAfterSeconds seconds) is admitted, and
//     one earlier than t + RetryAfter is not. RetryAfter is the earlier of
//     the moment the oldest counted slots leave the window and the moment
//     the latest admission does. So it is never more than the window (for
//     a request stamped behind the bucket's newest time, never more than
//     the window plus the difference, and for a request rejected because
//     its shard forgot a bucket, see below) and never more than the exact
//     sliding-window value + g; RetryAfterSeconds adds less than 1s of
//     rounding (at least 1), so it is at most W in seconds for a rate of
//     whole seconds, and at most the exact value + g + 1s. After C
//     admissions at one instant t, a request rejected at t' gets exactly
//     the sliding-window value t + W - t': with 5 per 60s, a 6th request
//     at the same instant gets 60s.
//   - A clock that goes backwards never reopens a bucket. A request counts
//     at its effective time: its own time, or, if that is behind the
//     newest time of the earlier requests of its bucket, that newest time
//     (to within a slot: it is decided as if it came at the start of the
//     bucket's newest slot). So a bucket's time never moves back, and the
//     bound on admissions holds in effective times whatever the clock
//     does: steps back, jumps forward and back, callers out of order. It
//     cannot hold for the stamped times themselves once they go back:
//     with C = 2, two admissions at 0 and one at 61s (its window is
//     empty), a request stamped 1s counts at 61s, whose window holds one
//     admission, and is admitted; stamped 0, 0 and 1s are three within
//     60s. Bounding every window of stamped times would take remembering
//     admissions arbitrarily far back. Nor can it hold for the real time
//     at which requests arrive, which the limiter never sees: a clock that
//     jumps forward looks like time passing.
//   - Forgotten buckets fail closed. A shard drops a bucket when it
//     reclaims it or evicts it while idle (see Memory), keeping only the
//     moment its latest admission leaves the window. Until that moment a
//     key the shard does not track may be the dropped bucket's, with
//     admissions in its window and a newer time than its request, so such
//     a request is rejected, with a retry-after up to that moment (at most
//     how far the request is behind the newest time its shard has seen;
//     a bucket dropped meanwhile can extend it). This concerns only
//     requests stamped behind the time of their shard's calls when it
//     dropped the bucket (by more than a window and a slot for a reclaimed
//     one), so only a clock that goes back, or callers far out of order.
//     A rejected request of a key the limiter does not track leaves no
//     trace, its time included.
//
// An exact limiter with constant memory is impossible for arbitrary
// arrival times (deciding exactly when each of up to 2e9 admissions leaves
// the window needs their times), so the design trades a bounded slot of
// harshness for 44 bytes of counters per key, plus the latest admission's
// time, which makes it exact whenever all of a bucket's admissions leave
// the window.
//
// # Time
//
// The limiter never reads the system clock: callers pass the time. Callers
// without a timestamp at hand use a [Clock], a coarse clock refreshed by
// one goroutine (every millisecond by default) and read with one atomic
// load, instead of paying for [time.Now] per request. Times before 1970
// count as 1970 and times after early 2116 as early 2116.
//
// # Keys
//
// Keys are bytes or strings built by the caller; the limiter keeps only a
// 64-bit keyed hash of each ([hash/maphash] with a random per-limiter
// seed), never the key itself. Two distinct keys whose hashes collide share
// one bucket, which can only make the limiter harsher for them, never more
// permissive: the chance that any two of n live keys collide is about
// n²/2⁶⁵ (3e-8 for a million keys), and the seed is unknown to clients.
//
// A bucket key of several elements (SPEC 2.8 bucket_key) is built by
// appending each element's value with [AppendKeyPart], which writes the
// value's length as a uvarint and then its bytes. The encoding is
// prefix-free, so two different tuples never build the same key: ("a",
// "bc") and ("ab", "c") differ, and so do ("") and (). With a reused buffer
// the key costs no allocation:
//
//	buf = buf[:0]
//	for _, el := range elements {
//		buf = ratelimit.AppendKeyPart(buf, valueOf(req, el))
//	}
//	d := limiter.AllowBytesAt(buf, now)
//
// The element conn.client_ip_prefix ([KeyClientIPPrefix], an extension
// of SPEC 2.8) keys a client by its network rather than its address:
// [AppendPrefixKeyPart] appends the address masked to a prefix length per
// family (by default [DefaultIPv4PrefixBits] and [DefaultIPv6PrefixBits],
// an IPv6 /64), so a client rotating addresses inside its own /64 keeps
// one bucket.
//
// # Memory and the key cap
//
// Each tracked key is one 64-byte entry (hash; newest slot and latest
// admission time, packed in 12 bytes; a ring of 11 uint32 counters: a
// window's 10 slots plus the oldest partly overlapping one) stored inline
// in pages of a sharded table, plus about
// 4 to 10 bytes of index: about 71 bytes of live heap per key, the same for
// a 60s and a 24h rate, with no pointers for the garbage collector to scan.
//
// [Options.MaxKeys] caps the tracked keys (default [DefaultMaxKeys]).
// Fully expired entries, whose newest slot is two windows and two slots
// behind the slot of their shard's latest call, are reclaimed
// incrementally: every 16th call to a shard and every insertion examine
// one or two entries at a cursor, so no call ever walks the table. (The
// latest call's slot, not the newest the shard has seen: after a clock
// that jumped forward comes back, buckets in use are not reclaimed against
// the time it jumped to.) When a shard is full, a new key evicts one of 8
// entries at an eviction cursor: an idle one (nothing in the window ending
// at the request's time) if any, else the one with the fewest admissions
// in the window, but never one at or over its capacity, so flooding
// distinct keys cannot reset a limited client. An evicted bucket that
// still held admissions in the window forgets them; that is the one way,
// under key pressure only, that a bucket can later admit more than C in a
// window. A reclaimed or idle evicted bucket is forgotten without that
// risk (see "Forgotten buckets fail closed" under Semantics). If all 8 are at capacity, the new key is rejected (fail
// closed) with a retry-after at which one of them drops below capacity.
//
// A program that keeps limiters for configurations that may fall out of
// use can drop one once [Limiter.Idle] reports that it holds nothing that
// counts any more (its newest time is a window old).
//
// # Concurrency
//
// A [Limiter] is safe for concurrent use. Keys are spread over up to 64
// shards by hash, each with its own mutex held for a few dozen nanoseconds
// of integer arithmetic per request.
//
// # Configuration
//
// [Config] is the action config of SPEC 2.8 with JSON tags;
// [Config.Validate] reports every violation as an
// [github.com/edgeplane/edgeplane/apierr.Error] of code InvalidArgument
// naming the field ("name", "algorithm", "capacity", "rate", "bucket_key",
// "bucket_key[3]"). [Config.Options] and [Config.KeyElements] turn a valid
// config into [New]'s options and the parsed bucket key elements.
package ratelimit
