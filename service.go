package edgeplane

import (
	"context"
	"iter"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/hosting"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/acmestate"
	"github.com/edgeplane/edgeplane/internal/agentstate"
	"github.com/edgeplane/edgeplane/internal/agenttokens"
	"github.com/edgeplane/edgeplane/internal/authcache"
	"github.com/edgeplane/edgeplane/internal/cachesync"
	"github.com/edgeplane/edgeplane/internal/dataplane"
	"github.com/edgeplane/edgeplane/internal/delivery"
	"github.com/edgeplane/edgeplane/internal/eventfeed"
	"github.com/edgeplane/edgeplane/internal/fence"
	"github.com/edgeplane/edgeplane/internal/leases"
	"github.com/edgeplane/edgeplane/internal/nodes"
	"github.com/edgeplane/edgeplane/internal/recordcache"
	"github.com/edgeplane/edgeplane/internal/records"

	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/filter"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/netguard"
	"github.com/edgeplane/edgeplane/internal/seal"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// DefaultBaseURL is the base URL of uri fields when [Options.BaseURL] is
// empty.
const DefaultBaseURL = "http://127.0.0.1:8080"

// Options configures a [Service]. The zero value gives the documented
// defaults.
type Options struct {
	// BaseURL is the {base_url} of every uri field, without a trailing
	// slash (one is trimmed). Default [DefaultBaseURL].
	BaseURL string
	// Clock returns the current time. Default time.Now.
	Clock func() time.Time
	// Logger receives the Service's logs. Default: a logger that discards
	// everything.
	Logger *slog.Logger
	// Domains configures reserved domains: the service-owned base domains
	// and the base of CNAME targets. The zero value gives the defaults of
	// [domains.Config]. [New] refuses it when it is invalid (check it with
	// [domains.Config.Validate]).
	Domains domains.Config
	// Events configures event delivery: the sink that receives events of
	// subscribed types, the bounded queue in front of it, the registry
	// of known event types, and the networks event destinations may
	// point at. The zero value delivers nothing, knows the default types
	// and allows destinations at public addresses only. With a Sink set,
	// New starts one delivery goroutine; stop it with [Service.Close].
	Events events.Options
	// Policy is the traffic policy engine that validates, compiles and
	// runs edge traffic policies. One engine for the Service's lifetime
	// keeps rate limiter state across recompilations. Nil: New builds one
	// with the built-in actions, Clock and a sink on Logger.
	Policy *policy.Engine
	// SealingKey is the AES-256 key ([SealingKeySize] bytes) under which
	// secrets that must be read back (the private keys of TLS
	// certificates) are sealed at rest. Nil: New generates a random key and
	// logs a warning; what it seals cannot be opened by another Service or
	// after a restart, so a host with a durable or shared store must
	// supply the same key to every Service. New refuses a key of another
	// size.
	SealingKey []byte
	// AuthCacheTTL is how long a successful [Service.Authenticate] is
	// remembered, so that requests with the same key read nothing from the
	// store. A key revoked through this Service stops authenticating at
	// once; one revoked by another process sharing the store (another
	// replica, edgeplane admin) as soon as this Service's follower of the
	// change feed reads the revocation (milliseconds on PostgreSQL, 100 ms
	// for a SQLite file another process wrote), and at the latest after
	// AuthCacheTTL. Changes of users and bots drop every cached
	// authentication; so does a change feed that cannot be read. Default
	// [DefaultAuthCacheTTL] (1 minute); negative turns the cache off.
	AuthCacheTTL time.Duration
	// CacheBytes bounds the record cache: documents the Service has read,
	// kept decoded so that reading them again costs neither a store round
	// trip nor a decode, and invalidated by every write through the
	// Service and, for writes by other processes sharing the store, by
	// the store's change feed (see the package doc, # Storage). Counted
	// as the stored size of each document plus a fixed overhead, plus the
	// size of the API's JSON of the record when it is cached too (see
	// [Transport]). Default
	// [DefaultCacheBytes] (64 MiB); negative turns the cache off.
	CacheBytes int
	// TunnelLease is how long a registered tunnel, or an edge node with
	// every agent session it holds, stays online without its tunnel
	// server renewing it ([Host.RenewTunnel], [hosting.TunnelHost.RenewNode]). Default
	// [DefaultTunnelLease].
	TunnelLease time.Duration
	// AgentLimits bound the sessions, tunnels and endpoints the agents
	// of one account hold at once, across every node of the store; zero
	// fields mean their defaults (see [agents.Limits]).
	AgentLimits agents.Limits
}

// DefaultAuthCacheTTL is the default of [Options.AuthCacheTTL].
const DefaultAuthCacheTTL = authcache.DefaultTTL

// SealingKeySize is the size of [Options.SealingKey] in bytes.
const SealingKeySize = seal.KeySize

// DefaultTunnelLease is the default of [Options.TunnelLease]. A tunnel
// server renews each tunnel well within it (every 20 seconds, say), so
// that a server that dies takes its tunnels offline within a minute.
const DefaultTunnelLease = 60 * time.Second

// Service is the management API as Go methods: one method per operation of
// the specification, each acting for a [Principal]. It is safe for
// concurrent use; all state lives in its [store.Store].
type Service struct {
	store   store.Store
	baseURL string
	now     func() time.Time
	log     *slog.Logger
	ids     *ids.Generator
	domains domains.Config // Options.Domains with defaults filled in

	eventTypes *events.Registry    // known event types; never nil
	queue      *events.Queue       // nil when delivery is off
	follow     *eventfeed.Follower // reads the change feed into queue; nil when delivery is off

	// destinations is where event destinations may point
	// (Options.Events.Networks), lookup and resolveTimeout how their
	// host names are looked up (Options.Events.Resolver and
	// ResolveTimeout, or the defaults).
	destinations   *netguard.Policy
	lookup         netguard.LookupFunc
	resolveTimeout time.Duration

	policy  *policy.Engine         // Options.Policy or a default engine; never nil
	filters *filter.Compiler       // compiles and caches the filters of lists
	lease   time.Duration          // Options.TunnelLease or its default
	limits  agents.Limits          // Options.AgentLimits with defaults
	sealer  *seal.Sealer           // under Options.SealingKey or an ephemeral key
	auth    *authcache.Cache       // nil when Options.AuthCacheTTL is negative
	access  *dataplane.AccessCache // the dataplane's compiled IP restrictions (access.go); nil without a follower of the feed

	// Runtime-only operations of Host, each in an internal package.
	dataplane *dataplane.Compiler // edge configs and the checks of IP restrictions (edgeconfig.go, access.go)
	tokens    *agenttokens.Issuer // agents' resume tokens, sealed by sealer
	acme      *acmestate.State    // the certificate manager's ACME state
	delivery  *delivery.States    // event destinations' delivery states (eventdelivery.go)

	cache       *recordcache.Cache  // nil when Options.CacheBytes is negative
	db          *records.DB         // the record machinery over store and cache
	cacheFollow *cachesync.Follower // keeps cache and auth true to other processes' writes; nil without either
	fence       *fence.Fence        // makes cached reads see other processes' writes; nil: reads need no fence

	leases     *leases.Registry  // the named leases of LeaseHost.AcquireLease
	nodes      *nodes.Registry   // the edge nodes of TunnelHost.RegisterNode and the sessions they hold
	agentState *agentstate.State // agents' sessions, tunnels and endpoints (agentrecords.go)
	roles      *hosting.Roles    // the Host's roles for the runtime parts (host.go)
}

// New returns a Service over store, or an InvalidArgument error naming
// what is wrong with its arguments (a nil store, a SealingKey of another
// size than [SealingKeySize], invalid Domains) and starting nothing.
func New(st store.Store, opts Options) (*Service, error) {
	if st == nil {
		return nil, apierr.Invalidf("store", "must be a store.Store, not nil")
	}
	if opts.SealingKey != nil && len(opts.SealingKey) != SealingKeySize {
		return nil, apierr.Invalidf("SealingKey", "must be %d bytes, got %d", SealingKeySize, len(opts.SealingKey))
	}
	if err := opts.AgentLimits.Validate(); err != nil {
		return nil, apierr.Wrap(apierr.InvalidArgument, err, "invalid Options.AgentLimits: "+err.Error())
	}
	if err := opts.Domains.Validate(); err != nil {
		return nil, apierr.Wrap(apierr.InvalidArgument, err, "invalid Options.Domains: "+err.Error())
	}
	s := &Service{
		store:   st,
		filters: new(filter.Compiler),
		cache:   recordcache.New(opts.CacheBytes),
		lease:   opts.TunnelLease,
		limits:  opts.AgentLimits.WithDefaults(),
		auth:    authcache.New(opts.AuthCacheTTL),
		baseURL: strings.TrimRight(opts.BaseURL, "/"),
		now:     opts.Clock,
		log:     opts.Logger,
	}
	if s.baseURL == "" {
		s.baseURL = DefaultBaseURL
	}
	if s.lease <= 0 {
		s.lease = DefaultTunnelLease
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	key := opts.SealingKey
	if key == nil {
		key = seal.NewKey()
		s.log.Warn("no Options.SealingKey: certificate private keys are sealed under a key of this process only; " +
			"they cannot be read after a restart or by another process")
	}
	sealer, err := seal.New(key)
	if err != nil {
		return nil, apierr.Invalidf("SealingKey", "%s", err.Error())
	}
	s.sealer = sealer
	s.tokens = agenttokens.New(sealer, s.now)
	s.ids = ids.NewGenerator(s.now)
	s.domains = opts.Domains.WithDefaults()
	if s.policy, err = newPolicyEngine(opts.Policy, s.now, s.log); err != nil {
		return nil, err
	}
	if s.eventTypes = opts.Events.Registry; s.eventTypes == nil {
		if s.eventTypes, err = events.NewRegistry(DefaultEventTypes()...); err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "the default event types do not make a registry") // a bug in kindList
		}
	}
	s.guardDestinations(opts.Events)
	s.store = recordcache.Invalidating(agentstate.GuardEdges(st), s.cache)
	if s.cache != nil || s.auth != nil { // startCache starts a follower that keeps it true
		s.access = &dataplane.AccessCache{}
		s.store = dataplane.Invalidating(s.store, s.access)
	}
	s.db = &records.DB{Store: s.store, Cache: s.cache, Log: s.log, Now: s.now, Sealer: s.sealer, Filters: s.filters,
		BaseURL: s.baseURL, Kinds: allKinds(), ExplainInUse: s.explainInUse}
	if vl, ok := st.(store.VersionLister); ok {
		s.db.Versions = vl
	}
	s.leases = leases.New(s.store, s.db, s.now)
	s.nodes = nodes.New(s.store, s.db, s.now, s.ids, s.lease, s.sealer, tunnelSessionKind)
	s.agentState = agentstate.New(agentstate.Config{DB: s.db, Nodes: s.nodes, IDs: s.ids, Lease: s.lease, Limits: s.limits,
		Forms: agentstate.Forms{Sessions: tunnelSessionForm.Form, Tunnels: tunnelForm.Form, Endpoints: endpointForm.Form,
			Credentials: credentialForm.Form},
		Records: agentRecords{s}, BadToken: errBadToken})
	s.acme = acmestate.New(s.store, s.db, sealer, s.now, s.log)
	s.delivery = delivery.New(s.store, s.log, deliveryRecords{s})
	s.startEvents(opts.Events)
	s.startCache()
	if ex, ok := st.(store.Exclusive); s.cacheFollow != nil && !(ok && ex.Exclusive()) {
		s.fence = fence.New(st, s.cacheFollow.Applied(), s.cacheFollow.Done())
		s.db.Fence = s.fence.Wait
	}
	s.dataplane = dataplane.New(s.db, s.policy, dataplaneKinds(), s.access, s.fence, s.now, s.log)
	s.roles = s.newRoles()
	return s, nil
}

