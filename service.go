package edgeplane

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/filter"
	"github.com/edgeplane/edgeplane/internal/ids"
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
	// [domains.Config]. [New] panics when it is invalid (check it with
	// [domains.Config.Validate]).
	Domains domains.Config
	// Events configures event delivery: the sink that receives events of
	// subscribed types, the bounded queue in front of it and the registry
	// of known event types. The zero value delivers nothing and knows the
	// default types. With a Sink set, New starts one delivery goroutine;
	// stop it with [Service.Close].
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
	// supply the same key to every Service. New panics on a key of another
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
	// size of the API's JSON of the record when it is cached too
	// ([ListOptions.ItemsAsJSON]). Default
	// [DefaultCacheBytes] (64 MiB); negative turns the cache off.
	CacheBytes int
	// TunnelLease is how long a registered tunnel stays online without
	// its tunnel server renewing it ([Host.RenewTunnel]). Default
	// [DefaultTunnelLease].
	TunnelLease time.Duration
}

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

	eventTypes *events.Registry // known event types; never nil
	queue      *events.Queue    // nil when delivery is off
	follow     *follower        // reads the change feed into queue; nil when delivery is off

	ipSets  policySets       // built IP policy sets, shared by every config that names a policy
	policy  *policy.Engine   // Options.Policy or a default engine; never nil
	filters *filter.Compiler // compiles and caches the filters of lists
	lease   time.Duration    // Options.TunnelLease or its default
	sealer  *seal.Sealer     // under Options.SealingKey or an ephemeral key
	auth    *authCache       // nil when Options.AuthCacheTTL is negative

	cache       *recordCache   // nil when Options.CacheBytes is negative
	cacheFollow *cacheFollower // keeps cache and auth true to other processes' writes; nil without either
}

// New returns a Service over store. A nil store panics: it is a
// programming error, not a runtime condition.
func New(st store.Store, opts Options) *Service {
	if st == nil {
		panic("edgeplane.New: nil store.Store")
	}
	s := &Service{
		store:   st,
		filters: new(filter.Compiler),
		cache:   newRecordCache(opts.CacheBytes),
		lease:   opts.TunnelLease,
		auth:    newAuthCache(opts.AuthCacheTTL),
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
		panic("edgeplane.New: Options.SealingKey: " + err.Error())
	}
	s.sealer = sealer
	s.ids = ids.NewGenerator(s.now)
	if err := opts.Domains.Validate(); err != nil {
		panic("edgeplane.New: invalid Options.Domains: " + err.Error())
	}
	s.domains = opts.Domains.WithDefaults()
	if s.cache != nil {
		s.store = invalidating{Store: st, cache: s.cache}
	}
	s.startEvents(opts.Events)
	s.startCache()
	s.policy = newPolicyEngine(opts.Policy, s.now, s.log)
	return s
}

// BaseURL returns the base URL of the Service's uri fields.
func (s *Service) BaseURL() string { return s.baseURL }

// Principal is the caller a Service method acts for: who is asking and on
// behalf of which account. Transports obtain it from [Service.Authenticate].
type Principal struct {
	// AccountID is the caller's account. Every resource the call touches
	// belongs to it.
	AccountID string
	// SubjectID is the user (usr_) or bot (bot_) making the call.
	SubjectID string
	// Admin reports whether the subject is an admin of the account.
	Admin bool
}

func (p Principal) check() error {
	if !ids.Valid(p.AccountID, AccountPrefix) || !(ids.Valid(p.SubjectID, UserPrefix) || ids.Valid(p.SubjectID, BotPrefix)) {
		return apierr.New(apierr.Unauthenticated, "the call has no valid principal")
	}
	return nil
}

// now returns the current time as resources record it.
func (s *Service) timestamp() time.Time { return resource.Timestamp(s.now()) }

// uri returns {base_url}/<collection>/<id>.
func (s *Service) uri(collection, id string) string {
	return s.baseURL + "/" + collection + "/" + id
}

// ref returns the Ref of id in collection.
func (s *Service) ref(collection, id string) resource.Ref {
	return resource.Ref{ID: id, URI: s.uri(collection, id)}
}

// refs returns the Refs of ids in collection; never nil.
func (s *Service) refs(collection string, ids []string) []resource.Ref {
	out := make([]resource.Ref, 0, len(ids))
	for _, id := range ids {
		out = append(out, s.ref(collection, id))
	}
	return out
}

