package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/acmedns"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/hop"
	"github.com/edgeplane/edgeplane/hosting"
	"github.com/edgeplane/edgeplane/httpserver"
	"github.com/edgeplane/edgeplane/proxy"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/tunnel"
)

// dataPlaneConfig is what the data plane's flags say: those of
// edgeplane proxy, and the same under the prefix "proxy-" in
// edgeplane serve -proxy.
type dataPlaneConfig struct {
	httpAddr, httpsAddr string
	trustedProxies      string
	upstreamNetworks    string
	upstreamNets        []netip.Prefix // upstreamNetworks parsed, by check
	oidcNetworks        string
	oidcNets            []netip.Prefix // oidcNetworks parsed, by check
	upstreamTimeout     time.Duration
	maxHeaderBytes      int // of an upstream's or agent's response
	readTimeout         time.Duration
	writeTimeout        time.Duration
	tcpHost, tcpPorts   string
	tcpListen           string // tcpHost resolved, by check: the address the TCP listeners bind ("": every interface)
	tcpLow, tcpHigh     int    // tcpPorts parsed, by check; 0: none
	idleTimeout         time.Duration
	maxConnsPerEdge     int
	tunnelAddr          string
	tunnelCert          string
	tunnelKey           string
	tunnelTLS           *tls.Config // tunnelCert and tunnelKey loaded, by check; nil: by SNI
	tunnelLocal         *localTLS   // with tunnelTLS nil: the leaf for the names no reserved domain's certificate serves (serve's local CA)
	tunnelTCPHost       string
	nodeAddr            string // the hop's listener ("": none)
	nodeAdvertise       string // the hop address other nodes dial ("": nodeAddr's)
	nodeLease           time.Duration
	limits              agents.Limits // the agents' limits per account and credential
	maxUnauth           int           // connections not authenticated yet, in all
	maxUnauthPerIP      int           // and from one address
	resumeTTL           time.Duration // how long agents' resume tokens take things over
	dnsAddr, dnsZone    string        // the DNS-01 challenges' server ("": none) and its zone
	dnsNS               string        // the server's name in the zone's NS and SOA records ("": ns.<zone>)

	// The tunnel server's domain base ("": none), the PEM files of the
	// certificate of the names under it, and the certificate loaded by
	// check (nil: none).
	agentDomainBase, agentDomainCert, agentDomainKey string
	agentDomainTLS                                   *tls.Certificate
}

// defaultWriteTimeout is the default of -write-timeout: longer than the
// API's, since a proxied response may be a large download.
const defaultWriteTimeout = 5 * time.Minute

// minResponseHeaderBytes is the least -max-response-header-bytes.
const minResponseHeaderBytes = 1 << 10

