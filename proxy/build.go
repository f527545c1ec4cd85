package proxy

import (
	"context"
	"crypto/tls"
	"maps"
	"slices"
	"sync"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/kinds"
)

// compileChunk is how many edges apply compiles before it publishes
// them.
const compileChunk = 256

// apply does the work p holds, reading the store at rev or later, and
// publishes each snapshot as soon as its work is done. Work that fails
// for a reason other than what is stored stays in p, and apply returns
// the first such error.
func (c *Configs) apply(ctx context.Context, p *pending, rev int64) error {
	if err := c.synced(ctx, rev); err != nil {
		return err
	}
	rd := newReads(c)
	var firstErr error
	keep := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	u := newUpdates()
	for id := range p.remove {
		c.drop(id, u)
	}
	clear(p.remove)

	// Compile the edges, Parallelism at a time, and publish them a chunk
	// at a time: a reload holds at most one chunk of new configs besides
	// the published ones.
	ids := slices.Sorted(maps.Keys(p.compile))
	compiled := map[string]bool{}
	for chunk := range slices.Chunk(ids, compileChunk) {
		results := make([]built, len(chunk))
		sem := make(chan struct{}, c.par)
		var wg sync.WaitGroup
		for i, id := range chunk {
			sem <- struct{}{}
			wg.Add(1)
			account := p.compile[id]
			if edgeKind(id) == kindEndpoint {
				listed, old := p.listed[id], c.snapshot(id)
				go func() {
					defer func() { <-sem; wg.Done() }()
					results[i] = c.buildEndpoint(ctx, rd, account, id, listed, old, rev)
				}()
				continue
			}
			go func() {
				defer func() { <-sem; wg.Done() }()
				results[i] = c.build(ctx, rd, account, id, rev)
			}()
		}
		wg.Wait()
		for _, b := range results {
			switch {
			case b.err == nil:
				c.publish(b.id, b.account, b.edge, u)
				compiled[b.id] = true
				delete(p.compile, b.id)
				delete(p.listed, b.id)
			case permanent(b.err):
				if apierr.CodeOf(b.err) != apierr.NotFound {
					c.dropped.Add(1)
					c.log.Error("edge configs: the config of "+edgeNoun(b.id)+" cannot be built; it is not served", "account", b.account, "edge", b.id, "err", b.err)
				}
				c.drop(b.id, u)
				delete(p.compile, b.id)
				delete(p.listed, b.id)
			default:
				keep(b.err)
			}
		}
		c.flush(u)
	}

	// Edges not compiled whose tunnels or certificates changed get a new
	// snapshot with the same config.
	for a := range p.acctTun {
		for id := range c.byBackend[a] {
			p.tunnels[backendKey{a, id}] = true
		}
	}
	clear(p.acctTun)
	type refresh struct {
		tunnels  map[string][]backends.Tunnel // by backend
		certs    bool
		restrict *ipaccess.EndpointRestrictions
	}
	refreshed := map[string]*refresh{} // by edge ID
	get := func(id string) *refresh {
		if refreshed[id] == nil {
			refreshed[id] = &refresh{tunnels: map[string][]backends.Tunnel{}}
		}
		return refreshed[id]
	}
	refreshUsers(p.tunnels, func(k backendKey) map[string]bool { return c.byBackend[k.account][k.id] }, compiled, keep,
		func(k backendKey) ([]backends.Tunnel, error) { return rd.tunnelsOf(ctx, k) },
		func(id string, k backendKey, ts []backends.Tunnel) { get(id).tunnels[k.id] = ts })
	for a := range p.acctDom {
		for id := range c.byAccount[a] {
			if !compiled[id] && len(c.known[id].certHosts()) > 0 {
				get(id).certs = true
			}
		}
	}
	refreshUsers(p.acctIPX, func(a string) map[string]bool { return c.byAccount[a] }, compiled, keep,
		func(a string) (*ipaccess.EndpointRestrictions, error) {
			v, err := rd.restrictionsOf(ctx, a)
			if err == nil {
				c.noteRestrictions(a, v)
			}
			return v, err
		},
		func(id, _ string, v *ipaccess.EndpointRestrictions) { get(id).restrict = v })
	failedCerts := false
	for id, r := range refreshed {
		t := c.known[id]
		old := t.slot.p.Load()
		tunnels := old.Tunnels
		if len(r.tunnels) > 0 {
			tunnels = maps.Clone(old.Tunnels)
			maps.Copy(tunnels, r.tunnels)
		}
		certs := old.Certificates
		if r.certs {
			var err error
			if certs, err = c.readCerts(ctx, rd, t.account, t.certHosts()); err != nil {
				keep(err)
				failedCerts = true
				certs = old.Certificates
			}
		}
		base := old.base()
		if r.restrict != nil {
			base.Restrictions = r.restrict
		}
		t.slot.p.Store(newEdge(base, tunnels, certs, rev, old))
		c.refreshes.Add(1)
	}
	if !failedCerts {
		clear(p.acctDom)
	}
	c.flush(u)
	return firstErr
}

