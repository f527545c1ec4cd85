package certmanager

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mholt/acmez/v3"
	"github.com/mholt/acmez/v3/acme"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/store"
)

// ACME directories of Let's Encrypt.
const (
	// LetsEncryptProduction is the default [Options.Directory].
	LetsEncryptProduction = "https://acme-v02.api.letsencrypt.org/directory"
	// LetsEncryptStaging issues untrusted certificates under generous
	// rate limits, for trying a setup out.
	LetsEncryptStaging = "https://acme-staging-v02.api.letsencrypt.org/directory"
)

// Defaults and bounds of the Manager's schedule.
const (
	// DefaultInterval is how often [Manager.Run] sweeps for due domains
	// besides what the change feed wakes it for ([Options.Feed]).
	DefaultInterval = time.Minute
	// InternalRetryMin and InternalRetryMax bound the wait before an
	// order that failed with INTERNAL_ERROR (the CA unreachable, a rate
	// limit, a timeout) is retried: the time since the job started,
	// within these bounds (so the waits double), with jitter.
	InternalRetryMin = time.Minute
	InternalRetryMax = time.Hour
	// DNSRetryMin and DNSRetryMax bound the slow schedule on which an
	// order that failed with DNS_ERROR is retried, so that a DNS record
	// the user fixes is picked up without any action of theirs.
	DNSRetryMin = time.Hour
	DNSRetryMax = 24 * time.Hour
	// ChallengeTTL is how long a presented challenge is answered at most
	// (it is deleted as soon as the CA has validated it).
	ChallengeTTL = time.Hour
	// orderTimeout bounds one order, from the first request to the CA to
	// the certificate's download.
	orderTimeout = 10 * time.Minute
)

// Host is what a [Manager] asks of the Service: *edgeplane.Host
// implements it. Its errors are *apierr.Error values.
type Host interface {
	// CertificateOrders returns up to limit reserved domains whose
	// managed certificates are due (0: the Service's default).
	CertificateOrders(ctx context.Context, limit int) ([]domains.CertificateOrder, error)
	// ReportCertificateIssued, ReportCertificateFailed and
	// ReportCertificateProgress record an order's outcome or progress on
	// its reserved domain.
	ReportCertificateIssued(ctx context.Context, accountID, domainID, certPEM, keyPEM string) (*domains.ReservedDomain, error)
	ReportCertificateFailed(ctx context.Context, accountID, domainID string, f domains.ProvisioningFailure) (*domains.ReservedDomain, error)
	ReportCertificateProgress(ctx context.Context, accountID, domainID, msg string) (*domains.ReservedDomain, error)
	// ACMEAccountKey returns the ACME account key of directory, made
	// with generate and stored (sealed) on first use.
	ACMEAccountKey(ctx context.Context, directory string, generate func() ([]byte, error)) ([]byte, error)
	// PutACMEChallenge, DeleteACMEChallenge and ReapACMEChallenges keep
	// the challenges every edge node answers.
	PutACMEChallenge(ctx context.Context, c domains.ACMEChallenge) error
	DeleteACMEChallenge(ctx context.Context, typ, name, token string) error
	ReapACMEChallenges(ctx context.Context, limit int) (int, error)
	// WaitRevision returns once the Service's reads reflect the store's
	// revision.
	WaitRevision(ctx context.Context, revision int64) error
}

// reapBatch is how many expired challenges a round removes at most.
const reapBatch = 100

// Options configures a [Manager]. The zero value of every field but
// Host means the documented default.
type Options struct {
	// Host is the Service's privileged side: orders, reports, the
	// account key and the challenges go through it. Required.
	Host Host
	// Directory is the ACME directory URL; "" means
	// [LetsEncryptProduction].
	Directory string
	// Email, when set, is the ACME account's contact (the CA writes
	// about expiring certificates and problems there).
	Email string
	// CARoots, when set, are the only roots the ACME server's own TLS
	// certificate may chain to (a private ACME server, Pebble in tests);
	// nil means the system's roots. Ignored when HTTPClient is set.
	CARoots *x509.CertPool
	// HTTPClient carries the requests to the ACME server; nil means one
	// of the Manager's own (with CARoots).
	HTTPClient *http.Client
	// Challenges are the challenge types tried for a domain that is not
	// a wildcard, in order of preference: [domains.ChallengeHTTP01]
	// and [domains.ChallengeTLSALPN01] (the default is both, HTTP-01
	// first; give TLS-ALPN-01 alone when no edge serves port 80). An
	// order tries one type, so that it costs one validation at the CA: a
	// job's first order tries the first type, each retry after a failure
	// the next one, in turn. A wildcard is always validated by
	// [domains.ChallengeDNS01].
	Challenges []string
	// Clock gives the time of retries; nil means time.Now. It must be the
	// Service's clock, whose reports check retry times against it.
	Clock func() time.Time
	// Logger receives the Manager's warnings and one line per order; nil
	// discards them.
	Logger *slog.Logger
	// Feed is the change feed of the Service's store: Run follows it and
	// makes a pass as soon as a reserved domain changes (a policy set or
	// changed, a domain created with one). Nil: Run only sweeps, every
	// Interval.
	Feed store.Feed
	// Interval is how often Run sweeps for due domains whatever the feed
	// says (a safety net: renewals and retries that come due, and changes
	// the feed did not show); zero means [DefaultInterval].
	Interval time.Duration
	// PollInterval is how often the CA is asked whether a validation is
	// done when it does not say; zero means acmez's default (250 ms).
	PollInterval time.Duration
}

