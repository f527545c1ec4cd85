// Package acmedns is the edge's small authoritative DNS server for ACME
// DNS-01 challenges, built on github.com/miekg/dns.
//
// A wildcard reserved domain outside the service's own base domains
// ("*.example.com") can only be validated by DNS-01: the CA looks up the
// TXT record _acme-challenge.example.com. The user points that name, by
// a CNAME record, at the domain's acme_challenge_cname_target
// ("<label>.acme.<CNAME base>"), and the operator delegates the zone
// acme.<CNAME base> to this server (an NS record, and the server's
// address record, in the CNAME base's zone), naming it as [Options].NS
// does (edgeplane proxy -dns-ns-name), so that the zone's own NS and SOA
// records agree with the delegation:
//
//	acme.edgeplane-cname.com.  NS  ns1.edgeplane-cname.com.
//	ns1.edgeplane-cname.com.   A   203.0.113.10
//
// The server answers TXT queries for the names of its zones from the
// pending DNS-01 challenges in the store
// ([Host.ACMEChallenge], which the certificate manager,
// package certmanager, stores), so that every edge node answers the
// same; the zone apex answers SOA and NS; every other name of the zones
// is NXDOMAIN, and names outside them are REFUSED, as are the queries of
// a source beyond [QueryLimit] in [QueryWindow]. It serves UDP and TCP
// on the same address.
//
// # Imports
//
// The Server reads challenges through [Host], declared here (one method):
// *edgeplane.Host implements it. The package imports the leaves domains,
// apierr and ratelimit, never the root package or the policy engine;
// internal/layering's tests keep it so.
package acmedns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/ratelimit"
)

// lookupTimeout bounds the store read of one query.
const lookupTimeout = 2 * time.Second

// ttl is the TTL of the answers: short, since a challenge lives minutes.
const ttl = 10

// The bound of the store reads queries cause: per source address,
// QueryLimit queries in QueryWindow; beyond it a query is REFUSED without
// a store read. (A CA's resolvers ask a few times per validation.)
const (
	QueryLimit  = 200
	QueryWindow = 10 * time.Second
)

// Options configures a [Server].
type Options struct {
	// Host reads the challenges. Required.
	Host Host
	// Zones are the zones the server is authoritative for, such as
	// "acme.edgeplane-cname.com". At least one.
	Zones []string
	// NS is the server's own name, in the zones' SOA and NS records:
	// the name the parent zone's NS record delegates the zones to (such
	// as "ns1.edgeplane-cname.com"); "" means "ns.<first zone>".
	NS string
	// Logger receives the server's warnings; nil discards them.
	Logger *slog.Logger
}

// Host is what a [Server] asks of the Service: *edgeplane.Host
// implements it.
type Host interface {
	// ACMEChallenge returns the pending challenge of typ, name and token
	// (a not-found *apierr.Error when there is none).
	ACMEChallenge(ctx context.Context, typ, name, token string) (*domains.ACMEChallenge, error)
}

// Server answers DNS-01 challenges. Its methods are safe for concurrent
// use.
type Server struct {
	host  Host
	zones []string // canonical, no trailing dot
	ns    string
	log   *slog.Logger

	limit *ratelimit.Limiter // per source address

	mu      sync.Mutex
	servers []*dns.Server
}

// New returns a Server, or an error naming the option that is wrong.
func New(o Options) (*Server, error) {
	if o.Host == nil {
		return nil, errors.New("acmedns: Options.Host is required")
	}
	if len(o.Zones) == 0 {
		return nil, errors.New("acmedns: Options.Zones: at least one zone is required")
	}
	s := &Server{host: o.Host, log: o.Logger, ns: canonical(o.NS)}
	for _, z := range o.Zones {
		c := canonical(z)
		if _, ok := dns.IsDomainName(c); !ok || c == "" || strings.Contains(c, "*") {
			return nil, fmt.Errorf("acmedns: zone %q: want a DNS name", z)
		}
		s.zones = append(s.zones, c)
	}
	if s.ns == "" {
		s.ns = "ns." + s.zones[0]
	} else if !hostName(s.ns) {
		return nil, fmt.Errorf("acmedns: Options.NS %q: want a host name, such as ns1.%s", o.NS, s.zones[0])
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if s.limit, err = ratelimit.New(ratelimit.Options{Capacity: QueryLimit, Window: QueryWindow}); err != nil {
		return nil, err
	}
	return s, nil
}

// hostName reports whether name is a host name: at most 253 bytes of
// labels of 1 to 63 letters, digits and hyphens, not starting or ending
// with a hyphen, two at least.
func hostName(name string) bool {
	labels := strings.Split(name, ".")
	if len(name) > 253 || len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func canonical(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) }

// zoneOf returns the zone name is in, or "".
func (s *Server) zoneOf(name string) string {
	for _, z := range s.zones {
		if name == z || strings.HasSuffix(name, "."+z) {
			return z
		}
	}
	return ""
}

// Listen opens addr on UDP and TCP and serves both until
// [Server.Close]; it returns the address bound (its port picked when
// addr asks for 0), or an error when either cannot be opened.
func (s *Server) Listen(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	pc, err := net.ListenPacket("udp", ln.Addr().String())
	if err != nil {
		ln.Close()
		return "", err
	}
	h := dns.HandlerFunc(s.serve)
	tcp := &dns.Server{Listener: ln, Handler: h, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	udp := &dns.Server{PacketConn: pc, Handler: h}
	s.mu.Lock()
	s.servers = append(s.servers, tcp, udp)
	s.mu.Unlock()
	// Return once both serve: a dns.Server shut down before it started
	// refuses ("server not started") and then serves on, so that a Close
	// right after Listen would leave it running.
	var serving sync.WaitGroup
	for _, srv := range []*dns.Server{tcp, udp} {
		serving.Add(1)
		started := sync.OnceFunc(serving.Done)
		srv.NotifyStartedFunc = started
		go func() {
			defer started() // also when it fails to start
			if err := srv.ActivateAndServe(); err != nil && !errors.Is(err, net.ErrClosed) {
				s.log.Warn("DNS server stopped", "err", err)
			}
		}()
	}
	serving.Wait()
	return ln.Addr().String(), nil
}

// Close stops every listener.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Shutdown(); err != nil {
			errs = append(errs, err)
		}
	}
	s.servers = nil
	return errors.Join(errs...)
}

