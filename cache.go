package edgeplane

import (
	"runtime"

	"github.com/edgeplane/edgeplane/internal/cachesync"
	"github.com/edgeplane/edgeplane/internal/recordcache"
	"github.com/edgeplane/edgeplane/store"
)

// The record cache (package recordcache), the authentication cache and
// the access cache are kept true to writes by other processes sharing
// the store by a goroutine that follows the store's change feed: package
// internal/cachesync, told what each kind means to the caches (cacheKind).

// DefaultCacheBytes is the default of [Options.CacheBytes].
const DefaultCacheBytes = recordcache.DefaultBytes

// startCache starts the goroutine that keeps the record cache and the
// authentication cache true to writes made by other processes. It stops
// with [Service.Close], or when the Service is garbage collected without
// one (a test or a short-lived host that never closes it leaks nothing).
func (s *Service) startCache() {
	if s.cache == nil && s.auth == nil {
		return
	}
	f := cachesync.Start(cachesync.Config{Store: s.store, Cache: s.cache, Auth: s.auth, Access: s.access, Log: s.log, KindOf: cacheKind})
	s.cacheFollow = f
	runtime.AddCleanup(s, func(f *cachesync.Follower) { go f.Stop() }, f)
}

// cacheKind is what a change of kind k means to the caches.
func cacheKind(k store.Kind) (known, internal bool, auth cachesync.AuthEffect) {
	d, known := declOf(k)
	if !known {
		return false, isInternal(k), cachesync.AuthUnaffected
	}
	return true, false, d.traitsOf().auth
}

// stopCache stops the cache's follower and waits for it; the cache is
// bypassed from then on.
func (s *Service) stopCache() {
	if f := s.cacheFollow; f != nil {
		f.Stop()
	}
}
