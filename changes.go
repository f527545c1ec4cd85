package edgeplane

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// Events are read from the store's change feed, so a change is reported
// if and only if its write committed, in commit order, even across a
// crash between the write and the report. Each write that reports a change
// carries, as its store note, the event type and the time of the change
// (reporting); the follower goroutine reads the feed, makes the object
// each event shows from the change's data, and hands it to the delivery
// queue, waiting while the queue is full. Unlabelled writes report
// nothing, except deletes: a record removed with its parent (a route with
// its edge, tunnels with their credential, sources with their
// subscription) is reported as "<kind>_deleted.v0" like a deleted one.

// noteSep separates the event type from the time in a write's note.
const noteSep = "@"

// reporting returns ctx labelled so that the write made with it is
// reported as the change verb of ev, at the current time. A context
// already labelled (a module change reported under the module's name) and
// a kind that reports nothing (zero ev) are returned unchanged.
func (s *Service) reporting(ctx context.Context, ev eventName, verb string) context.Context {
	if ev == (eventName{}) || store.NoteFrom(ctx) != "" {
		return ctx
	}
	var buf [96]byte // room for every note: one allocation, the string
	note := append(events.AppendType(buf[:0], ev.name, verb), noteSep...)
	note = s.now().UTC().AppendFormat(note, time.RFC3339Nano)
	return store.WithNote(ctx, string(note))
}

// parseNote splits a note written by reporting.
func parseNote(note string) (typ string, at time.Time, ok bool) {
	typ, stamp, ok := strings.Cut(note, noteSep)
	if !ok {
		return "", time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, stamp)
	return typ, at, err == nil
}

// follower reads the change feed and reports the changes.
type follower struct {
	stopAt atomic.Int64       // the last revision to report once stopping
	stop   context.CancelFunc // ends waiting for new changes
	abort  context.CancelFunc // ends the follower: Close gave up
	once   sync.Once
	done   chan struct{} // closed when the follower has returned
}

// followPage is how many changes the follower reads at a time, and
// followRetry how long it waits after a store error.
const (
	followPage  = 256
	followRetry = time.Second
)

// startFollowing starts reporting the changes committed after now.
func (s *Service) startFollowing() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	rev, err := s.store.Revision(ctx)
	cancel()
	if err != nil {
		s.log.Error("event delivery: cannot read the store's revision; changes before the store answers are not reported", "err", err)
		rev = -1
	}
	abortCtx, abort := context.WithCancel(context.Background())
	waitCtx, stop := context.WithCancel(abortCtx)
	f := &follower{stop: stop, abort: abort, done: make(chan struct{})}
	f.stopAt.Store(-1)
	s.follow = f
	go s.followChanges(abortCtx, waitCtx, f, rev)
}

// followChanges is the follower goroutine: it reports every change after
// rev until it is stopped (waitCtx ends) and has reported the changes up
// to stopAt, or until it is aborted (ctx ends).
func (s *Service) followChanges(ctx, waitCtx context.Context, f *follower, rev int64) {
	defer close(f.done)
	for {
		if ctx.Err() != nil {
			return
		}
		if rev < 0 { // the starting revision is not known yet
			r, err := s.store.Revision(ctx)
			if err != nil {
				if waitCtx.Err() != nil {
					return // stopping: nothing was known to report
				}
				pause(waitCtx)
				continue
			}
			rev = r
		}
		stopping := waitCtx.Err() != nil
		if stopping && rev >= f.stopAt.Load() {
			return
		}
		changes, err := s.store.Changes(ctx, rev, followPage)
		var compacted *store.CompactedError
		switch {
		case errors.As(err, &compacted):
			s.log.Error("event delivery: the change feed moved past the changes not yet reported; they are lost",
				"after", rev, "oldest", compacted.Oldest)
			rev = -1
			continue
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			s.log.Error("event delivery: cannot read the change feed; retrying", "err", err)
			pause(ctx) // while stopping too: what was committed before Close is still owed
			continue
		}
		for _, c := range changes {
			if stopping && c.Revision > f.stopAt.Load() {
				return
			}
			s.report(ctx, c)
			rev = c.Revision
		}
		switch {
		case len(changes) > 0:
		case stopping:
			return // nothing more up to stopAt
		default:
			_ = s.store.Wait(waitCtx, rev) // returns at a commit or when stopped
		}
	}
}