// Manager orders the managed certificates of a Service's reserved
// domains from an ACME CA (package doc). Run one per store, under a
// lease (internal/elect); its methods are safe for concurrent use, but
// passes must not overlap (Run runs one at a time).
type Manager struct {
	host       Host
	directory  string
	email      string
	httpClient *http.Client
	challenges []string
	clock      func() time.Time
	log        *slog.Logger
	feed       store.Feed
	interval   time.Duration
	poll       time.Duration

	mu      sync.Mutex
	account *acme.Account // registered with the CA; nil until the first order

	jmu  sync.Mutex
	jobs map[string]*job // by reserved domain ID: jobs this Manager ordered for and that did not succeed

	issued, dnsErrors, internalErrors atomic.Int64 // Stats
}

// job is what a Manager remembers of a domain's job between its orders.
type job struct {
	started time.Time // the job's started_at: another start is another job
	next    int       // index in challenges of the type its next order tries
	retry   time.Time // when its failure said it is retried
	ordered time.Time // when its last order ended
	held    bool      // its last order ended without a report: only a sweep orders it again
}

// Stats counts the outcomes of a Manager's orders since it was made.
type Stats struct {
	// Issued counts the certificates issued and recorded.
	Issued int64
	// DNSErrors and InternalErrors count the orders reported failed with
	// DNS_ERROR and INTERNAL_ERROR.
	DNSErrors, InternalErrors int64
}

// Stats returns the counts of the Manager's orders, for metrics.
func (m *Manager) Stats() Stats {
	return Stats{Issued: m.issued.Load(), DNSErrors: m.dnsErrors.Load(), InternalErrors: m.internalErrors.Load()}
}

// New returns a Manager, or an error naming the option that is wrong.
func New(o Options) (*Manager, error) {
	m := &Manager{host: o.Host, directory: o.Directory, email: o.Email, httpClient: o.HTTPClient, challenges: slices.Clone(o.Challenges),
		clock: o.Clock, log: o.Logger, feed: o.Feed, interval: o.Interval, poll: o.PollInterval, jobs: map[string]*job{}}
	if m.host == nil {
		return nil, errors.New("certmanager: Options.Host is required")
	}
	if m.directory == "" {
		m.directory = LetsEncryptProduction
	}
	if u, err := url.Parse(m.directory); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("certmanager: Options.Directory %q: want an absolute https URL", m.directory)
	}
	if len(m.directory) > domains.MaxACMEDirectory {
		// The Host's bound ([Host.ACMEAccountKey]): a longer
		// directory would fail every order.
		return nil, fmt.Errorf("certmanager: Options.Directory %.64q...: want at most %d bytes", m.directory, domains.MaxACMEDirectory)
	}
	if m.email != "" && (!strings.Contains(m.email, "@") || strings.ContainsAny(m.email, " \t\r\n,<>") || len(m.email) > 254) {
		return nil, fmt.Errorf("certmanager: Options.Email %q: want an email address", m.email)
	}
	if len(m.challenges) == 0 {
		m.challenges = []string{domains.ChallengeHTTP01, domains.ChallengeTLSALPN01}
	}
	for i, c := range m.challenges {
		if c != domains.ChallengeHTTP01 && c != domains.ChallengeTLSALPN01 {
			return nil, fmt.Errorf("certmanager: Options.Challenges: %q: want %s or %s", c, domains.ChallengeHTTP01, domains.ChallengeTLSALPN01)
		}
		if slices.Contains(m.challenges[:i], c) {
			return nil, fmt.Errorf("certmanager: Options.Challenges: %q is given twice", c)
		}
	}
	if m.httpClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.CARoots}
		m.httpClient = &http.Client{Transport: t, Timeout: 30 * time.Second}
	}
	if m.clock == nil {
		m.clock = time.Now
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.interval <= 0 {
		m.interval = DefaultInterval
	}
	return m, nil
}