// flags registers c's flags on fs, each named prefix+name; httpAddr is
// the default of -http-addr.
func (c *dataPlaneConfig) flags(fs *flag.FlagSet, prefix, httpAddr string) {
	fs.StringVar(&c.httpAddr, prefix+"http-addr", httpAddr, "address of the plain HTTP listener of the edges (\"\": none); a request reaches the edge that serves its Host header's host (HTTPS edges serve port 443; a port in Host is ignored)")
	fs.StringVar(&c.httpsAddr, prefix+"https-addr", "", "address of the TLS listener of the edges (\"\": none); the certificate is the one of the reserved domain the client's SNI names")
	fs.StringVar(&c.trustedProxies, prefix+"trusted-proxies", "", "comma-separated CIDR prefixes or addresses of proxies in front whose X-Forwarded-For is believed for conn.client_ip (default: none)")
	fs.StringVar(&c.upstreamNetworks, prefix+"upstream-networks", "", "comma-separated CIDR prefixes or addresses: the only networks a tunnel's forwards_to may reach (default: any; whoever registers tunnels chooses where the proxy connects, so set it in production)")
	fs.StringVar(&c.oidcNetworks, prefix+"oidc-networks", "", "comma-separated CIDR prefixes or addresses: the only networks the OIDC module's identity providers may be reached at, private ones included (default: public addresses only, since a tenant chooses the issuer)")
	fs.DurationVar(&c.upstreamTimeout, prefix+"upstream-timeout", proxy.DefaultUpstreamTimeout, "how long to wait for an upstream's response headers before answering 504")
	fs.IntVar(&c.maxHeaderBytes, prefix+"max-response-header-bytes", proxy.DefaultMaxResponseHeaderBytes, "the most bytes of an upstream's or agent's response status line and headers the proxy reads; a longer answer gets the client 502")
	fs.DurationVar(&c.readTimeout, prefix+"read-timeout", httpserver.DefaultReadTimeout, "longest time to read a proxied request, body included")
	fs.DurationVar(&c.writeTimeout, prefix+"write-timeout", defaultWriteTimeout, "longest time from a proxied request's headers to the end of its response")
	fs.StringVar(&c.tcpPorts, prefix+"tcp-ports", "", "LOW-HIGH: the ports TCP edges may be served on; the proxy listens on each port of the range that a TCP edge's hostport names (default: no TCP edges)")
	// edgeplane serve's listeners are on loopback unless asked; a proxy's
	// are where its operator says, every interface for TCP.
	tcpHost, tcpHostDefault := "", "every interface"
	if prefix == "proxy-" {
		tcpHost, tcpHostDefault = "127.0.0.1", "loopback"
	}
	fs.StringVar(&c.tcpHost, prefix+"tcp-host", tcpHost, "the host the TCP edges' and tcp endpoints' listeners bind: an IP address, or a name resolved at start (one under .localhost is loopback); \"\" or 0.0.0.0: every interface (default: "+tcpHostDefault+")")
	fs.DurationVar(&c.idleTimeout, prefix+"idle-timeout", proxy.DefaultIdleTimeout, "a TLS or TCP edge's connection on which no byte moved either way for this long is closed")
	fs.IntVar(&c.maxConnsPerEdge, prefix+"max-conns-per-edge", proxy.DefaultMaxConnsPerEdge, "the most open connections of one TLS or TCP edge; more are closed at once")
	fs.StringVar(&c.tunnelAddr, prefix+"tunnel-addr", "", "address of the TLS listener for agents (golang.ngrok.com/ngrok and edgeplane agent connect here with ngrok.WithServer); \"\": no agents")
	certDefault := "the reserved domain's certificate that the agent's server name names"
	if prefix == "proxy-" { // edgeplane serve
		certDefault += "; else, for the listener's own host and for agents that dial an IP address, a certificate of a local CA kept in -proxy-tunnel-ca-dir, whose ca.pem agents trust with -ca"
	}
	fs.StringVar(&c.tunnelCert, prefix+"tunnel-cert", "", "PEM file of the certificate chain agents see on -"+prefix+"tunnel-addr (default: "+certDefault+")")
	fs.StringVar(&c.tunnelKey, prefix+"tunnel-key", "", "PEM file of the private key of -"+prefix+"tunnel-cert")
	fs.StringVar(&c.nodeAddr, prefix+"node-addr", "", "address of the hop's listener: other edge nodes of the store (edgeplane proxy processes on the same store) hand this node the requests and connections for the agents connected here (mutual TLS from the sealing key); \"\": this node takes no hop, and requests for its agents that reach another node fail")
	fs.StringVar(&c.nodeAdvertise, prefix+"node-advertise", "", "HOST:PORT other nodes dial for the hop, recorded with the node (default: -"+prefix+"node-addr, which must then name its host)")
	fs.DurationVar(&c.nodeLease, prefix+"node-lease", edgeplane.DefaultTunnelLease, "with -"+prefix+"tunnel-addr: the lease of this edge node, which keeps its agents' sessions online; renewed every third of it (one store write for all its sessions); when the node dies its agents' tunnels and endpoints go offline at its end")
	fs.IntVar(&c.limits.SessionsPerCredential, prefix+"sessions-per-credential", agents.DefaultSessionsPerCredential, "with -"+prefix+"tunnel-addr: the most agent sessions one authtoken holds at once, on all the nodes of the store; more are refused (ERR_SERVICE_106); -1: no limit")
	fs.IntVar(&c.limits.SessionsPerAccount, prefix+"sessions-per-account", agents.DefaultSessionsPerAccount, "with -"+prefix+"tunnel-addr: the most agent sessions of one account at once, on all the nodes of the store; -1: no limit")
	fs.IntVar(&c.limits.TunnelsPerAccount, prefix+"tunnels-per-account", agents.DefaultTunnelsPerAccount, "with -"+prefix+"tunnel-addr: the most labeled tunnels the agents of one account hold at once; -1: no limit")
	fs.IntVar(&c.limits.EndpointsPerAccount, prefix+"endpoints-per-account", agents.DefaultEndpointsPerAccount, "with -"+prefix+"tunnel-addr: the most endpoints the agents of one account bind at once; -1: no limit")
	fs.IntVar(&c.maxUnauth, prefix+"max-unauthenticated", tunnel.DefaultMaxUnauthenticated, "with -"+prefix+"tunnel-addr: the most agent connections that have not authenticated yet (TLS handshake, Auth), from all addresses together; more are closed at once")
	fs.IntVar(&c.maxUnauthPerIP, prefix+"max-unauthenticated-per-ip", tunnel.DefaultMaxUnauthenticatedPerIP, "with -"+prefix+"tunnel-addr: the most agent connections from one address that have not authenticated yet")
	fs.DurationVar(&c.resumeTTL, prefix+"resume-token-ttl", tunnel.DefaultResumeTokenTTL, "with -"+prefix+"tunnel-addr: how long after it was handed out an agent's session cookie or endpoint token may take over the session or endpoint it names when the agent reconnects; an older one opens a fresh session, and rebinds the endpoint once no other session holds it")
	fs.StringVar(&c.dnsAddr, prefix+"dns-addr", "", "address (UDP and TCP) of the authoritative DNS server of ACME DNS-01 challenges, for wildcard reserved domains outside the service's base domains: delegate -"+prefix+"dns-zone to it with an NS record; \"\": none")
	fs.StringVar(&c.dnsZone, prefix+"dns-zone", "acme."+domains.DefaultCNAMEBase, "the zone -"+prefix+"dns-addr answers for: where reserved domains' acme_challenge_cname_target names are")
	fs.StringVar(&c.dnsNS, prefix+"dns-ns-name", "", "the host name of the server of -"+prefix+"dns-addr, as the parent zone's NS record delegates -"+prefix+"dns-zone to it (such as ns1."+domains.DefaultCNAMEBase+"): the zone's NS and SOA records answer it (default: ns.<-"+prefix+"dns-zone>)")
	fs.StringVar(&c.agentDomainBase, prefix+"agent-domain-base", "", "with -"+prefix+"tunnel-addr: a DNS name BASE (such as agents.example.com) under which agents' http and https endpoints that name no domain get one, <random>.BASE, kept across the agent's reconnects; the wildcard DNS record *.BASE (to the edges) and its certificate (-"+prefix+"agent-domain-cert) are the operator's, and no account reserves BASE; a credential needs the ACL rule bind:*.BASE or no rules (default: none; such binds are refused, saying a domain is needed)")
	fs.StringVar(&c.agentDomainCert, prefix+"agent-domain-cert", "", "PEM file of the certificate chain of *.BASE (-"+prefix+"agent-domain-base) that the HTTPS listener presents for agents' https endpoints under BASE (default: none; their TLS handshakes fail)")
	fs.StringVar(&c.agentDomainKey, prefix+"agent-domain-key", "", "PEM file of the private key of -"+prefix+"agent-domain-cert")
	fs.StringVar(&c.tunnelTCPHost, prefix+"tunnel-tcp-host", "", "the public host name of agents' tcp endpoints, in their URLs (tcp://HOST:PORT; the ports are those of -"+prefix+"tcp-ports), which an ACL rule bind:HOST:PORT names (default: -"+prefix+"tcp-host when it is a name of two labels or more or a public address, else "+localTCPName+", which RFC 6761 resolvers (curl, browsers, systemd-resolved) send to loopback)")
}