// Fence makes sure the Service's caches reflect every change committed
// to the store before the call (another replica's too), and returns ctx
// marked so that the reads made under it need no fence of their own: a
// transport calls it once per request, before the request's reads (its
// authentication among them), which then cost one coalesced revision
// query together instead of one each. Without it every cached read
// fences itself. When the fence fails (the store cannot say its
// revision, or the caches lag more than a second), the reads under the
// returned context go to the store. When the Service needs no fence
// ([store.Exclusive]) it returns ctx as it is.
func (s *Service) Fence(ctx context.Context) context.Context { return s.fence.Context(ctx) }

// BaseURL returns the base URL of the Service's uri fields.
func (s *Service) BaseURL() string { return s.baseURL }

// Principal is the caller a Service method acts for: who is asking and on
// behalf of which account (see [identity.Principal]). Transports obtain it
// from [Service.Authenticate].
type Principal = identity.Principal

// now returns the current time as resources record it.
func (s *Service) timestamp() time.Time { return resource.Timestamp(s.now()) }

// uri returns {base_url}/<collection>/<id>.
func (s *Service) uri(collection, id string) string { return s.db.URI(collection, id) }

// ref returns the Ref of id in collection.
func (s *Service) ref(collection, id string) resource.Ref { return s.db.Ref(collection, id) }

