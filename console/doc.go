// Package console is edgeplane's web console: pages in a browser that act
// for a signed-in API key through the root package's [edgeplane.Service],
// so that every rule, bound and error is the management API's.
//
// `edgeplane serve` mounts a [Handler] on the API's listener at [Prefix]
// (/console/); -console=false leaves it out.
//
// # Sessions
//
// Signing in with an API key starts a session: an opaque random ID in an
// HttpOnly, SameSite=Strict cookie (Secure when the request came over
// TLS) mapped, in the server's memory, to the key. The key is sealed
// (AES-256-GCM) under a key derived from the cookie's value, which the
// server keeps only hashed: the server's memory alone does not give the
// key back. A session lasts at most [Options.SessionLifetime] (12 hours)
// and the server holds at most [Options.MaxSessions]. Every request
// authenticates the key again ([edgeplane.Service.Authenticate], whose
// cache forgets a deleted key at once), so a revoked or deleted key, or a
// deactivated owner, ends its sessions at their next request. Sessions
// are not shared between servers: behind a load balancer, pin a browser
// to one, or sign in again.
//
// # Forms
//
// Every form carries the session's CSRF token in a hidden field, compared
// in constant time; a form whose Origin or Sec-Fetch-Site says it comes
// from another site is refused too (403, nothing changed). A form's body
// is bounded ([Options.MaxBodyBytes], 413 beyond); its fields are the
// API's parameters, with the API's bounds and validation messages, shown
// next to the field they concern.
//
// # Access
//
// The account's IP restrictions of type dashboard are checked on every
// request, with the client's address as the API computes it
// ([Options.TrustedProxies]): a refused address gets a page that says so
// and nothing else.
//
// # Live updates
//
// The overview's online agents and endpoints update without a reload: a
// small script follows server-sent events from /console/live, which reads
// the Service every [Options.PollInterval] (2 s) for the session as it
// then is and sends the part again when it changed.
package console