// ListOptions selects a page of a list.
type ListOptions struct {
	// Limit is the page size, 1..100. Zero means 100.
	Limit int
	// BeforeID is the cursor: the page starts after (older than) this ID.
	// Empty starts at the newest.
	BeforeID string
	// Filter, when not empty, is a CEL expression over obj, the resource
	// as the API shows it (see package [filter]): the page holds only the
	// resources it matches. A page then scans at most [MaxFilterScan]
	// resources and spends at most about [MaxFilterPageCost] evaluating
	// the filter: when it reaches either bound before it has Limit
	// matches, it returns the matches so far (possibly none) and a next
	// page that continues after the last resource scanned. NextPageURI
	// keeps the filter. A filter that reads a field computed by a store
	// read per resource (a backend's obj.tunnels) scans at most
	// [MaxPageSize] resources per page.
	Filter string
	// ItemsAsJSON asks for the page's items as the JSON the API answers
	// for them ([Page.AppendItemsJSON]) instead of as values in
	// [Page.Items], for a transport that only writes the page out. A list
	// honours it where it can ([Page.Encoded] tells): without a Filter,
	// for kinds whose items' JSON depends on the stored record alone
	// (credentials); the page is then mostly copies of encodings cached
	// with the records (see [Options.CacheBytes]). Elsewhere Items is
	// filled as without it.
	ItemsAsJSON bool
}

// MaxFilterScan is the largest number of resources one filtered page
// reads, matching or not, so that a filter that matches nothing cannot
// make one request read a whole collection.
const MaxFilterScan = 10 * MaxPageSize

// MaxFilterPageCost bounds the total cost, in CEL's cost units, of the
// filter evaluations of one page (each is bounded by
// [policy.MaxEvaluationCost]): a page whose evaluations reach it ends
// after the resource that did, as at [MaxFilterScan].
const MaxFilterPageCost = 10 * policy.MaxEvaluationCost

// MaxPageSize is the largest allowed [ListOptions.Limit], and the default.
const MaxPageSize = 100

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

	encoded   bool     // asked with ListOptions.ItemsAsJSON and given so: Items is nil
	itemsJSON [][]byte // when encoded, each item's JSON; shared with the cache: never changed
}

// Encoded reports whether the page holds its items as JSON, asked for
// with [ListOptions.ItemsAsJSON]: Items is then nil, and
// [Page.AppendItemsJSON] gives them.
func (pg *Page[T]) Encoded() bool { return pg.encoded }

// AppendItemsJSON appends the page's items to dst as a JSON array, each
// item as the API answers it (as encoding/json marshals Items), and
// returns the extended buffer.
func (pg *Page[T]) AppendItemsJSON(dst []byte) ([]byte, error) {
	if !pg.encoded {
		items := pg.Items
		if items == nil {
			items = []T{}
		}
		b, err := json.Marshal(items)
		return append(dst, b...), err
	}
	dst = append(dst, '[')
	for i, b := range pg.itemsJSON {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, b...)
	}
	return append(dst, ']'), nil
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
// as that takes. It ignores opts.ItemsAsJSON: it yields values.
//
//	for c, err := range edgeplane.AllWith(ctx, p, svc.ListCredentials, edgeplane.ListOptions{Filter: `obj.owner_id == "usr_..."`}) { ... }
func AllWith[T any](ctx context.Context, p Principal, list ListFunc[T], opts ListOptions) iter.Seq2[T, error] {
	opts.ItemsAsJSON = false
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

func (k kindInfo) notFound(id string) error {
	return apierr.NotFoundf("%s %s not found", k.noun, echoID(id))
}

// maxEchoedID bounds how much of a caller's ID a message repeats: a valid
// ID is at most 36 bytes, so a longer one is shown cut (at a UTF-8
// boundary) and marked, never echoed whole.
const maxEchoedID = 64

func echoID(id string) string {
	if len(id) <= maxEchoedID {
		return id
	}
	cut := maxEchoedID
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut] + "…"
}

// get loads and decodes the record id of form f's kind in p's account. A
// malformed ID is simply not found.
func get[M any](ctx context.Context, s *Service, p Principal, f form[M], id string) (*M, store.Record, error) {
	if err := p.check(); err != nil {
		return nil, store.Record{}, err
	}
	if !ids.Valid(id, f.prefix) {
		return nil, store.Record{}, f.notFound(id)
	}
	v, rec, err := f.read(ctx, s, p.AccountID, id)
	if err != nil {
		return nil, store.Record{}, s.storeErr(err, *f.kindInfo, id)
	}
	return v, rec, nil
}

// create stores v as a new record of form f's kind in p's account,
// reported as the kind's created event. A missing reference is returned
// as the store's error, for the caller to name the field that held it.
func create[M any](ctx context.Context, s *Service, p Principal, f form[M], id, parent string, v *M, refs []string, keys ...string) error {
	rec := store.Record{Kind: f.kind, AccountID: p.AccountID, ID: id, ParentID: parent, Refs: refs, Keys: keys}
	if err := f.encode(s, v, &rec); err != nil {
		return err
	}
	if err := s.store.Create(s.reporting(ctx, f.event, events.Created), rec); err != nil {
		var miss *store.MissingRefError
		if errors.As(err, &miss) {
			return err // the caller names the field
		}
		return s.storeErr(err, *f.kindInfo, id)
	}
	return nil
}

