// Package console is edgeplane's web console: pages in a browser that act
// for a signed-in API key through the root package's [edgeplane.Service],
// so that every rule, bound and error is the management API's.
//
// `edgeplane serve` mounts a [Handler] on the API's listener at [Prefix]
// (/console/); -console=false leaves it out.
//
// # Pages
//
// The console's pages are the API's collections, at paths that follow
// the API's: the overview (what is online, live), endpoints (each with
// its agent's tunnel session), tunnel sessions (stop one), credentials,
// reserved domains (with the certificate's status and the DNS records to
// create), uploaded TLS certificates (the chain and key in PEM; the key
// is never shown back, not even in a refused form), edges
// (/console/edges/https, tls and tcp) and an HTTPS edge's routes (each
// with its backend), tunnel group backends (/console/backends, set as
// the backend of a route, a TLS edge or a TCP edge from their pages), IP
// policies with their rules (set on a TLS or TCP edge by their IDs in
// the edge's IP restriction form), IP policy rules, IP restrictions,
// event destinations (with the state of delivery to each), event
// subscriptions (their event types added and removed on their page),
// API keys (the signed-in subject's own; an admin's, every key of the
// account), bot users (a tab beside API keys). Not here: the edge
// modules but the backend, the traffic policy and the TLS and TCP
// edges' IP restriction, and the legacy endpoint configurations
// (decision: a traffic policy does most of what the modules do, and the
// API sets them). Each has a list page with a create form (endpoints and
// tunnel sessions are made by agents, not here) and each resource a page
// of its own with an edit form and a delete button. The edit form is
// pre-filled with what the API's update (PATCH) of the kind may change,
// and calls the Service's Update method of the kind with only the fields
// whose value the user changed, so that an untouched field is left as it
// is; a form sent unchanged saves nothing, and says so. What each form
// edits: a credential's description, ACL (one rule per line) and
// metadata; an API key's description and metadata; a reserved domain's
// description, metadata and certificate (managed, with its key type, or
// one of the account's by ID; turning management off is a button of its
// own, the API's DELETE of the policy, which keeps the certificate); an
// edge's description, metadata and hostports (one per line); an HTTPS
// route's match type, match, description and metadata; an IP policy's
// description and metadata; a rule's CIDR, action, description and
// metadata; an IP restriction's policies (one per line), enforcement,
// description and metadata (its type cannot change); an event
// destination's target URL and headers (a changed target keeps its
// signing secret), description and metadata. Endpoints and tunnel
// sessions have no edit form: agents make them. A token or secret the
// API shows only in its create response (a credential's authtoken, an
// API key's token, a destination's signing secret) is shown once, on the
// page the create leads to, and never again. Pages are rendered on the server by
// html/template from embedded files, and work without script; the two
// small scripts are the overview's live updates (static/live.js) and, in
// the traffic-policy editor, a button by each error that puts the cursor
// on its line (static/editor.js).
//
// # Lists
//
// Every list page takes the API's list parameters in its query, limit,
// before_id and filter (a CEL expression over obj, the resource as the
// API shows it), and hands them to the Service unchanged: a page is the
// API's page, newest first, with a link to the next (older) one that
// keeps the limit and filter. A filter box sends filter; a malformed or
// ill-typed filter, or a bad limit or cursor, is the API's message
// (naming the parameter, with line:column for a filter) next to the box,
// over an empty list, with the API's status.
//
// # Reserved domains' DNS records
//
// A domain's page lists the records its owner must create, read from
// what the Service shows of the domain: a CNAME from the domain to its
// cname_target (none for a subdomain of a service-owned domain, whose
// cname_target is null), and, while certificate management is on for a
// wildcard outside them, a CNAME from _acme-challenge.<the wildcard's
// base> to its acme_challenge_cname_target, where the certificate
// manager publishes its DNS-01 challenges.
//
// # Traffic policies
//
// An HTTPS route's page and a TLS edge's page have a traffic-policy
// editor: a textarea holding the module's document (JSON, as the API's
// traffic_policy.value takes it; the API takes no YAML, so neither does
// the editor), indented for reading. Saving calls the Service's
// ReplaceHTTPSRouteTrafficPolicy or ReplaceTLSEdgeTrafficPolicy with the
// text as typed. When the engine refuses it, nothing is saved, the
// editor keeps the text, and each of the engine's errors is shown under
// it at the line of the JSON path it names (found in the text as typed:
// "line 6 (on_http_request[0].actions[0].config.status_code): must be
// between 400 and 599, got 200"), a syntax error at its line. The
// editor's form may be as large as the API's largest document allows
// (edges.MaxTrafficPolicyBytes, URL-encoded), beyond MaxBodyBytes.
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
// API's parameters, named as the API names them, with the API's bounds
// and validation messages, each shown next to the field it concerns: a
// violation goes to the form's field whose name is the longest prefix of
// the violation's (target.http.headers.X-A to the headers field), and a
// list typed one item per line (an ACL, an edge's hostports, a
// restriction's IP policies) names the line of the item at fault. What
// concerns no field of the form (a conflict, a refusal) is shown at the
// top of the form. Another account's resource, by ID in a URL or a
// form, is not found, as in the API.
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
// small script follows server-sent events from /console/live, which
// reads the part from the Service, for the session as it then is
// (authenticated again, IP-checked), and sends it again when it changed.
//
// Given the store's change feed ([Options.Feed], as `edgeplane serve`
// gives it), the stream reads again when the feed reports a change of
// the signed-in account of a kind the overview shows (tunnel sessions,
// endpoints) or of one that decides whether the session may see them
// (API keys, users, bots, the account, IP restrictions, policies and
// rules: a revoked key or a new dashboard restriction ends the stream at
// once), at most once per 250 ms, a burst of changes being one read.
// One follower of the feed per [Handler] (package internal/livefeed)
// wakes the streams of the changed account, and runs only while a
// stream is open; the feed says only which account changed, and each
// stream reads through the Service as its principal, so what a stream
// shows is scoped as every page is. The stream also reads every
// [Options.PollInterval] (1 minute), for what the feed does not report
// (a session reaching the end of its lifetime) and when the feed cannot
// be read. Without a feed (a library user's choice), the stream polls
// every PollInterval (2 s).
//
// At most [Options.MaxLiveStreams] streams are open at once (an account
// may hold a tenth of them); one beyond gets a "busy" event, and the
// page says live updates are off.
package console