// flagGroups returns the headings of the flags that flags registers on
// fs with prefix, for -h: each heading ends with suffix; extra names
// flags of the command that belong under the first (serve's -proxy).
func (c *dataPlaneConfig) flagGroups(fs *flag.FlagSet, prefix, suffix string, extra ...string) []flagGroup {
	p := func(names ...string) []string {
		for i, n := range names {
			names[i] = prefix + n
		}
		return names
	}
	return []flagGroup{
		{"Data plane listeners" + suffix, fs, append(extra, p("http-addr", "https-addr", "tcp-ports", "tcp-host")...)},
		{"Proxied requests and connections" + suffix, fs, p("trusted-proxies", "upstream-networks", "oidc-networks", "upstream-timeout",
			"max-response-header-bytes", "read-timeout", "write-timeout", "idle-timeout", "max-conns-per-edge")},
		{"Agents' tunnel listener" + suffix, fs, p("tunnel-addr", "tunnel-cert", "tunnel-key", "tunnel-tcp-host", "agent-domain-base", "agent-domain-cert", "agent-domain-key", "sessions-per-credential",
			"sessions-per-account", "tunnels-per-account", "endpoints-per-account", "max-unauthenticated", "max-unauthenticated-per-ip", "resume-token-ttl")},
		{"Edge nodes sharing the store" + suffix, fs, p("node-addr", "node-advertise", "node-lease")},
		{"DNS server of ACME DNS-01 challenges" + suffix, fs, p("dns-addr", "dns-zone", "dns-ns-name")},
	}
}