// Run makes a pass ([Manager.Pass]) at once, then another whenever
// the feed ([Options.Feed]) shows a reserved domain changed (within a
// moment of the commit, on any replica of the store), when a retry this
// Manager reported comes due, and every Interval whatever happens (a
// sweep: renewals, and what the feed could not show), until ctx ends; it
// returns ctx's error. Failures of a pass are logged.
func (m *Manager) Run(ctx context.Context) error {
	var w *watch
	if m.feed != nil {
		w = m.watch(ctx)
		defer w.stop()
	}
	t := time.NewTimer(m.interval)
	defer t.Stop()
	sweep, nextSweep := true, time.Time{}
	for {
		if sweep {
			nextSweep = m.clock().Add(m.interval)
		}
		if _, err := m.pass(ctx, sweep); err != nil && ctx.Err() == nil {
			m.log.Warn("certificate manager: pass failed; the next sweep tries again", "err", err, "interval", m.interval)
		}
		wake := nextSweep
		if r, ok := m.nextRetry(); ok && r.Before(wake) {
			wake = r
		}
		t.Reset(max(wake.Sub(m.clock()), 0))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-w.woken():
			t.Stop()
			// Read what the change wrote, not a cached document older
			// than it.
			if err := m.host.WaitRevision(ctx, w.revision()); err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
		}
		sweep = !m.clock().Before(nextSweep)
	}
}

// nextRetry returns the earliest retry time this Manager reported that
// is still ahead.
func (m *Manager) nextRetry() (time.Time, bool) {
	now := m.clock()
	m.jmu.Lock()
	defer m.jmu.Unlock()
	var first time.Time
	for _, j := range m.jobs {
		if j.retry.After(now) && (first.IsZero() || j.retry.Before(first)) {
			first = j.retry
		}
	}
	return first, !first.IsZero()
}

// PassResult counts what a pass did.
type PassResult struct {
	// Issued counts the certificates obtained and reported.
	Issued int
	// Failed counts the orders reported failed (DNS_ERROR or
	// INTERNAL_ERROR).
	Failed int
}

// Pass removes expired challenges, then orders a certificate for every
// domain that is due ([Host.CertificateOrders]), one after
// another, and reports each outcome. It fails only when the orders
// cannot be read; an order's failure is reported on its domain.
func (m *Manager) Pass(ctx context.Context) (PassResult, error) { return m.pass(ctx, true) }

// pass is [Manager.Pass]; a pass that is not a sweep (the feed woke it)
// leaves out the domains whose last order ended without a report (the
// report failed, so the domain is still due): the sweep orders them, so
// that the writes of their orders do not wake passes that order them
// again at once.
func (m *Manager) pass(ctx context.Context, sweep bool) (PassResult, error) {
	var res PassResult
	if _, err := m.host.ReapACMEChallenges(ctx, reapBatch); err != nil {
		m.log.Warn("certificate manager: cannot remove expired challenges", "err", err)
	}
	m.forgetOldJobs()
	orders, err := m.host.CertificateOrders(ctx, 0)
	if err != nil {
		return res, err
	}
	for _, o := range orders {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if !sweep && m.held(o.ReservedDomainID) {
			continue
		}
		if m.Order(ctx, o) {
			res.Issued++
		} else if ctx.Err() == nil {
			res.Failed++
		}
	}
	return res, nil
}

// held reports whether the last order of domain id ended without a
// report.
func (m *Manager) held(id string) bool {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	j := m.jobs[id]
	return j != nil && j.held
}

// forgetOldJobs drops what the Manager remembers of jobs it has not
// ordered for in twice the longest retry wait (their domains deleted,
// or ordered by another replica meanwhile): at most their challenge
// type starts over from the first.
func (m *Manager) forgetOldJobs() {
	old := m.clock().Add(-2 * DNSRetryMax)
	m.jmu.Lock()
	defer m.jmu.Unlock()
	for id, j := range m.jobs {
		if j.ordered.Before(old) {
			delete(m.jobs, id)
		}
	}
}

// jobOf returns what the Manager remembers of the job of domain id that
// started at started, made anew for another job.
func (m *Manager) jobOf(id string, started time.Time) job {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	j := m.jobs[id]
	if j == nil || !j.started.Equal(started) {
		return job{started: started}
	}
	return *j
}