// refreshUsers does the refresh work pending holds: for each key whose
// users (edges) include one not compiled in this apply (compiling read
// everything anew), it reads the key's new value once and sets it on each
// such edge, and the key's work is done; a read that fails is kept (keep)
// and stays pending, to be retried.
func refreshUsers[K comparable, V any](pending map[K]bool, users func(K) map[string]bool, compiled map[string]bool, keep func(error),
	read func(K) (V, error), set func(id string, k K, v V)) {
	for k := range pending {
		us := users(k)
		needed := false
		for id := range us {
			if needed = !compiled[id]; needed {
				break
			}
		}
		if !needed {
			delete(pending, k)
			continue
		}
		v, err := read(k)
		if err != nil {
			keep(err)
			continue
		}
		delete(pending, k)
		for id := range us {
			if !compiled[id] {
				set(id, k, v)
			}
		}
	}
}

// unreadableRestrictions stand for an account's endpoint restrictions
// that cannot be read: one enforced restriction that refuses every
// address.
var unreadableRestrictions = func() *ipaccess.EndpointRestrictions {
	all, err := ipaccess.NewSet([]ipaccess.Rule{{CIDR: "0.0.0.0/0", Action: ipaccess.ActionDeny}, {CIDR: "::/0", Action: ipaccess.ActionDeny}})
	if err != nil {
		panic(err) // two valid rules
	}
	return &ipaccess.EndpointRestrictions{Enforcer: ipaccess.NewEnforcer(
		[]ipaccess.Restriction{{ID: "(unreadable IP restrictions)", Enforced: true}}, []*ipaccess.Set{all})}
}()

// snapshot returns the published snapshot of edge or endpoint id, or
// nil.
func (c *Configs) snapshot(id string) *Edge {
	if t := c.known[id]; t != nil {
		return t.slot.p.Load()
	}
	return nil
}

// built is the outcome of compiling one edge or endpoint.
type built struct {
	id, account string
	edge        *Edge
	err         error
}

// build reads and compiles one edge, its backends' tunnels and its hosts'
// certificates.
func (c *Configs) build(ctx context.Context, rd *reads, account, id string, rev int64) built {
	b := built{id: id, account: account}
	var (
		base Edge
		err  error
	)
	switch edgeKind(id) {
	case kinds.TLSEdge:
		base.TLS, err = c.compileTLS(ctx, account, id)
	case kinds.TCPEdge:
		base.TCP, err = c.compileTCP(ctx, account, id)
	default:
		base.Config, err = c.compile(ctx, account, id)
	}
	c.compiles.Add(1)
	if err == nil {
		base.Restrictions, err = rd.restrictionsOf(ctx, account)
	}
	if err != nil {
		b.err = err
		return b
	}
	tunnels := map[string][]backends.Tunnel{}
	for _, bid := range base.backendIDs() {
		ts, err := rd.tunnelsOf(ctx, backendKey{account, bid})
		if err != nil {
			b.err = err
			return b
		}
		tunnels[bid] = ts
	}
	var certs map[string]*tls.Certificate
	if base.TCP == nil {
		if certs, err = c.readCerts(ctx, rd, account, hostsOf(base.Hostports())); err != nil {
			b.err = err
			return b
		}
	}
	b.edge = newEdge(base, tunnels, certs, rev, nil)
	return b
}