// check validates c's flags (named with prefix) and returns the trusted
// proxies.
func (c *dataPlaneConfig) check(prefix string) ([]netip.Prefix, error) {
	if c.httpAddr == "" && c.httpsAddr == "" {
		return nil, usageError{fmt.Sprintf("-%shttp-addr or -%shttps-addr (or both) is required: the data plane needs a listener", prefix, prefix)}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"upstream-timeout", c.upstreamTimeout}, {"read-timeout", c.readTimeout}, {"write-timeout", c.writeTimeout}, {"idle-timeout", c.idleTimeout}} {
		if d.v <= 0 {
			return nil, usageError{fmt.Sprintf("-%s%s %v: want a positive duration", prefix, d.name, d.v)}
		}
	}
	if c.nodeLease < 3*time.Second {
		return nil, usageError{fmt.Sprintf("-%snode-lease %v: want at least 3s (it is renewed every third of it)", prefix, c.nodeLease)}
	}
	for _, l := range []struct {
		name string
		v    int
	}{{"sessions-per-credential", c.limits.SessionsPerCredential}, {"sessions-per-account", c.limits.SessionsPerAccount},
		{"tunnels-per-account", c.limits.TunnelsPerAccount}, {"endpoints-per-account", c.limits.EndpointsPerAccount}} {
		if l.v != -1 && (l.v < 1 || l.v > agents.MaxLimit) {
			return nil, usageError{fmt.Sprintf("-%s%s %d: want 1 to %d, or -1 for no limit", prefix, l.name, l.v, agents.MaxLimit)}
		}
	}
	if c.resumeTTL < time.Second {
		return nil, usageError{fmt.Sprintf("-%sresume-token-ttl %v: want at least 1s", prefix, c.resumeTTL)}
	}
	if c.maxUnauth < 1 || c.maxUnauthPerIP < 1 {
		return nil, usageError{fmt.Sprintf("-%smax-unauthenticated %d, -%smax-unauthenticated-per-ip %d: want at least 1 each", prefix, c.maxUnauth, prefix, c.maxUnauthPerIP)}
	}
	if c.maxConnsPerEdge < 1 {
		return nil, usageError{fmt.Sprintf("-%smax-conns-per-edge %d: want at least 1", prefix, c.maxConnsPerEdge)}
	}
	if c.maxHeaderBytes < minResponseHeaderBytes {
		return nil, usageError{fmt.Sprintf("-%smax-response-header-bytes %d: want at least %d (a status line and a few headers)", prefix, c.maxHeaderBytes, minResponseHeaderBytes)}
	}
	if c.tcpPorts != "" {
		lo, hi, ok := strings.Cut(c.tcpPorts, "-")
		var err1, err2 error
		c.tcpLow, err1 = strconv.Atoi(lo)
		c.tcpHigh, err2 = strconv.Atoi(hi)
		if !ok || err1 != nil || err2 != nil || c.tcpLow < 1 || c.tcpHigh > 65535 || c.tcpLow > c.tcpHigh {
			return nil, usageError{fmt.Sprintf("-%stcp-ports %q: want LOW-HIGH, ports from 1 to 65535, such as 20000-20999", prefix, c.tcpPorts)}
		}
	}
	if c.tcpLow != 0 {
		addr, err := resolveTCPHost(c.tcpHost)
		if err != nil {
			return nil, usageError{fmt.Sprintf("-%stcp-host %q: %v", prefix, c.tcpHost, err)}
		}
		c.tcpListen = addr
	}
	if (c.tunnelCert == "") != (c.tunnelKey == "") {
		return nil, usageError{fmt.Sprintf("-%stunnel-cert and -%stunnel-key go together: give both or neither", prefix, prefix)}
	}
	if c.nodeAddr != "" && c.tunnelAddr == "" {
		return nil, usageError{fmt.Sprintf("-%snode-addr needs -%stunnel-addr: the hop hands streams to the agents connected to this node", prefix, prefix)}
	}
	if c.nodeAdvertise != "" && c.nodeAddr == "" {
		return nil, usageError{fmt.Sprintf("-%snode-advertise needs -%snode-addr", prefix, prefix)}
	}
	if c.nodeAddr != "" {
		// Without -node-advertise, the listener's own address is
		// advertised (its port picked when -node-addr names port 0).
		adv, flag, lowest := c.nodeAdvertise, "node-advertise", 1
		if adv == "" {
			adv, flag, lowest = c.nodeAddr, "node-addr", 0
		}
		host, port, err := net.SplitHostPort(adv)
		n, perr := strconv.Atoi(port)
		switch {
		case err != nil || perr != nil || n < lowest || n > 65535:
			return nil, usageError{fmt.Sprintf("-%s%s %q: want HOST:PORT with a port from %d to 65535", prefix, flag, adv, lowest)}
		case host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified():
			return nil, usageError{fmt.Sprintf("-%snode-addr %q listens on every interface: give -%snode-advertise, the HOST:PORT other nodes reach it at", prefix, c.nodeAddr, prefix)}
		}
	}
	if c.tunnelCert != "" {
		if c.tunnelAddr == "" {
			return nil, usageError{fmt.Sprintf("-%stunnel-cert needs -%stunnel-addr", prefix, prefix)}
		}
		cert, err := tls.LoadX509KeyPair(c.tunnelCert, c.tunnelKey)
		if err != nil {
			return nil, usageError{fmt.Sprintf("-%stunnel-cert/-%stunnel-key: %v", prefix, prefix, err)}
		}
		c.tunnelTLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	if err := c.checkDomainBase(prefix); err != nil {
		return nil, err
	}
	if c.dnsNS != "" && c.dnsAddr == "" {
		return nil, usageError{fmt.Sprintf("-%sdns-ns-name needs -%sdns-addr: it names that DNS server", prefix, prefix)}
	}
	if c.dnsAddr != "" {
		if _, err := acmedns.New(acmedns.Options{Host: new(hosting.CertificateHost), Zones: []string{c.dnsZone}}); err != nil {
			return nil, usageError{fmt.Sprintf("-%sdns-zone: %v", prefix, err)}
		}
		if _, err := acmedns.New(acmedns.Options{Host: new(hosting.CertificateHost), Zones: []string{c.dnsZone}, NS: c.dnsNS}); err != nil {
			return nil, usageError{fmt.Sprintf("-%sdns-ns-name %q: want a host name, such as ns1.%s", prefix, c.dnsNS, domains.DefaultCNAMEBase)}
		}
	}
	trusted, err := proxy.ParseTrustedProxies(c.trustedProxies)
	if err != nil {
		return nil, usageError{fmt.Sprintf("-%strusted-proxies: %v", prefix, err)}
	}
	if c.upstreamNets, err = proxy.ParseNetworks(c.upstreamNetworks); err != nil {
		return nil, usageError{fmt.Sprintf("-%supstream-networks: %v", prefix, err)}
	}
	if c.oidcNets, err = proxy.ParseNetworks(c.oidcNetworks); err != nil {
		return nil, usageError{fmt.Sprintf("-%soidc-networks: %v", prefix, err)}
	}
	return trusted, nil
}