// refs returns the Refs of ids in collection; never nil.
func (s *Service) refs(collection string, ids []string) []resource.Ref {
	return s.db.Refs(collection, ids)
}

// ListOptions selects a page of a list: [resource.ListOptions].
type ListOptions = resource.ListOptions

// MaxFilterScan is the largest number of resources one filtered page
// reads, matching or not, so that a filter that matches nothing cannot
// make one request read a whole collection.
const MaxFilterScan = records.MaxFilterScan

// MaxFilterPageCost bounds the total cost, in CEL's cost units, of the
// filter evaluations of one page (each is bounded by
// [limits.MaxEvaluationCost]): a page whose evaluations reach it ends
// after the resource that did, as at [MaxFilterScan].
const MaxFilterPageCost = records.MaxFilterPageCost

// MaxPageSize is the largest allowed [ListOptions.Limit], and the default.
const MaxPageSize = records.MaxPageSize

// Page is one page of a list, newest first.
type Page[T any] struct {
	// Items are the page's resources.
	Items []T
	// URI is the URI of the list resource.
	URI string
	// NextPageURI is the absolute URI of the next page, or nil on the last
	// page.
	NextPageURI *string
	// NextBeforeID is the cursor of the next page ("" on the last page).
	NextBeforeID string
}

// ListFunc is the shape of the Service's list methods, for [All].
type ListFunc[T any] func(ctx context.Context, p Principal, opts ListOptions) (*Page[T], error)

