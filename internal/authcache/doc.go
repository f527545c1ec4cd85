// Package authcache remembers the Service's recent successful API key
// authentications, by the SHA-256 of the presented secret, so that a
// request whose key authenticated a moment ago reads nothing from the
// store. The Service drops a key's entries when it is revoked or changed
// ([Cache.Forget]) and all of them when a user, bot or account changes
// ([Cache.Clear]), through this Service or, read from the change feed,
// through another process sharing the store; an entry lives at most its
// time to live either way.
package authcache
