// Package edgeplane is the control plane of a tunnel-and-edge service as a
// Go library: the management API as methods of a [Service] (tunnel
// credentials, IP policies and restrictions, and more), over a pluggable
// [store.Store].
//
// # Using it
//
// A host builds a Service over a store and acts for callers:
//
//	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{BaseURL: "https://api.example.com"}) // err: invalid options
//	host := svc.Host() // the privileged side, for the host alone
//	acct, _ := host.CreateAccount(ctx, identity.AccountParams{Name: "acme"})
//	admin, _ := host.CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "ada", Admin: true})
//	key, _ := host.CreateAPIKey(ctx, acct.ID, identity.CreateAPIKeyParams{OwnerID: admin.ID})
//	p, _ := svc.Authenticate(ctx, *key.Token) // what a transport does per request
//	cred, _ := svc.CreateCredential(ctx, p, credentials.CreateParams{ACL: []string{"bind:*.example.com"}})
//
// Transports (the httpapi package) turn requests into these calls; tunnel
// servers call [Host.AuthenticateTunnelToken] when an agent connects.
//
// # Accounts and principals
//
// Every resource belongs to one account. Every operation acts for a
// [Principal]: the account, the user (usr_) or bot (bot_) calling, and
// whether it is an admin. A caller never reads, lists, changes or deletes
// another account's resource: for it, that resource does not exist, and the
// error is the same not-found a missing ID gets. Any subject of an account
// may use every operation on the account's resources (the specification
// does not show API key permissions), except that only admins may create a
// credential owned by another subject, manage bot users, and manage API
// keys of other owners (package identity has these decisions). Accounts
// and users are created by the host ([Host.CreateAccount],
// [Host.CreateUser]); bot users and API keys by the host too
// ([Host.CreateBot], [Host.CreateAPIKey]) or by callers
// ([Service.CreateBotUser], [Service.CreateAPIKey]). [Service.Authenticate] remembers
// a successful key (see [Options.AuthCacheTTL]) until the change feed
// shows its revocation or a change of its owner: a key revoked by another
// process sharing the store stops as soon as this Service reads the
// revocation from the feed.
//
// # Secrets
//
// API key secrets and tunnel authtokens carry 256 random bits, are shown
// once (in the create result) and are stored only as SHA-256 hashes, held
// as unique lookup keys in the store. Authentication hashes the presented
// secret, looks it up and compares the stored hash in constant time. Every
// failure gives the same unauthenticated error.
//
// # Identifiers, URIs and timestamps
//
// Identifiers are a type prefix (cr_, ipp_, ipx_, ...) followed by 27 base62
// characters: 48 bits of milliseconds, a 16-bit sequence and 96 random bits
// from crypto/rand. They sort in creation order, so newest-first by ID is
// newest-first by creation time. A malformed ID is simply not found.
// uri fields are {base_url}/<collection>/<id>, computed when a resource is
// read (so a changed base URL applies everywhere); timestamps are UTC,
// truncated to the second, and marshal as RFC 3339 with a Z.
//
// # Lists
//
// List methods return a [Page], newest first: limit 1..100 (0 means 100)
// and a before_id cursor; NextPageURI is the absolute URL of the next page
// (with before_id and limit) or nil on the last page. [All] walks every page
// as a Go iterator.
//
// Every list also takes [ListOptions.Filter], a CEL expression over obj,
// the resource as the API shows it (JSON field names, type-checked at
// compile time, cost-bounded with the traffic policy engine's limits; see
// package filter): a page holds up to limit matching items and its
// NextPageURI keeps the filter. A filtered page reads at most
// [MaxFilterScan] (1000) resources and spends at most about
// [MaxFilterPageCost] evaluating the filter; when it reaches a bound first it
// holds the matches so far, possibly none, and a next page that continues
// after the last resource read, so only a nil NextPageURI ends the list.
// [AllWith] walks a filtered list. [Service.ListEventSourcesMatching]
// filters the (unpaged) sources of a subscription.
//
// # Updates
//
// Update methods take params whose fields are pointers: a nil field is
// absent and keeps its value, a pointer to "" clears it. Fields that cannot
// change (a credential's owner_id, an IP restriction's type) are refused
// with a violation when present. Every update is one atomic
// read-modify-write in the store: concurrent updates never lose a change.
//
// # Errors
//
// Every error carries an [apierr.Code] and unwraps to its sentinel
// (errors.Is(err, apierr.ErrNotFound)). Invalid input fails with every
// violation listed, each naming the field by its JSON path, and changes
// nothing. Store failures that are not of the API's making become a
// generic internal error; the cause goes to the [Options.Logger] only.
//
// # References
//
// An IP restriction's ip_policy_ids must name IP policies of the same
// account; the check and the write are one atomic step in the store. An IP
// policy cannot be deleted while something references it: the error is a
// conflict naming the referrers. Deleting an IP policy deletes its rules.
//
// # Other resources
//
// Reserved domains, TLS certificates and endpoint configurations (package
// domains, configured by [Options.Domains]), tunnel group backends and
// online tunnels (package backends), agents' tunnel sessions and
// endpoints (package agents; read-only over the API but for a stop
// request), edges, routes and their modules
// (package edges, with traffic policies compiled by [Options.Policy]) and
// event subscriptions and sources (package events) follow the same rules:
// methods per operation acting for a [Principal], account isolation, PATCH
// semantics, references checked atomically. Each package's doc lists the
// decisions taken where the specification is silent.
//
// Every committed write of an account's resource is reported as an event
// (type "<resource>_<created|updated|deleted>.v0", see
// [DefaultEventTypes]) to the subscriptions of the account with a source
// of that type, through the host's [Options.Events] sink. Events are read
// from the store's change feed (package store): a change is reported if
// and only if its write committed, in commit order, and records deleted
// with their parent (the routes of an edge, the tunnel sessions and
// tunnels of a credential, the tunnels and endpoints of a session) are
// reported as deleted too. Delivery never blocks an operation: a slow
// sink leaves changes waiting in the feed, not in memory. [Service.Close]
// delivers what was committed before it. With several Services over one
// shared store, set a sink on one of them only: each Service with a sink
// reports every change of the store.
//
// # Edge proxies and tunnel servers
//
// Host operations take no principal: they are methods of [Host], which a
// host obtains with [Service.Host] and transports for callers never hold.
// The Host's own methods are administration (accounts, users, bots, API
// keys, the bootstrap, tunnels registered by a host program); each
// runtime part reaches the Service through one role of it, a type of
// package hosting: [Host.Tunnels] for tunnel servers (package tunnel:
// nodes, agents' sessions, tunnels and endpoints), [Host.Nodes] for the
// hop between nodes (package hop), [Host.DataPlane] for edge proxies
// (package proxy: edge configs, backend tunnels, endpoints,
// certificates), [Host.Certificates] for the certificate manager and the
// DNS server of DNS-01 challenges (packages certmanager and acmedns),
// [Host.Leases] for elections of one replica, and [Host.EventDelivery]
// for event delivery (package webhook). A session is a child of its
// credential and its labeled tunnels and endpoints children of the
// session, so they go offline together; each tunnel server is a node of
// the store, whose one lease keeps every session it holds online.
//
// # Storage
//
// The Service keeps every resource in a store.Store (package store: the
// contract; memstore: the in-memory backend; storetest: the conformance
// suite every backend runs). Each write gets a revision from the store's
// change feed, which event delivery and edge proxies follow; lookups that
// are not by ID go through the store's unique keys and secondary indexes
// (an edge's or endpoint's hostports, a domain's certificate due time, a source's event type, a tunnel's
// labels and lease end, a node's lease end, the sessions of a node), never a scan of all records.
//
// Stored documents are not the API's JSON: each kind has a stored form of
// its own (a document type in package internal/storedforms, see
// package internal/records) that keeps no computed
// field (uri, a backend's tunnels, the URIs of references, which are
// stored as bare IDs) and names its fields independently of the wire, so
// renaming a wire field is never a data migration. Secrets the API must
// show again (the private keys of TLS certificates, the client secrets of
// OIDC modules) are sealed with AES-256-GCM under [Options.SealingKey],
// bound to their record; secrets it never shows again (API keys,
// authtokens) are stored only as SHA-256 hashes. [Host.CheckSealingKey]
// also refuses a store whose documents are of another format.
//
// Reads by ID are served from a record cache of decoded documents
// ([Options.CacheBytes], 64 MiB): a write through the Service invalidates
// what it wrote (and, for a delete, the records below it) before it
// returns, so a caller always reads its own writes; writes by other
// processes sharing the store (replicas, edgeplane admin) are invalidated
// by a goroutine that follows the change feed (milliseconds on
// PostgreSQL; within 100 ms on a SQLite file written by another
// process). A read that the record cache or the API key cache would
// answer is fenced first: it reads the store's revision and waits until
// the follower has applied it, so after a write is acknowledged by any
// replica, every later read on any replica sees it (a delete through one
// replica, then a read through another: not found; a key revoked
// through one: refused by all). The revision reads are coalesced: one
// round trip serves every read that arrived before it was sent. A store
// that only this process writes ([store.Exclusive]: memstore) needs no
// fence. A page of a list reads its records' IDs and versions from the
// store and takes the documents the record cache holds at those
// versions, reading from the store (in one query) only the records it
// does not hold, when the store can list versions
// ([store.VersionLister]: sqlitestore, pgstore); a filtered list does so
// chunk by chunk, so it reads only the records it scans. A cached
// document is taken only at the version the store lists, so lists need
// no fence. On other stores (memstore) a list reads the store's records
// and reuses the cached documents of their versions.
// Credentials also keep, once read, the JSON the API answers for them,
// cached with the record's version and counted in the same bound: GET
// /credentials/{id} and a page of /credentials (through [Transport],
// the transports' side of the Service) copy those bytes. A
// Service that stops following the feed (the store unreachable) empties
// the cache and reads the store until it follows again. [Service.Close]
// stops the follower.
//
// # Adding a resource
//
// A kind of resource is declared once, and every table is derived from
// the list of kinds (kindList in kinds.go). A new kind touches:
//   - a leaf package (or a file of one) with its model, params and
//     validation, as package credentials does;
//   - its store kind constant and its entry in kindList, in kinds.go;
//   - its stored document and form, in package internal/storedforms;
//   - its own root file, named after it: its identity (a
//     *records.Kind: ID prefix, collection, noun, event name) and its
//     declaration (a kind value: the stored form, how a
//     record is presented, and its traits for caches and edge proxies),
//     with the methods of its operations, which call the generic
//     operations of package internal/records (they check the principal
//     and IDs, label writes with their events and map store errors);
//   - its routes in httpapi/routes.go.
//
// Leaving out a part fails a test: a constant not in kindList
// (TestKindListComplete), a kind without a stored-form sample or whose
// sample cannot be shown (TestStoredForms), a kind without routes
// (httpapi's TestEveryKindHasRoutes). A change of a kind that is not in
// the list is logged by every follower of the change feed, never
// silently skipped.
//
// # Decisions where the specification is silent
//
//   - IP policies have the minimal shape id, uri, created_at, description,
//     metadata; their rules (ipr_) carry cidr, action (allow or deny) and
//     the ip_policy Ref. A set of policies denies an address a deny rule
//     matches; when any allow rule exists, it denies an address no rule
//     matches.
//   - One IP policy holds at most [ipaccess.MaxRulesPerPolicy] (1,000)
//     rules. Creating one more is refused (400, naming ip_policy_id and the
//     cap); the cap holds under concurrent creates because each rule takes
//     one of its policy's numbered slots as a unique store key. A set is
//     evaluated over every rule of its policies or not at all: a policy
//     found with more rules than the cap makes [Service.CheckIP] and the
//     edge configs that use it fail (failed precondition), never allow from
//     part of its rules.
//   - An IP restriction needs at least one IP policy; enforced defaults to
//     false.
//   - The default base URL is [DefaultBaseURL].
//   - An agent's endpoint (ep_) takes its hostport as an edge does: one
//     edge or endpoint per hostport, and per TCP port, store-wide. A
//     domain an endpoint names must be a reserved domain of the account
//     (or covered by its wildcard); a domain reserved by another account
//     gets the same refusal as one nobody reserved. A tcp endpoint
//     whose port the tunnel server picks needs an ACL that permits
//     everything (the grammar of bind rules has no port wildcard, and a
//     restricted credential names the address it may bind). A rebind
//     after a reconnect deletes the old record, then creates the new one
//     (the store writes one record at a time): a bind that takes the
//     hostport in between wins. See [hosting.TunnelHost.BindEndpoint].
package edgeplane