// setJob records j as the job of domain id; nil forgets it (its order
// succeeded).
func (m *Manager) setJob(id string, j *job) {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	if j == nil {
		delete(m.jobs, id)
		return
	}
	m.jobs[id] = j
}

// Order obtains a certificate for one order and reports the outcome to
// the Host: the job's progress while it runs, then the certificate, or
// the failure with its error code and retry time. It reports true when a
// certificate was issued and recorded. When ctx ends during the order,
// nothing is reported: the domain stays due for the next holder of the
// lease.
func (m *Manager) Order(ctx context.Context, o domains.CertificateOrder) bool {
	log := m.log.With("domain", o.Domain, "reserved_domain", o.ReservedDomainID)
	d, err := m.progress(ctx, o, fmt.Sprintf("ordering a certificate for %s from %s", o.Domain, m.caName()))
	if err != nil {
		log.Warn("certificate manager: cannot report progress", "err", err)
		return false
	}
	started := m.clock()
	if st := d.CertificateManagementStatus; st != nil && st.ProvisioningJob != nil {
		started = st.ProvisioningJob.StartedAt
	}
	j := m.jobOf(o.ReservedDomainID, started)
	j.held = false // ordered: held again only when this order's report fails
	typ := m.challengeOf(o, j)
	octx, cancel := context.WithTimeout(ctx, orderTimeout)
	defer cancel()
	certPEM, keyPEM, err := m.obtain(octx, o, typ)
	if ctx.Err() != nil {
		return false
	}
	if err == nil {
		_, err = m.host.ReportCertificateIssued(ctx, o.AccountID, o.ReservedDomainID, certPEM, keyPEM)
		if err == nil {
			log.Info("certificate manager: certificate issued", "challenge", typ)
			m.issued.Add(1)
			m.setJob(o.ReservedDomainID, nil)
			return true
		}
		if apierr.CodeOf(err) == apierr.FailedPrecondition || errors.Is(err, apierr.ErrNotFound) {
			log.Info("certificate manager: the domain changed during the order; certificate dropped", "err", err)
			m.setJob(o.ReservedDomainID, nil)
			return false
		}
		err = fmt.Errorf("%w: %w", errNotStored, err)
	}
	j.next++
	f := m.failure(d, err, started, typ, m.challengeOf(o, j))
	if f.ErrorCode == domains.ErrorCodeDNS {
		m.dnsErrors.Add(1)
	} else {
		m.internalErrors.Add(1)
		m.forgetAccount() // the CA may have lost or deactivated it: register again next time
	}
	log.Warn("certificate manager: order failed", "challenge", typ, "error_code", f.ErrorCode, "retries_at", f.RetriesAt, "err", err)
	j.retry, j.ordered = f.RetriesAt, m.clock()
	if _, rerr := m.host.ReportCertificateFailed(ctx, o.AccountID, o.ReservedDomainID, f); rerr != nil {
		log.Warn("certificate manager: cannot report the failure; the next sweep orders again", "err", rerr)
		j.held = true
	}
	m.setJob(o.ReservedDomainID, &j)
	return false
}

// challengeOf returns the challenge type the order o tries, the j.next-th
// of the configured ones (in turn), or DNS-01 for a wildcard.
func (m *Manager) challengeOf(o domains.CertificateOrder, j job) string {
	if domains.IsWildcard(o.Domain) {
		return domains.ChallengeDNS01
	}
	return m.challenges[j.next%len(m.challenges)]
}

// progress reports msg as the job's message.
func (m *Manager) progress(ctx context.Context, o domains.CertificateOrder, msg string) (*domains.ReservedDomain, error) {
	return m.host.ReportCertificateProgress(ctx, o.AccountID, o.ReservedDomainID, clip(msg))
}

// caName names the CA in messages: the directory's host.
func (m *Manager) caName() string {
	if u, err := url.Parse(m.directory); err == nil {
		return u.Host
	}
	return m.directory
}