// serverOptions are the bounds of the data plane's servers.
func (c *dataPlaneConfig) serverOptions(errLog *log.Logger) httpserver.Options {
	return httpserver.Options{ErrorLog: errLog, ReadTimeout: c.readTimeout, WriteTimeout: c.writeTimeout}
}

// dataPlane is the edge data plane running in this process: the edge
// configs that follow the store and the servers of its listeners.
type dataPlane struct {
	configs *proxy.Configs
	streams *proxy.Streams
	tunnels *tunnel.Server // nil without -tunnel-addr
	hop     *hop.Hop       // with tunnels: reaches the agents of every node
	// hopAddr is the hop's listener, when there is one.
	hopAddr string
	// agentAddr is the tunnel server's listener, when there is one.
	agentAddr string
	dns       *acmedns.Server // nil without -dns-addr
	dnsAddr   string
	stopTCP   context.CancelFunc
	tcpDone   chan struct{}
	servers   []*http.Server
	// addrs are the listeners' URLs, http:// first.
	addrs []string
}

// startDataPlane loads every edge of the store svc serves (feed is
// its change feed), opens the listeners of c and serves them; a server
// that stops sends its error on errc (which must have room for one error
// per listener). It fails when the edges cannot be loaded (the store does
// not answer) or a listener cannot be opened; then nothing is left
// running. Stop it with close. sealingKey, the Service's, also seals the
// OIDC module's session cookies (each route derives its own key from
// it), so proxies that share a store share sessions.
func startDataPlane(ctx context.Context, svc *edgeplane.Service, feed store.Feed, c dataPlaneConfig, trusted []netip.Prefix,
	sealingKey []byte, logger *slog.Logger, m *metrics, errc chan<- error) (*dataPlane, error) {
	start := time.Now()
	cfgs, err := proxy.New(ctx, svc.Host().DataPlane(), feed, proxy.Options{Logger: logger, Endpoints: svc.Host().DataPlane()})
	if err != nil {
		return nil, fmt.Errorf("loading the edges from the store: %w", err)
	}
	d := &dataPlane{configs: cfgs}
	logger.Info("edges loaded", "edges", cfgs.Stats().Edges, "revision", cfgs.Revision(), "took", time.Since(start).Round(time.Millisecond))
	pm := proxy.NewMetrics(proxy.MetricsOptions{})
	m.watchProxy(cfgs, pm)
	m.restrictions.add(cfgs.IPRestrictionCounts)
	var agentLn, hopLn net.Listener
	var dialer agents.Dialer
	if c.tunnelAddr != "" {
		tlsCfg := c.tunnelTLS
		if tlsCfg == nil {
			// A name without a certificate (or no name) gets no
			// certificate and no error: crypto/tls then fails the
			// handshake with unrecognized_name, where an error would
			// send internal_error (as proxy.Handler.TLSConfig does).
			// serve's local CA's leaf, when there is one, serves the
			// names it covers that no reserved domain's certificate does
			// (and a hello without a name).
			local := c.tunnelLocal
			tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
				if cert := cfgs.Certificate(hello.ServerName); cert != nil {
					return cert, nil
				}
				if local != nil && local.covers(hello.ServerName) {
					return local.leaf, nil
				}
				return nil, nil
			}}
		}
		tm := tunnel.NewMetrics()
		m.reg.MustRegister(tm)
		topts := tunnel.Options{Host: svc.Host().Tunnels(), TLSConfig: tlsCfg, Feed: feed, Logger: logger.With("part", "tunnel"),
			Version: buildVersion(), Metrics: tm, RenewInterval: c.nodeLease / 3,
			MaxUnauthenticated: c.maxUnauth, MaxUnauthenticatedPerIP: c.maxUnauthPerIP, ResumeTokenTTL: c.resumeTTL}
		topts.DomainBase = c.agentDomainBase
		if c.tcpLow != 0 {
			// tcp endpoints get ports of the TCP range, on -tunnel-tcp-host.
			topts.TCPHost, topts.TCPLow, topts.TCPHigh = cmp.Or(c.tunnelTCPHost, publicTCPHost(c.tcpHost)), c.tcpLow, c.tcpHigh
		}
		if c.nodeAddr != "" {
			if hopLn, err = net.Listen("tcp", c.nodeAddr); err != nil {
				cfgs.Close()
				return nil, err
			}
			// The address other nodes dial: -node-advertise, else the
			// listener's own (its port picked when -node-addr asks for 0).
			topts.NodeAddr = cmp.Or(c.nodeAdvertise, hopLn.Addr().String())
		}
		d.tunnels, err = tunnel.NewServer(topts)
		if err == nil {
			agentLn, err = net.Listen("tcp", c.tunnelAddr)
		}
		if err == nil {
			hm := hop.NewMetrics()
			m.reg.MustRegister(hm)
			d.hop, err = hop.New(hop.Options{Node: d.tunnels.Node(), Key: svc.Host().Nodes().NodeKey(), Local: d.tunnels,
				Resolve: newNodeResolver(svc.Host()).resolve, Logger: logger.With("part", "hop"), Metrics: hm})
		}
		if err != nil {
			if agentLn != nil {
				agentLn.Close()
			}
			if hopLn != nil {
				hopLn.Close()
			}
			if d.tunnels != nil {
				d.tunnels.Close()
			}
			cfgs.Close()
			return nil, err
		}
		dialer = d.hop
	}
	h := proxy.NewHandler(cfgs, proxy.HandlerOptions{Logger: logger, TrustedProxies: trusted, UpstreamTimeout: c.upstreamTimeout, Metrics: pm,
		UpstreamNetworks: c.upstreamNets, OIDCKey: sealingKey, OIDCNetworks: c.oidcNets, Agents: dialer,
		MaxResponseHeaderBytes: c.maxHeaderBytes, DomainBase: c.agentDomainBase, DomainBaseCertificate: c.agentDomainTLS})
	d.streams = proxy.NewStreams(cfgs, proxy.StreamOptions{Logger: logger, UpstreamNetworks: c.upstreamNets, IdleTimeout: c.idleTimeout,
		MaxConnsPerEdge: c.maxConnsPerEdge, Metrics: pm, Agents: dialer})
	errLog := slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	var lns []net.Listener
	// undo closes what was opened so far, when a later listener fails.
	undo := func() {
		for _, ln := range lns {
			ln.Close()
		}
		if d.tunnels != nil {
			agentLn.Close()
			if hopLn != nil {
				hopLn.Close()
			}
			d.hop.Close()
			d.tunnels.Close()
		}
		d.streams.Close()
		cfgs.Close()
	}
	for _, l := range []struct {
		addr string
		tls  bool
	}{{c.httpAddr, false}, {c.httpsAddr, true}} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			undo()
			return nil, err
		}
		if l.tls {
			// TLS edges share the HTTPS port: their connections are
			// served by the Streams, the others by the HTTPS server.
			ln = d.streams.SplitTLS(ln)
		}
		lns = append(lns, ln)
		srv := h.Server(l.tls, c.serverOptions(errLog))
		d.servers = append(d.servers, srv)
		scheme := "http"
		if l.tls {
			scheme = "https"
		}
		d.addrs = append(d.addrs, scheme+"://"+ln.Addr().String())
	}
	if c.dnsAddr != "" {
		if d.dns, err = acmedns.New(acmedns.Options{Host: svc.Host().Certificates(), Zones: []string{c.dnsZone}, NS: c.dnsNS, Logger: logger.With("part", "dns")}); err == nil {
			d.dnsAddr, err = d.dns.Listen(c.dnsAddr)
		}
		if err != nil {
			undo()
			return nil, fmt.Errorf("-dns-addr: %w", err)
		}
	}
	d.tcpDone = make(chan struct{})
	tcpCtx, stop := context.WithCancel(context.Background())
	d.stopTCP = stop
	go func() {
		defer close(d.tcpDone)
		if c.tcpLow == 0 {
			return
		}
		if err := d.streams.ServeTCP(tcpCtx, c.tcpListen, c.tcpLow, c.tcpHigh); err != nil {
			errc <- err
		}
	}()
	if c.tcpLow != 0 {
		d.addrs = append(d.addrs, fmt.Sprintf("tcp://%s:%d-%d", cmp.Or(bracketIPv6(c.tcpListen), "*"), c.tcpLow, c.tcpHigh))
	}
	if d.tunnels != nil {
		d.agentAddr = agentLn.Addr().String()
		go func() {
			if err := d.tunnels.Serve(agentLn); !errors.Is(err, tunnel.ErrServerClosed) {
				errc <- err
			}
		}()
		if hopLn != nil {
			d.hopAddr = hopLn.Addr().String()
			go func() {
				if err := d.hop.Serve(hopLn); !errors.Is(err, hop.ErrClosed) {
					errc <- err
				}
			}()
		}
	}
	for i, srv := range d.servers {
		ln := lns[i]
		go func() {
			if srv.TLSConfig != nil {
				errc <- srv.ServeTLS(ln, "", "") // the certificates come from the edges
			} else {
				errc <- srv.Serve(ln)
			}
		}()
	}
	return d, nil
}

