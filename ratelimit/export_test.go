package ratelimit

import (
	"hash/maphash"
	"time"
)

// Test seams for the oracle in package ratelimit_test.

// HashString returns the hash l keeps for key.
func HashString(l *Limiter, key string) uint64 { return maphash.String(l.seed, key) }

// SetOnEvict makes l call f with the hash of every bucket it evicts and
// whether that bucket still held admissions in the window.
func SetOnEvict(l *Limiter, f func(h uint64, busy bool)) { l.onEvict = f }

// Tracks reports whether l tracks key.
func Tracks(l *Limiter, key string) bool {
	h := HashString(l, key)
	sh := l.tab.shardOf(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	i, _ := sh.find(&l.tab, h)
	return i >= 0
}

// ShardFull reports whether key's shard holds as many keys as it may.
func ShardFull(l *Limiter, key string) bool {
	sh := l.tab.shardOf(HashString(l, key))
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.n >= sh.limit
}

// ForgotUntil returns the time before which key's shard rejects a key it
// does not track, because a bucket it forgot may be that key's.
func ForgotUntil(l *Limiter, key string) time.Time {
	sh := l.tab.shardOf(HashString(l, key))
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return time.Unix(0, sh.forgot).UTC()
}
