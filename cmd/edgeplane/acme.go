package main

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/certmanager"
	"github.com/edgeplane/edgeplane/hosting"
	"github.com/edgeplane/edgeplane/internal/elect"
	"github.com/edgeplane/edgeplane/store"
)

// acmeConfig is what serve's -acme-* flags say.
type acmeConfig struct {
	on         bool
	directory  string
	staging    bool
	email      string
	caRoots    string
	interval   time.Duration
	challenges string
	roots      *x509.CertPool // caRoots loaded, by check
}

// acmeLease is the name of the lease that elects the replica that
// orders certificates.
const acmeLease = "acme"

// flagGroup is the heading of the flags that flags registers, for -h.
func (c *acmeConfig) flagGroup(fs *flag.FlagSet) flagGroup {
	return flagGroup{"ACME certificates", fs, []string{"acme", "acme-directory", "acme-staging", "acme-email", "acme-ca-roots", "acme-interval", "acme-challenges"}}
}

func (c *acmeConfig) flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.on, "acme", true, "order the managed certificates of reserved domains with a certificate management policy from an ACME CA (one replica of the store at a time, elected by a lease in the store); the edge proxies answer the CA's challenges")
	fs.StringVar(&c.directory, "acme-directory", "", "ACME directory URL (default Let's Encrypt's production directory, "+certmanager.LetsEncryptProduction+")")
	fs.BoolVar(&c.staging, "acme-staging", false, "use Let's Encrypt's staging directory ("+certmanager.LetsEncryptStaging+"): untrusted certificates, generous rate limits, for trying a setup out")
	fs.StringVar(&c.email, "acme-email", "", "contact address of the ACME account: the CA writes there about expiring certificates and problems")
	fs.StringVar(&c.caRoots, "acme-ca-roots", "", "PEM file of the roots the ACME server's own TLS certificate chains to (a private ACME server); default: the system's roots")
	fs.DurationVar(&c.interval, "acme-interval", certmanager.DefaultInterval, "how often the certificate manager sweeps for domains whose certificate is due, a safety net: it orders at once when a reserved domain's certificate_management_policy is set or changed (it follows the store's changes), and retries at the retries_at it reported")
	fs.StringVar(&c.challenges, "acme-challenges", edgeplane.ChallengeHTTP01+","+edgeplane.ChallengeTLSALPN01, "comma-separated challenge types tried for names that are not wildcards, in order: each order tries one (one validation at the CA), its retry the next; give "+edgeplane.ChallengeTLSALPN01+" alone when the edges serve no port 80 (wildcards always use dns-01)")
}

// check validates c's flags and loads the roots.
func (c *acmeConfig) check() error {
	if !c.on {
		return nil
	}
	if c.staging {
		if c.directory != "" {
			return usageError{"-acme-staging and -acme-directory exclude each other: give one"}
		}
		c.directory = certmanager.LetsEncryptStaging
	}
	if c.interval <= 0 {
		return usageError{fmt.Sprintf("-acme-interval %v: want a positive duration", c.interval)}
	}
	if c.caRoots != "" {
		b, err := os.ReadFile(c.caRoots)
		if err != nil {
			return usageError{"-acme-ca-roots: " + err.Error()}
		}
		c.roots = x509.NewCertPool()
		if !c.roots.AppendCertsFromPEM(b) {
			return usageError{"-acme-ca-roots " + c.caRoots + ": no PEM certificate in it"}
		}
	}
	// The Manager checks the directory and the email.
	_, err := c.manager(nil, nil, nil)
	return err
}

// manager returns the certificate manager of host, following feed, the
// change feed of its store.
func (c *acmeConfig) manager(host *edgeplane.Host, feed store.Feed, logger *slog.Logger) (*certmanager.Manager, error) {
	certs := new(hosting.CertificateHost) // for checking the options only
	if host != nil {
		certs = host.Certificates()
	}
	var challenges []string
	for typ := range strings.SplitSeq(c.challenges, ",") {
		typ = strings.TrimSpace(typ)
		if typ != edgeplane.ChallengeHTTP01 && typ != edgeplane.ChallengeTLSALPN01 || slices.Contains(challenges, typ) {
			return nil, usageError{fmt.Sprintf("-acme-challenges %q: want %s, %s or both, comma-separated, each once", c.challenges, edgeplane.ChallengeHTTP01, edgeplane.ChallengeTLSALPN01)}
		}
		challenges = append(challenges, typ)
	}
	m, err := certmanager.New(certmanager.Options{Host: certs, Directory: c.directory, Email: c.email, CARoots: c.roots,
		Logger: logger, Feed: feed, Interval: c.interval, Challenges: challenges})
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return m, nil
}

// startACME runs the certificate manager of svc (feed is its store's
// change feed) while this replica holds the acme lease, until the
// returned function is called.
func startACME(ctx context.Context, svc *edgeplane.Service, feed store.Feed, c acmeConfig, logger *slog.Logger, mt *metrics) (stop func(), err error) {
	logger = logger.With("part", "acme")
	m, err := c.manager(svc.Host(), feed, logger)
	if err != nil {
		return nil, err
	}
	var held atomic.Bool
	mt.watchACME(m, &held)
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	holder := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = elect.Run(ctx, elect.Config{Leaser: svc.Host().Leases(), Name: acmeLease, Holder: holder, Log: logger,
			OnChange: func(h bool) { held.Store(h); logger.Info("certificate manager", "ordering", h, "holder", holder) }},
			func(ctx context.Context) { _ = m.Run(ctx) })
	}()
	return func() { cancel(); <-done }, nil
}

// watchACME exports the certificate manager's counts and whether this
// replica holds the acme lease.
func (m *metrics) watchACME(mgr *certmanager.Manager, held *atomic.Bool) {
	for _, r := range []struct {
		result string
		get    func(certmanager.Stats) int64
	}{
		{"issued", func(s certmanager.Stats) int64 { return s.Issued }},
		{"dns_error", func(s certmanager.Stats) int64 { return s.DNSErrors }},
		{"internal_error", func(s certmanager.Stats) int64 { return s.InternalErrors }},
	} {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "edgeplane_acme_orders_total",
			Help: "Certificate orders of this replica's certificate manager, by outcome.", ConstLabels: prometheus.Labels{"result": r.result}},
			func() float64 { return float64(r.get(mgr.Stats())) }))
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgeplane_acme_lease_held",
		Help: "1 while this replica holds the acme lease and orders certificates."},
		func() float64 {
			if held.Load() {
				return 1
			}
			return 0
		}))
}
