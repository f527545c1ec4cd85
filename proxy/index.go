package proxy

import (
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/edgeplane/edgeplane/ipaccess"
)

// shardCount is the number of maps the edges are spread over: adding or
// removing an edge copies one shard's map, not all of them.
const shardCount = 64

// slot holds the current snapshot of one edge; nil once the edge is gone.
type slot struct{ p atomic.Pointer[Edge] }

// tracked is what the follower knows of a published edge: where it is and
// what its config depends on.
type tracked struct {
	account    string
	slot       *slot
	ipPolicies []string
	backends   []string
	hosts      []string // of an HTTPS or TLS edge, or an https or tls endpoint
	plain      []string // of an http endpoint
	ports      []string // of a TCP edge or tcp endpoint
	// group is the key of the pool a pooled endpoint is a member of
	// ("" for none; see pool.go).
	group    string
	internal []string // of an internal endpoint: its internalKey
	// endpoint says that the ID is an endpoint's; certs that the proxy
	// terminates TLS for its hosts (every HTTPS and TLS edge's, an
	// endpoint's as it says).
	endpoint, certs bool
}

// certHosts returns the hosts whose certificates the snapshot holds.
func (t *tracked) certHosts() []string {
	if !t.certs {
		return nil
	}
	return t.hosts
}

// updates are the table changes of one apply, published together by
// flush: a new slot or nil (removed) by key.
type updates struct {
	edges, hosts, ports            map[string]*slot
	eps, epHosts, epPlain, epPorts map[string]*slot
}

func newUpdates() *updates {
	return &updates{edges: map[string]*slot{}, hosts: map[string]*slot{}, ports: map[string]*slot{},
		eps: map[string]*slot{}, epHosts: map[string]*slot{}, epPlain: map[string]*slot{}, epPorts: map[string]*slot{}}
}

// flush publishes u's changes and empties it.
func (c *Configs) flush(u *updates) {
	c.count.Add(int64(c.edges.set(u.edges)))
	c.hosts.set(u.hosts)
	c.ports.set(u.ports)
	c.epCount.Add(int64(c.eps.set(u.eps)))
	c.epHosts.set(u.epHosts)
	c.epPlain.set(u.epPlain)
	c.epPorts.set(u.epPorts)
	if len(u.ports) > 0 || len(u.epPorts) > 0 {
		ports := make([]int, 0, len(c.portOf)+len(c.epPortOf))
		for _, owners := range []map[string]string{c.portOf, c.epPortOf} {
			for p := range owners {
				n, _ := strconv.Atoi(p)
				ports = append(ports, n)
			}
		}
		slices.Sort(ports)
		ports = slices.Compact(ports) // a port an edge and an endpoint both claim
		c.portsMu.Lock()
		c.portList = ports
		close(c.portsNext)
		c.portsNext = make(chan struct{})
		c.portsMu.Unlock()
	}
	for _, m := range []map[string]*slot{u.edges, u.hosts, u.ports, u.eps, u.epHosts, u.epPlain, u.epPorts} {
		clear(m)
	}
}

// publish makes e the snapshot of edge id and indexes what it depends on
// and the hosts it serves. A new edge's slot, and the hosts table
// changes, go to u.
func (c *Configs) publish(id, account string, e *Edge, u *updates) {
	t := c.known[id]
	if t == nil {
		t = &tracked{account: account, slot: &slot{}, endpoint: e.ep != nil}
		c.known[id] = t
		if t.endpoint {
			u.eps[id] = t.slot
		} else {
			u.edges[id] = t.slot
		}
		if c.byAccount[account] == nil {
			c.byAccount[account] = map[string]bool{}
		}
		c.byAccount[account][id] = true
	}
	c.unindex(id, t)
	t.ipPolicies, t.backends = e.ipPolicyIDs(), e.backendIDs()
	c.noteRestrictions(account, e.Restrictions)
	for _, p := range t.ipPolicies {
		addEdge(c.byIPPolicy, account, p, id)
	}
	for _, b := range t.backends {
		addEdge(c.byBackend, account, b, id)
	}
	// The snapshot first, then the tables: a reader that finds the slot
	// by a new host finds the edge that serves it.
	t.slot.p.Store(e)
	switch {
	case e.ep != nil && e.Endpoint.PoolingEnabled:
		t.certs = e.ep.terminates
		c.joinGroup(id, t, e, u)
	case e.ep != nil:
		t.certs = e.ep.terminates
		c.leaveGroup(id, t, u)
		c.serveEndpoint(id, t, c.unpooled(id, e.Endpoint.AccountID, e.ep), u)
	case e.TCP != nil:
		c.servePorts(id, t, e.TCP.Hostports, u)
		for _, p := range t.ports {
			c.clash(id, c.epPortOf[p], p)
		}
	default:
		t.certs = true
		c.serve(id, t, e.Hostports(), u)
		for _, h := range t.hosts {
			c.clash(id, c.epHostOf[h], h)
		}
	}
}