// report prints the data plane's listeners on w.
func (d *dataPlane) report(w io.Writer) {
	st := d.configs.Stats()
	fmt.Fprintf(w, "proxy: %d edges loaded at revision %d\n", st.Edges, d.configs.Revision())
	for _, a := range d.addrs {
		fmt.Fprintf(w, "proxy on %s\n", a)
	}
	if d.agentAddr != "" {
		fmt.Fprintf(w, "agents connect to %s (TLS)\n", d.agentAddr)
		fmt.Fprintf(w, "edge node %s\n", d.tunnels.Node())
	}
	if d.hopAddr != "" {
		fmt.Fprintf(w, "other nodes hop to %s (mutual TLS)\n", d.hopAddr)
	}
	if d.dnsAddr != "" {
		fmt.Fprintf(w, "DNS-01 challenges answered on %s (UDP and TCP)\n", d.dnsAddr)
	}
}

// close stops the TCP edges' listeners, ends the TLS and TCP edges'
// connections and stops following the store; the HTTP servers are shut
// down by the caller, with its others.
func (d *dataPlane) close() {
	if d.dns != nil {
		d.dns.Close()
	}
	if d.tunnels != nil {
		d.hop.Close()
		d.tunnels.Close()
	}
	d.stopTCP()
	<-d.tcpDone
	d.streams.Close()
	d.configs.Close()
}