// update runs mutate on the decoded record inside the store's atomic
// update and returns the stored result. mutate may also set the record's
// Keys and Refs. Like the store's callback, mutate may run more than once
// and must have no effect but on its arguments.
func update[M any](ctx context.Context, s *Service, p Principal, f form[M], id string, mutate func(v *M, rec *store.Record) error) (*M, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if !ids.Valid(id, f.prefix) {
		return nil, f.notFound(id)
	}
	var (
		out *M
		doc any // what out was saved as
	)
	t := s.cache.note()
	rec, err := s.store.Update(s.reporting(ctx, f.event, events.Updated), f.kind, p.AccountID, id, func(rec *store.Record) error {
		v, err := f.current(s, *rec)
		if err != nil {
			return err
		}
		if err := mutate(v, rec); err != nil {
			return err
		}
		d, err := f.encodeDoc(s, v, rec)
		if err != nil {
			return err
		}
		out, doc = v, d
		return nil
	})
	if err != nil {
		return nil, s.storeErr(err, *f.kindInfo, id)
	}
	if f.own != nil {
		s.cache.putWritten(t, rec, f.own(doc))
	}
	return out, nil
}

// remove deletes the record id of kind k in p's account, reported as the
// kind's deleted event.
func (s *Service) remove(ctx context.Context, p Principal, k kindInfo, id string) error {
	if err := p.check(); err != nil {
		return err
	}
	if !ids.Valid(id, k.prefix) {
		return k.notFound(id)
	}
	if err := s.store.Delete(s.reporting(ctx, k.event, events.Deleted), k.kind, p.AccountID, id); err != nil {
		if inUse := s.explainInUse(ctx, p.AccountID, err); inUse != nil {
			return inUse // names the edge modules that hold the reference
		}
		return s.storeErr(err, k, id)
	}
	return nil
}

// list returns one page of records of form f's kind (children of parent
// when set), decoded and presented.
func list[M any](ctx context.Context, s *Service, p Principal, f form[M], parent, collectionPath string, opts ListOptions, present func(*M, store.Record)) (*Page[M], error) {
	return listAs(ctx, s, p, f, parent, collectionPath, opts, func(v *M, rec store.Record) (*M, error) {
		present(v, rec)
		return v, nil
	}, lateField[M]{})
}

// lateField is a field of a listed V that costs a store read to compute
// (a backend's tunnels): listAs fills it before filtering when the filter
// reads it, and otherwise only for the resources that match. The zero
// value is no such field.
type lateField[V any] struct {
	name string           // the field's JSON name
	fill func(v *V) error // computes it
}

// listAs returns one page of records of form f's kind (children of parent
// when set), each decoded and turned by show into the V the API shows
// (and completed by late).
// opts.Filter, when set, is compiled for V and evaluated on what show
// returns; the page then scans the store until it holds opts.Limit matches,
// the list ends, MaxFilterScan records were read or the evaluations cost
// MaxFilterPageCost.
func listAs[M, V any](ctx context.Context, s *Service, p Principal, f form[M], parent, collectionPath string, opts ListOptions,
	show func(*M, store.Record) (*V, error), late lateField[V]) (*Page[V], error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	limit := pageLimit(&vs, *f.kindInfo, opts)
	var match *filter.Filter[V]
	if opts.Filter != "" {
		m, err := filter.Compile[V](s.filters, opts.Filter)
		if err != nil {
			vs.AddError("", err)
		}
		match = m
	}
	if err := vs.Err(); err != nil {
		return nil, err
	}
	fillEarly := late.fill != nil && match != nil && match.Reads(late.name)
	page := &Page[V]{URI: s.baseURL + "/" + collectionPath}
	budget, chunk := limit, limit // records to scan in all, and per store read
	switch {
	case fillEarly:
		budget = MaxPageSize // each record scanned costs another store read
	case match != nil:
		budget = MaxFilterScan
	}
	cursor, scanned, spent := opts.BeforeID, 0, uint64(0)
	for {
		t := s.cache.note()
		want := min(chunk, budget-scanned)
		recs, err := s.store.List(ctx, store.Query{Kind: f.kind, AccountID: p.AccountID, ParentID: parent, BeforeID: cursor, Limit: want + 1})
		if err != nil {
			return nil, s.storeErr(err, *f.kindInfo, "")
		}
		more := len(recs) > want // records remain after recs[:want]
		recs = recs[:min(len(recs), want)]
		if page.Items == nil {
			page.Items = make([]V, 0, min(len(recs), limit))
		}
		for i, rec := range recs {
			scanned++
			m, err := f.listed(s, t, rec)
			if err != nil {
				return nil, err
			}
			v, err := show(m, rec)
			if err != nil {
				return nil, err
			}
			if fillEarly {
				if err := late.fill(v); err != nil {
					return nil, err
				}
			}
			matched := true
			if match != nil {
				var c uint64
				matched, c = match.Eval(v)
				spent += c
			}
			if matched {
				if late.fill != nil && !fillEarly {
					if err := late.fill(v); err != nil {
						return nil, err
					}
				}
				page.Items = append(page.Items, *v)
			}
			if len(page.Items) == limit || spent >= MaxFilterPageCost {
				if i < len(recs)-1 || more {
					page.next(rec.ID, limit, opts.Filter)
				}
				return page, nil
			}
		}
		if !more || len(recs) == 0 {
			return page, nil
		}
		cursor = recs[len(recs)-1].ID
		if scanned >= budget {
			page.next(cursor, limit, opts.Filter)
			return page, nil
		}
		chunk = min(2*chunk, MaxPageSize)
	}
}