// pause waits followRetry or until ctx ends.
func pause(ctx context.Context) {
	t := time.NewTimer(followRetry)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// report hands the event of one committed change to the delivery queue,
// waiting while it is full, until ctx ends.
func (s *Service) report(ctx context.Context, c store.Change) {
	k, known := kindOf(c.Kind)
	typ, at, labelled := parseNote(c.Note)
	if !labelled {
		if c.Op != store.OpDelete || !known || k.event == (eventName{}) {
			return // a write that reports nothing
		}
		typ, at = k.event.typ(events.Deleted), s.now()
	}
	if !known || !s.eventTypes.Known(typ) {
		return
	}
	obj, err := s.changeObject(c, k)
	if err != nil {
		s.log.Error("event delivery: cannot show a changed record; the change is not reported", "type", typ, "id", c.ID, "err", err)
		return
	}
	s.queue.Put(ctx, events.Change{AccountID: c.AccountID, Type: typ, CreatedAt: resource.Timestamp(at), Object: obj})
}

// changeObject returns what an event shows of a change, as JSON: the
// record as the API shows it after a create or update; for a delete, its
// Ref (a source, which has no ID of its own: its type and URI).
func (s *Service) changeObject(c store.Change, k *kindInfo) ([]byte, error) {
	rec := store.Record{Kind: c.Kind, AccountID: c.AccountID, ID: c.ID, ParentID: c.ParentID, Data: c.Data, Version: c.Revision}
	var obj any
	var err error
	switch {
	case c.Kind == KindEventSource:
		obj, err = presented(s, rec, eventSourceForm, func(v *events.Source, rec store.Record) { s.presentSource(v, rec.ParentID) })
	case c.Op == store.OpDelete:
		obj = s.ref(k.path(c.ParentID), c.ID)
	default:
		obj, err = s.presentStored(rec)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// presentStored decodes a record of a kind that reports changes and
// presents it as the API shows it.
func (s *Service) presentStored(rec store.Record) (any, error) {
	switch rec.Kind {
	case KindCredential:
		return presented(s, rec, credentialForm, s.presentCredential)
	case KindAPIKey:
		return presented(s, rec, apiKeyForm, s.presentAPIKey)
	case KindBot:
		b, err := presented(s, rec, botUserForm, s.presentBotRecord)
		if err != nil {
			return nil, err
		}
		return &b.BotUser, nil
	case KindIPPolicy:
		return presented(s, rec, ipPolicyForm, s.presentIPPolicy)
	case KindIPPolicyRule:
		return presented(s, rec, ipRuleForm, s.presentIPRule)
	case KindIPRestriction:
		return presented(s, rec, ipRestrictionForm, s.presentIPRestriction)
	case KindReservedDomain:
		return presented(s, rec, reservedDomainForm, s.presentReservedDomain)
	case KindTLSCertificate:
		c, err := presented(s, rec, certificateForm, s.presentStoredCertificate)
		if err != nil {
			return nil, err
		}
		return &c.Certificate, nil
	case KindEndpointConfiguration:
		return presented(s, rec, endpointConfigForm, s.presentEndpointConfiguration)
	case KindTunnelGroupBackend:
		b, err := backendForm.decode(s, rec)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return b, s.withTunnels(ctx, Principal{AccountID: rec.AccountID}, b)
	case KindTunnel:
		return presented(s, rec, tunnelForm, s.presentTunnel)
	case KindEventSubscription:
		return presented(s, rec, eventSubscriptionForm, s.presentSubscription)
	case KindHTTPSEdge:
		return presented(s, rec, httpsEdgeForm, s.presentHTTPSEdge)
	case KindHTTPSEdgeRoute:
		return presented(s, rec, httpsRouteForm, s.presentHTTPSRoute)
	case KindTLSEdge:
		return presented(s, rec, tlsEdgeForm, s.presentTLSEdge)
	case KindTCPEdge:
		return presented(s, rec, tcpEdgeForm, s.presentTCPEdge)
	}
	return nil, apierr.New(apierr.Internal, "no presentation of kind %s", rec.Kind)
}

// presented decodes rec in form f and presents it.
func presented[M any](s *Service, rec store.Record, f form[M], present func(*M, store.Record)) (*M, error) {
	v, err := f.decode(s, rec)
	if err != nil {
		return nil, err
	}
	present(v, rec)
	return v, nil
}

// stopFollowing makes the follower report the changes committed up to
// now and return, and waits for it or for ctx.
func (s *Service) stopFollowing(ctx context.Context) error {
	f := s.follow
	f.once.Do(func() {
		rev, err := s.store.Revision(ctx)
		if err != nil {
			rev = 0 // report nothing more
		}
		f.stopAt.Store(rev)
		f.stop()
	})
	select {
	case <-f.done:
		return nil
	case <-ctx.Done():
		f.abort()
		return ctx.Err()
	}
}

// publish is [Host.Publish].
func (s *Service) publish(ctx context.Context, accountID, typ string, obj any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !ids.Valid(accountID, AccountPrefix) {
		return apierr.Invalidf("account_id", "must be an account ID (%s followed by %d base62 characters)", AccountPrefix, ids.Len)
	}
	if err := s.eventTypes.Check(typ); err != nil {
		return err
	}
	if s.queue == nil {
		return nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return apierr.Invalidf("object", "cannot be encoded as JSON")
	}
	s.queue.Enqueue(events.Change{AccountID: accountID, Type: typ, CreatedAt: s.timestamp(), Object: data})
	return nil
}