// serve answers one query.
func (s *Server) serve(w dns.ResponseWriter, req *dns.Msg) {
	host, _, _ := net.SplitHostPort(w.RemoteAddr().String())
	if !s.limit.AllowAt(host, time.Now()).Allowed {
		m := new(dns.Msg)
		m.SetRcode(req, dns.RcodeRefused)
		_ = w.WriteMsg(m)
		return
	}
	m := s.answer(req)
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		// What does not fit the client's buffer is left out, with the TC
		// bit set: the client asks again over TCP.
		size := dns.MinMsgSize
		if o := req.IsEdns0(); o != nil {
			size = max(size, int(o.UDPSize()))
		}
		m.Truncate(size)
	}
	_ = w.WriteMsg(m)
}

// answer returns the reply to req.
func (s *Server) answer(req *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Compress = true
	if req.Opcode != dns.OpcodeQuery || len(req.Question) != 1 {
		m.Rcode = dns.RcodeNotImplemented
		if len(req.Question) != 1 {
			m.Rcode = dns.RcodeFormatError
		}
		return m
	}
	q := req.Question[0]
	name := canonical(q.Name)
	zone := s.zoneOf(name)
	if zone == "" || q.Qclass != dns.ClassINET {
		m.Rcode = dns.RcodeRefused
		return m
	}
	m.Authoritative = true
	soa := s.soa(zone)
	if name == zone {
		switch q.Qtype {
		case dns.TypeSOA:
			m.Answer = append(m.Answer, soa)
		case dns.TypeNS:
			m.Answer = append(m.Answer, &dns.NS{Hdr: header(zone, dns.TypeNS), Ns: dns.Fqdn(s.ns)})
		default:
			m.Ns = append(m.Ns, soa)
		}
		return m
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	c, err := s.host.ACMEChallenge(ctx, domains.ChallengeDNS01, name, "")
	switch {
	case errors.Is(err, apierr.ErrNotFound), apierr.CodeOf(err) == apierr.InvalidArgument:
		m.Rcode = dns.RcodeNameError
		m.Ns = append(m.Ns, soa)
	case err != nil:
		s.log.Warn("cannot read a DNS-01 challenge", "name", name, "err", err)
		m.Rcode = dns.RcodeServerFailure
	case q.Qtype == dns.TypeTXT:
		m.Answer = append(m.Answer, &dns.TXT{Hdr: header(name, dns.TypeTXT), Txt: txtStrings(c.KeyAuthorization)})
	default:
		m.Ns = append(m.Ns, soa) // the name exists, without this type
	}
	return m
}

// txtStrings returns the character strings of a TXT record of value v,
// as package dns packs them: at most 255 bytes each (a longer value is
// split, and a resolver joins the strings again), a backslash escaped
// (dns reads "\DDD" and "\x" as escapes). The Host lets a value be up
// to [domains.MaxACMEKeyAuthorization] bytes.
func txtStrings(v string) []string {
	out := make([]string, 0, 1+len(v)/255)
	for {
		chunk := v[:min(len(v), 255)]
		out = append(out, strings.ReplaceAll(chunk, `\`, `\\`))
		if v = v[len(chunk):]; v == "" {
			return out
		}
	}
}

func header(name string, typ uint16) dns.RR_Header {
	return dns.RR_Header{Name: dns.Fqdn(name), Rrtype: typ, Class: dns.ClassINET, Ttl: ttl}
}

// soa is the zone's SOA record. The serial is the current hour: the
// zone's records are dynamic, and secondaries are not expected.
func (s *Server) soa(zone string) *dns.SOA {
	return &dns.SOA{Hdr: header(zone, dns.TypeSOA), Ns: dns.Fqdn(s.ns), Mbox: dns.Fqdn("hostmaster." + zone),
		Serial: uint32(time.Now().Unix() / 3600), Refresh: 3600, Retry: 600, Expire: 86400, Minttl: ttl}
}