// pageLimit returns the page size opts asks for, and adds to vs what is
// wrong with its limit and cursor for a list of kind k.
func pageLimit(vs *apierr.Violations, k kindInfo, opts ListOptions) int {
	limit := opts.Limit
	switch {
	case limit == 0:
		limit = MaxPageSize
	case limit < 1 || limit > MaxPageSize:
		vs.Add("limit", "must be between 1 and %d, got %d", MaxPageSize, limit)
	}
	if opts.BeforeID != "" && !ids.Valid(opts.BeforeID, k.prefix) {
		vs.Add("before_id", "must be a %s ID (%s followed by %d characters)", k.noun, k.prefix, ids.Len)
	}
	return limit
}

// listEncoded is list for a kind whose items' JSON is a function of the
// stored record alone: present must read nothing but the model, the
// record and the Service's configuration (no clock, no other record).
// Asked for ItemsAsJSON without a filter, it answers the page as the JSON
// of its items, each the encoding cached with its record's version when
// the cache holds it (made and cached otherwise), so that a page costs a
// store list and copies, not a decode, a model and an encode per item.
func listEncoded[M any](ctx context.Context, s *Service, p Principal, f form[M], parent, collectionPath string, opts ListOptions, present func(*M, store.Record)) (*Page[M], error) {
	if !opts.ItemsAsJSON || opts.Filter != "" {
		return list(ctx, s, p, f, parent, collectionPath, opts, present)
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	limit := pageLimit(&vs, *f.kindInfo, opts)
	if err := vs.Err(); err != nil {
		return nil, err
	}
	t := s.cache.note()
	recs, err := s.store.List(ctx, store.Query{Kind: f.kind, AccountID: p.AccountID, ParentID: parent, BeforeID: opts.BeforeID, Limit: limit + 1})
	if err != nil {
		return nil, s.storeErr(err, *f.kindInfo, "")
	}
	page := &Page[M]{URI: s.baseURL + "/" + collectionPath, encoded: true}
	if len(recs) > limit {
		recs = recs[:limit]
		page.next(recs[limit-1].ID, limit, "")
	}
	page.itemsJSON = make([][]byte, len(recs))
	for i, rec := range recs {
		b, err := f.listedJSON(s, t, rec, present)
		if err != nil {
			return nil, err
		}
		page.itemsJSON[i] = b
	}
	return page, nil
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

// storeErr turns a store error into the error a caller sees: typed errors
// keep their identity but get a client-safe message; context errors pass
// through; anything unexpected becomes Internal and is logged.
func (s *Service) storeErr(err error, k kindInfo, id string) error {
	if err == nil {
		return nil
	}
	var (
		ae   *apierr.Error
		dup  *store.DuplicateError
		miss *store.MissingRefError
		use  *store.InUseError
	)
	switch {
	case errors.As(err, &use):
		return &apierr.Error{Code: apierr.Conflict, Err: err,
			Msg: describeID(use.ID) + " is still referenced by " + describeIDs(use.Referrers) + "; remove those references first"}
	case errors.As(err, &dup):
		return &apierr.Error{Code: apierr.Conflict, Err: err, Msg: "another " + k.noun + " already has that value"}
	case errors.As(err, &miss):
		return &apierr.Error{Code: apierr.InvalidArgument, Err: err, Msg: describeID(miss.ID) + " does not exist",
			Violations: []apierr.Violation{{Reason: describeID(miss.ID) + " does not exist"}}}
	case errors.Is(err, apierr.ErrNotFound) && id != "":
		return k.notFound(id)
	case errors.As(err, &ae):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	s.log.Error("store failure", "kind", string(k.kind), "id", id, "err", err)
	return apierr.Wrap(apierr.Internal, err, "internal error")
}

func describeIDs(list []string) string {
	out := make([]string, len(list))
	for i, id := range list {
		out[i] = describeID(id)
	}
	return strings.Join(out, ", ")
}