// serve makes the hosts table send the hosts of edge id's hostports to
// its slot, and drop the ones it no longer serves.
func (c *Configs) serve(id string, t *tracked, hostports []string, u *updates) {
	t.hosts = claim(id, t.slot, t.hosts, hostsOf(hostports), c.hostOf, u.hosts)
}

// servePorts makes the ports table send the ports of TCP edge id's
// hostports to its slot, and drop the ones it no longer serves.
func (c *Configs) servePorts(id string, t *tracked, hostports []string, u *updates) {
	var ports []string
	for _, hp := range hostports {
		if p := hostportPort(hp); !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	t.ports = claim(id, t.slot, t.ports, ports, c.portOf, u.ports)
}

// claim records in owner, and in the table updates u, that edge id (its
// slot) serves keys, and drops the keys it held (held) and no longer
// serves, unless another edge took them meanwhile (changes are applied in
// any order). It returns keys.
func claim(id string, s *slot, held, keys []string, owner map[string]string, u map[string]*slot) []string {
	for _, k := range held {
		if !slices.Contains(keys, k) && owner[k] == id {
			delete(owner, k)
			u[k] = nil
		}
	}
	for _, k := range keys {
		if owner[k] != id {
			owner[k] = id
			u[k] = s
		}
	}
	return keys
}

// hostportPort returns the port of a canonical hostport.
func hostportPort(hp string) string { return hp[strings.LastIndexByte(hp, ':')+1:] }

// drop removes edge id: its snapshot at once, its slot and hosts from
// the tables with the next flush, and its index entries.
func (c *Configs) drop(id string, u *updates) {
	t := c.known[id]
	if t == nil {
		return
	}
	if t.endpoint {
		c.leaveGroup(id, t, u)
		c.serveEndpoint(id, t, nil, u)
		u.eps[id] = nil
	} else {
		c.serve(id, t, nil, u)
		c.servePorts(id, t, nil, u)
		u.edges[id] = nil
	}
	c.unindex(id, t)
	delete(c.known, id)
	delete(c.byAccount[t.account], id)
	if len(c.byAccount[t.account]) == 0 {
		delete(c.byAccount, t.account)
		delete(c.restrictBy, t.account)
	}
	t.slot.p.Store(nil)
}

// noteRestrictions records the IP policies the endpoint restrictions of
// account use, so that a change to one refreshes the account's edges.
func (c *Configs) noteRestrictions(account string, r *ipaccess.EndpointRestrictions) {
	if r == nil || len(r.IPPolicyIDs) == 0 {
		delete(c.restrictBy, account)
		return
	}
	m := make(map[string]bool, len(r.IPPolicyIDs))
	for _, p := range r.IPPolicyIDs {
		m[p] = true
	}
	c.restrictBy[account] = m
}

func (c *Configs) unindex(id string, t *tracked) {
	for _, p := range t.ipPolicies {
		removeEdge(c.byIPPolicy, t.account, p, id)
	}
	for _, b := range t.backends {
		removeEdge(c.byBackend, t.account, b, id)
	}
}

func addEdge(idx map[string]map[string]map[string]bool, account, dep, edgeID string) {
	byDep := idx[account]
	if byDep == nil {
		byDep = map[string]map[string]bool{}
		idx[account] = byDep
	}
	users := byDep[dep]
	if users == nil {
		users = map[string]bool{}
		byDep[dep] = users
	}
	users[edgeID] = true
}

func removeEdge(idx map[string]map[string]map[string]bool, account, dep, edgeID string) {
	users := idx[account][dep]
	delete(users, edgeID)
	if len(users) == 0 {
		delete(idx[account], dep)
		if len(idx[account]) == 0 {
			delete(idx, account)
		}
	}
}