// serveUntil waits until ctx ends or a server fails (on errc), then shuts
// every server down gracefully, within 10 seconds.
func serveUntil(ctx context.Context, errc <-chan error, servers []*http.Server) error {
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	if err := httpserver.ShutdownAll(10*time.Second, servers...); err != nil && serveErr == nil {
		serveErr = err
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

// buildVersion is the module version edgeplane was built from, as the
// tunnel server reports it to agents ("(devel)" for a local build).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// nodeResolver resolves node IDs to their hop addresses through the
// store, remembering each: a node's address never changes under its ID
// (a node that restarts registers a new one).
type nodeResolver struct {
	host  *edgeplane.Host
	mu    sync.Mutex
	addrs map[string]string
}

// maxResolvedNodes bounds the addresses a nodeResolver remembers; past
// it, it forgets them all (nodes come and go; the live ones are read
// again at their next stream).
const maxResolvedNodes = 4096

func newNodeResolver(host *edgeplane.Host) *nodeResolver {
	return &nodeResolver{host: host, addrs: map[string]string{}}
}

// resolve returns node's hop address: "" (and no error) for a node that
// takes no hop; an error for one that is gone or whose lease ended.
func (r *nodeResolver) resolve(ctx context.Context, node string) (string, error) {
	r.mu.Lock()
	addr, ok := r.addrs[node]
	r.mu.Unlock()
	if ok {
		return addr, nil
	}
	n, err := r.host.Nodes().GetNode(ctx, node)
	if err != nil {
		return "", err
	}
	if !time.Now().Before(n.ExpiresAt) {
		return "", fmt.Errorf("the lease of node %s ended at %s", node, n.ExpiresAt.Format(time.RFC3339))
	}
	r.mu.Lock()
	if len(r.addrs) >= maxResolvedNodes {
		clear(r.addrs)
	}
	r.addrs[node] = n.Addr
	r.mu.Unlock()
	return n.Addr, nil
}