// readCerts reads the certificates of an edge's hosts.
func (c *Configs) readCerts(ctx context.Context, rd *reads, account string, hosts []string) (map[string]*tls.Certificate, error) {
	certs := make(map[string]*tls.Certificate, len(hosts))
	for _, h := range hosts {
		cert, err := rd.certOf(ctx, backendKey{account, h})
		if err != nil {
			return nil, err
		}
		if cert != nil {
			certs[h] = cert
		}
	}
	return certs, nil
}

// hostsOf returns the hosts of hostports, without repeats.
func hostsOf(hostports []string) []string {
	var hosts []string
	for _, hp := range hostports {
		if h := edges.HostportHost(hp); !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// permanent reports whether err says that an edge's config cannot be
// built from what is stored (retrying reads the same), rather than that
// the store could not be read.
func permanent(err error) bool {
	switch apierr.CodeOf(err) {
	case apierr.NotFound, apierr.FailedPrecondition, apierr.InvalidArgument, apierr.PermissionDenied:
		return true
	}
	return false
}

// reads caches, for one apply, the tunnels of each backend, the
// certificate of each host and the endpoint restrictions of each account
// it read, so that edges sharing them read them once.
type reads struct {
	c        *Configs
	tunnels  memo[backendKey, []backends.Tunnel]
	certs    memo[backendKey, *tls.Certificate] // {account, host}; nil: none
	restrict memo[string, *ipaccess.EndpointRestrictions]
}

func newReads(c *Configs) *reads { return &reads{c: c} }

// memo is one kind of read of an apply: each key read at most once, its
// value shared by every edge that asks. A failed read is not kept, so the
// next edge that asks reads again.
type memo[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]V
}

// get returns k's value, from read the first time.
func (m *memo[K, V]) get(k K, read func() (V, error)) (V, error) {
	m.mu.Lock()
	v, ok := m.m[k]
	m.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := read()
	if err != nil {
		var zero V
		return zero, err
	}
	m.mu.Lock()
	if m.m == nil {
		m.m = map[K]V{}
	}
	m.m[k] = v
	m.mu.Unlock()
	return v, nil
}

// restrictionsOf returns the endpoint restrictions of an account. When
// what is stored cannot be read as restrictions (more than the cap, from
// a store written by other code), it returns [unreadableRestrictions]:
// the account's edges stay tracked and refuse every client (fail closed)
// until a change to the account's restrictions reads them again.
func (r *reads) restrictionsOf(ctx context.Context, account string) (*ipaccess.EndpointRestrictions, error) {
	return r.restrict.get(account, func() (*ipaccess.EndpointRestrictions, error) {
		v, err := r.c.restrict(ctx, account)
		if permanent(err) {
			r.c.log.Error("edge configs: the IP restrictions of an account cannot be read; its edges refuse every client", "account", account, "err", err)
			return unreadableRestrictions, nil
		}
		return v, err
	})
}

func (r *reads) tunnelsOf(ctx context.Context, k backendKey) ([]backends.Tunnel, error) {
	return r.tunnels.get(k, func() ([]backends.Tunnel, error) {
		ts, err := r.c.tunnels(ctx, k.account, k.id)
		if apierr.CodeOf(err) == apierr.NotFound {
			// Deleted meanwhile (a route that uses a backend keeps it from
			// being deleted, so the route is changing too): no tunnels.
			return []backends.Tunnel{}, nil
		}
		return ts, err
	})
}

// certOf returns the parsed certificate of a host of an account, nil
// when it has none (no certificate, or one that does not parse: logged).
func (r *reads) certOf(ctx context.Context, k backendKey) (*tls.Certificate, error) {
	return r.certs.get(k, func() (*tls.Certificate, error) {
		hc, err := r.c.certs(ctx, k.account, k.id)
		switch {
		case err == nil:
			pair, perr := tls.X509KeyPair([]byte(hc.CertificatePEM), []byte(hc.KeyPEM))
			if perr != nil {
				r.c.log.Error("edge configs: the TLS certificate of a host does not load; TLS for it fails", "account", k.account, "host", k.id, "certificate", hc.CertificateID, "err", perr)
				return nil, nil
			}
			return &pair, nil
		case permanent(err):
			return nil, nil // no certificate: the host is served without TLS only
		}
		return nil, err
	})
}