// All walks every page of a list, newest first, yielding each item. It
// stops at the first error, yielding it with the zero T.
//
//	for c, err := range edgeplane.All(ctx, p, svc.ListCredentials) { ... }
func All[T any](ctx context.Context, p Principal, list ListFunc[T]) iter.Seq2[T, error] {
	return AllWith(ctx, p, list, ListOptions{})
}

// AllWith is [All] from the page opts selects, with its page size and
// filter: it yields every item opts.Filter matches, walking as many pages
// as that takes.
//
//	for c, err := range edgeplane.AllWith(ctx, p, svc.ListCredentials, edgeplane.ListOptions{Filter: `obj.owner_id == "usr_..."`}) { ... }
func AllWith[T any](ctx context.Context, p Principal, list ListFunc[T], opts ListOptions) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			page, err := list(ctx, p, opts)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range page.Items {
				if !yield(it, nil) {
					return
				}
			}
			if page.NextBeforeID == "" {
				return
			}
			opts.BeforeID = page.NextBeforeID
		}
	}
}

// listQuery returns the records query of opts.
func listQuery(opts ListOptions) records.Query {
	return records.Query{Limit: opts.Limit, BeforeID: opts.BeforeID, Filter: opts.Filter}
}

// pageOf returns the Page of a listing of the collection at path (below
// the base URL), asked for with opts.
func pageOf[T any](s *Service, path string, opts ListOptions, l *records.Listing[T], err error) (*Page[T], error) {
	if err != nil {
		return nil, err
	}
	pg := &Page[T]{Items: l.Items, URI: s.baseURL + "/" + path}
	if l.Next != "" {
		pg.next(l.Next, l.Limit, opts.Filter)
	}
	return pg, nil
}

// list returns one page of records of form f's kind (children of parent
// when set) in the collection at path, decoded and presented.
func list[M any](ctx context.Context, s *Service, p Principal, f records.Form[M], parent, path string, opts ListOptions, present func(*M, store.Record)) (*Page[M], error) {
	l, err := records.List(ctx, s.db, p, f, parent, listQuery(opts), present)
	return pageOf(s, path, opts, l, err)
}

// listAs is [records.ListAs] as a Page of the collection at path.
func listAs[M, V any](ctx context.Context, s *Service, p Principal, f records.Form[M], parent, path string, opts ListOptions,
	show func(*M, store.Record) (*V, error), late records.LateField[V]) (*Page[V], error) {
	l, err := records.ListAs(ctx, s.db, p, f, parent, listQuery(opts), show, late)
	return pageOf(s, path, opts, l, err)
}

// next sets the page's cursor to last and its next page URI.
func (pg *Page[T]) next(last string, limit int, filter string) {
	q := url.Values{"before_id": {last}, "limit": {strconv.Itoa(limit)}}
	if filter != "" {
		q.Set("filter", filter)
	}
	uri := pg.URI + "?" + q.Encode()
	pg.NextPageURI, pg.NextBeforeID = &uri, last
}

// Close shuts event delivery down: changes committed after it are no
// longer reported, and it waits until every change committed before it is
// delivered or ctx ends (then the delivery in progress is cancelled, the
// rest is dropped and counted, and ctx.Err() is returned). Management
// operations keep working after Close; only delivery stops. Without a
// sink, Close does nothing. It may be called more than once.
func (s *Service) Close(ctx context.Context) error {
	s.stopCache()
	if s.queue == nil {
		return nil
	}
	if err := s.follow.Stop(ctx); err != nil {
		_ = s.queue.Close(ctx) // ctx has ended: drops what waits, stops the worker
		return err
	}
	return s.queue.Close(ctx)
}

// convertPage returns page with its items converted by conv.
func convertPage[A, B any](page *Page[A], conv func(*A) B) *Page[B] {
	out := &Page[B]{Items: make([]B, len(page.Items)), URI: page.URI, NextPageURI: page.NextPageURI, NextBeforeID: page.NextBeforeID}
	for i := range page.Items {
		out.Items[i] = conv(&page.Items[i])
	}
	return out
}

// noted returns rec labelled with note, for a store write made without
// the generic operations of package records.
func noted(rec store.Record, note store.Note) store.Record {
	rec.Note = note
	return rec
}