// obtain runs the ACME order for o, validated by challenge type typ
// alone, and returns the chain and key PEM.
func (m *Manager) obtain(ctx context.Context, o domains.CertificateOrder, typ string) (certPEM, keyPEM string, err error) {
	client := &acmez.Client{Client: &acme.Client{Directory: m.directory, HTTPClient: m.httpClient, UserAgent: "edgeplane",
		PollInterval: m.poll}}
	account, err := m.registered(ctx, client.Client)
	if err != nil {
		return "", "", err
	}
	// One solver: acmez tries the types it has solvers for in an order
	// of its own (shuffled, then by past success, shared by the process)
	// and after a failed validation tries the next type in the same order,
	// a second failed validation at the CA. With one, the configured
	// order holds and a failed order costs one validation.
	client.ChallengeSolvers = map[string]acmez.Solver{typ: &solver{m: m, o: o, typ: typ}}
	key, keyPEM, err := newCertificateKey(o.PrivateKeyType)
	if err != nil {
		return "", "", err
	}
	chains, err := client.ObtainCertificateForSANs(ctx, account, key, []string{o.Domain})
	if err != nil {
		return "", "", err
	}
	if len(chains) == 0 {
		return "", "", errors.New("the CA offered no certificate chain")
	}
	return string(chains[0].ChainPEM), keyPEM, nil
}

// registered returns the ACME account, registering its key (kept in the
// store, see [Host.ACMEAccountKey]) with the CA on first use:
// a key the CA knows gives back its account.
func (m *Manager) registered(ctx context.Context, c *acme.Client) (acme.Account, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.account != nil {
		return *m.account, nil
	}
	pemKey, err := m.host.ACMEAccountKey(ctx, m.directory, func() ([]byte, error) {
		_, keyPEM, err := newCertificateKey(domains.KeyTypeECDSA) // ECDSA P-256, as PKCS #8 PEM
		return []byte(keyPEM), err
	})
	if err != nil {
		return acme.Account{}, fmt.Errorf("reading the ACME account key: %w", err)
	}
	block, _ := pem.Decode(pemKey)
	if block == nil {
		return acme.Account{}, errors.New("the stored ACME account key is not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return acme.Account{}, fmt.Errorf("the stored ACME account key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return acme.Account{}, errors.New("the stored ACME account key cannot sign")
	}
	acct := acme.Account{TermsOfServiceAgreed: true, PrivateKey: signer}
	if m.email != "" {
		acct.Contact = []string{"mailto:" + m.email}
	}
	acct, err = c.NewAccount(ctx, acct)
	if err != nil {
		return acme.Account{}, fmt.Errorf("registering the ACME account: %w", err)
	}
	m.account = &acct
	return acct, nil
}

// forgetAccount drops the registered account, so that the next order
// registers the stored key again (which gives back the CA's account for
// it, or a new one on a CA that lost it).
func (m *Manager) forgetAccount() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.account = nil
}

// newCertificateKey returns a new private key of the policy's type (RSA
// 2048 or ECDSA P-256) and its PEM.
func newCertificateKey(typ string) (crypto.Signer, string, error) {
	var (
		k   crypto.Signer
		err error
	)
	switch typ {
	case domains.KeyTypeECDSA:
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case domains.KeyTypeRSA, "":
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		return nil, "", fmt.Errorf("unsupported private key type %q", typ)
	}
	if err != nil {
		return nil, "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, "", err
	}
	return k, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), nil
}

// failure maps an order's error to the failure the Host records (see the
// package doc's # Status): DNS_ERROR when the CA could not validate the
// domain (the domain's DNS does not lead to the edge, or a CAA record
// forbids the CA), retried on the slow schedule; INTERNAL_ERROR for
// everything else, retried with backoff. started is when the job began:
// the wait is the time since, within the code's bounds, with ±10%
// jitter. d is the domain the order was for, typ the challenge type it
// tried and next the one its retry tries.
func (m *Manager) failure(d *domains.ReservedDomain, err error, started time.Time, typ, next string) domains.ProvisioningFailure {
	now := m.clock()
	code, c := classify(err)
	lo, hi := InternalRetryMin, InternalRetryMax
	if code == domains.ErrorCodeDNS {
		lo, hi = DNSRetryMin, DNSRetryMax
	}
	wait := min(max(now.Sub(started), lo), hi)
	wait = time.Duration(float64(wait) * (0.9 + 0.2*mrand.Float64()))
	// The Host keeps the second: the message says the time it shows.
	retries := now.Add(max(wait, 2*time.Second)).Truncate(time.Second)
	msg := failedOrder{Domain: d, Challenge: typ, Next: next, Cause: c, RetriesAt: retries, CAAIdentity: caaIdentity(m.directory)}.message()
	return domains.ProvisioningFailure{ErrorCode: code, Msg: clip(msg), RetriesAt: retries}
}

// clip makes s a valid job message: valid UTF-8, at most
// [domains.MaxJobMsgBytes] bytes.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= domains.MaxJobMsgBytes {
		return s
	}
	return apierr.Truncate(s, domains.MaxJobMsgBytes-len("…"))
}
