// Package events holds edgeplane's event subscriptions and their delivery:
// the [Subscription], [Source] and [Destination] models with their
// parameters, the
// [Registry] of known event types, the [Event] a host receives, the [Sink]
// interface it implements, and the bounded delivery [Queue].
//
// The package is a leaf: storage, identifiers, URIs and the search for the
// subscriptions a change goes to belong to the edgeplane Service, which
// calls this package.
//
// # Event types
//
// An event type has the shape <event_name>.v<N> ([ParseType]): the name is
// lowercase letters, digits and single inner underscores, starting with a
// letter; N is a decimal number without leading zeros; at most
// [MaxTypeBytes] bytes in all. The Service reports each committed write
// of a resource as the type "<name>_<verb>.v0" ([TypeOf]) with the verb
// created, updated or deleted; the names are the Service's (one per
// resource kind and edge module; edgeplane.DefaultEventTypes lists every
// type), so ip_policy_created.v0, credential_deleted.v0,
// https_edge_route_oidc_module_updated.v0 and so on.
//
// # Registry
//
// A [Registry] is the set of types a source may name, built with
// [NewRegistry]. The Service's default holds edgeplane.DefaultEventTypes; a
// host that emits events of its own (through the Service's Publish) builds
// a registry from those plus its types and hands it to the Service in
// Options. A registry is immutable: there is no global registry to change. [Registry.Check] refuses a malformed type (saying
// which shape is allowed) and an unknown one (naming it and suggesting the
// closest known type by edit distance).
//
// # Delivery
//
// The Service reads its store's change feed (package store) and makes a
// [Change] (account, type, time, the object as the API shows it) of each
// committed write, in commit order, and hands it to the [Queue] with
// [Queue.Put], which waits while the queue is full (the feed keeps what is
// not yet read). Changes of the host's own making go in with
// [Queue.Enqueue], which never blocks: when the queue is full the change
// is dropped. One worker goroutine takes changes in order, finds the
// subscriptions of the change's account that have a source of its type
// (the [Expander], run by the Service against its store), and calls
// [Sink.Deliver] once per subscription with an [Event] of its own ID
// (ev_). Each call gets a context that ends at the delivery timeout or on a
// forced shutdown; an error or a panic counts the event as failed, logs it
// and moves on: nothing is retried. [Queue.Close] stops intake and drains
// what was accepted, or gives up when its context ends.
//
// Every loss is counted in [Stats] (dropped changes, failed lookups, failed
// deliveries) and logged with its reason through log/slog. Repeated log
// lines are throttled: the first 16 of a kind, then every 1024th, each with
// the running count.
//
// # Decisions where the specification is silent
//
//   - Event subscriptions have the minimal shape id, uri, created_at,
//     description (at most 255 bytes), metadata (at most 4096 bytes) and
//     sources (their {type, uri}, ordered by type, [] when none), and are
//     created, read, listed, updated and deleted through the Service.
//     Deleting one deletes its sources.
//   - A subscription may be created with its sources
//     ({"sources": [{"type": "ip_policy_created.v0"}]}): at most
//     [MaxCreateSources], each a known type listed once (violations of
//     sources[i].type; the closest known type is suggested for the first
//     few unknown ones). The subscription and each source are written one
//     after the other, each reported as its own created event; if a
//     source cannot be written the subscription is deleted again and the
//     error returned. The event object of a subscription change shows
//     sources as null: it is made from the subscription's record alone.
//   - Adding a source of a type the subscription already has is a
//     conflict. An unknown or malformed type is an invalid argument with a
//     violation of "type".
//   - A source's internal identifier (evs_) is never shown: the API
//     addresses a source by its subscription and type. A subscription has
//     at most one source per type, so at most [MaxSources].
//   - Listing sources is not paged; the list's uri is the URI of the list
//     itself ({base_url}/event_subscriptions/<id>/sources), never null.
//   - Updating a source with the empty object changes nothing and returns
//     the source; it is reported as event_source_updated.v0.
//   - Source changes are events too (event_source_*); a deleted source
//     reports its {type, uri}, since it has no ID. Deleting a subscription
//     reports only event_subscription_deleted.v0, not its sources.
//   - Tunnels coming online and going offline are reported as
//     tunnel_created.v0 and tunnel_deleted.v0; tunnels removed because
//     their credential was deleted are not reported one by one.
//   - An event is one delivery: a change that several subscriptions want
//     becomes several events, each with its own ID and SubscriptionID.
//     Events carry the account and subscription besides id, type,
//     created_at and object. created_at is the time of the change, to the
//     second, like every timestamp.
//   - The subscriptions of a change are found when the worker takes it,
//     not when the change happens: a source added or removed in between
//     decides.
//   - Event destinations have the original service's shape (id, uri,
//     created_at, description, metadata, format "json", target) with a
//     target of edgeplane's own, http {url, secret, headers}; the
//     original's other targets are refused, naming http. The secret,
//     "whsec_" then the base64 of a 24 to 64 byte key (32 generated), is
//     shown in the response of the write that set it, null ever after. A
//     destination also shows delivery, the state of delivery to it.
//     Subscriptions send to at most [MaxSubscriptionDestinations]
//     destinations (destination_ids; destinations as Refs); an account
//     has at most [MaxDestinationsPerAccount]. Delivery to destinations,
//     at least once from the store's change feed, is package webhook's;
//     this package's [Queue] feeds the host's [Sink] only.
//   - A destination may point only where delivery may go. When it is
//     created, or its target changed, the host of target.http.url must
//     be an address inside [Options.Networks] (public addresses only
//     when empty), or a name at least one of whose addresses is; the
//     name is looked up with [Options.Resolver] within
//     [Options.ResolveTimeout]. Otherwise the write is refused with a
//     violation of target.http.url that says why ("10.1.2.3 is private
//     (10.0.0.0/8)", "... resolves only to addresses not allowed") and
//     names the networks allowed. A name that does not resolve in time,
//     or at all, is refused too, in those words and never with the
//     resolver's error: delivery could not reach it either, and a
//     tenant whose name is new tries again once it resolves. Delivery
//     checks every address it dials all the same, since a name can
//     resolve elsewhere later.
//   - A destination's delivery tells its owner how far behind it is in
//     time only (lag_seconds: the age of the event being retried, 0 when
//     none waits). Store revisions, which every account's writes
//     advance, are not shown (no cursor, no lag in revisions), and
//     skipped counts the times events were lost to the feed's
//     compaction, not the revisions lost: either count would tell one
//     account how much the others write. The server's operator has the
//     revisions in its metrics and log.
//   - Delivery to a Sink is at most once and in order, from one goroutine. The queue
//     holds [DefaultQueueSize] changes and each sink call gets
//     [DefaultDeliveryTimeout] unless [Options] say otherwise.
package events
