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

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
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
	// DefaultInterval is how often [Manager.Run] looks for due domains.
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

// Options configures a [Manager]. The zero value of every field but
// Host means the documented default.
type Options struct {
	// Host is the Service's privileged side: orders, reports, the
	// account key and the challenges go through it. Required.
	Host *edgeplane.Host
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
	// a wildcard, in order of preference: [edgeplane.ChallengeHTTP01]
	// and [edgeplane.ChallengeTLSALPN01] (the default is both). A
	// wildcard is always validated by [edgeplane.ChallengeDNS01].
	Challenges []string
	// Clock gives the time of retries; nil means time.Now. It must be the
	// Service's clock, whose reports check retry times against it.
	Clock func() time.Time
	// Logger receives the Manager's warnings and one line per order; nil
	// discards them.
	Logger *slog.Logger
	// Interval is how often Run looks for due domains; zero means
	// [DefaultInterval].
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
	host       *edgeplane.Host
	directory  string
	email      string
	httpClient *http.Client
	challenges []string
	clock      func() time.Time
	log        *slog.Logger
	interval   time.Duration
	poll       time.Duration

	mu      sync.Mutex
	account *acme.Account // registered with the CA; nil until the first order

	issued, dnsErrors, internalErrors atomic.Int64 // Stats
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
		clock: o.Clock, log: o.Logger, interval: o.Interval, poll: o.PollInterval}
	if m.host == nil {
		return nil, errors.New("certmanager: Options.Host is required")
	}
	if m.directory == "" {
		m.directory = LetsEncryptProduction
	}
	if u, err := url.Parse(m.directory); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("certmanager: Options.Directory %q: want an absolute https URL", m.directory)
	}
	if len(m.directory) > edgeplane.MaxACMEDirectory {
		// The Host's bound ([edgeplane.Host.ACMEAccountKey]): a longer
		// directory would fail every order.
		return nil, fmt.Errorf("certmanager: Options.Directory %.64q...: want at most %d bytes", m.directory, edgeplane.MaxACMEDirectory)
	}
	if m.email != "" && (!strings.Contains(m.email, "@") || strings.ContainsAny(m.email, " \t\r\n,<>") || len(m.email) > 254) {
		return nil, fmt.Errorf("certmanager: Options.Email %q: want an email address", m.email)
	}
	if len(m.challenges) == 0 {
		m.challenges = []string{edgeplane.ChallengeHTTP01, edgeplane.ChallengeTLSALPN01}
	}
	for _, c := range m.challenges {
		if c != edgeplane.ChallengeHTTP01 && c != edgeplane.ChallengeTLSALPN01 {
			return nil, fmt.Errorf("certmanager: Options.Challenges: %q: want %s or %s", c, edgeplane.ChallengeHTTP01, edgeplane.ChallengeTLSALPN01)
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

// Run makes a pass ([Manager.Pass]) at once and then every Interval,
// until ctx ends; it returns ctx's error. Failures of a pass are logged.
func (m *Manager) Run(ctx context.Context) error {
	for {
		if _, err := m.Pass(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("certificate manager: pass failed", "err", err)
		}
		t := time.NewTimer(m.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
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
// domain that is due ([edgeplane.Host.CertificateOrders]), one after
// another, and reports each outcome. It fails only when the orders
// cannot be read; an order's failure is reported on its domain.
func (m *Manager) Pass(ctx context.Context) (PassResult, error) {
	var res PassResult
	if _, err := m.host.ReapACMEChallenges(ctx, edgeplane.MaxPageSize); err != nil {
		m.log.Warn("certificate manager: cannot remove expired challenges", "err", err)
	}
	orders, err := m.host.CertificateOrders(ctx, 0)
	if err != nil {
		return res, err
	}
	for _, o := range orders {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if m.Order(ctx, o) {
			res.Issued++
		} else if ctx.Err() == nil {
			res.Failed++
		}
	}
	return res, nil
}

// Order obtains a certificate for one order and reports the outcome to
// the Host: the job's progress while it runs, then the certificate, or
// the failure with its error code and retry time. It reports true when a
// certificate was issued and recorded. When ctx ends during the order,
// nothing is reported: the domain stays due for the next holder of the
// lease.
func (m *Manager) Order(ctx context.Context, o edgeplane.CertificateOrder) bool {
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
	octx, cancel := context.WithTimeout(ctx, orderTimeout)
	defer cancel()
	certPEM, keyPEM, err := m.obtain(octx, o)
	if ctx.Err() != nil {
		return false
	}
	if err == nil {
		_, err = m.host.ReportCertificateIssued(ctx, o.AccountID, o.ReservedDomainID, certPEM, keyPEM)
		if err == nil {
			log.Info("certificate manager: certificate issued")
			m.issued.Add(1)
			return true
		}
		if apierr.CodeOf(err) == apierr.FailedPrecondition || errors.Is(err, apierr.ErrNotFound) {
			log.Info("certificate manager: the domain changed during the order; certificate dropped", "err", err)
			return false
		}
		err = fmt.Errorf("the issued certificate could not be recorded: %w", err)
	}
	f := m.failure(o, err, started)
	if f.ErrorCode == domains.ErrorCodeDNS {
		m.dnsErrors.Add(1)
	} else {
		m.internalErrors.Add(1)
		m.forgetAccount() // the CA may have lost or deactivated it: register again next time
	}
	log.Warn("certificate manager: order failed", "error_code", f.ErrorCode, "retries_at", f.RetriesAt, "err", err)
	if _, rerr := m.host.ReportCertificateFailed(ctx, o.AccountID, o.ReservedDomainID, f); rerr != nil {
		log.Warn("certificate manager: cannot report the failure", "err", rerr)
	}
	return false
}

// progress reports msg as the job's message.
func (m *Manager) progress(ctx context.Context, o edgeplane.CertificateOrder, msg string) (*domains.ReservedDomain, error) {
	return m.host.ReportCertificateProgress(ctx, o.AccountID, o.ReservedDomainID, clip(msg))
}

// caName names the CA in messages: the directory's host.
func (m *Manager) caName() string {
	if u, err := url.Parse(m.directory); err == nil {
		return u.Host
	}
	return m.directory
}

// obtain runs the ACME order for o and returns the chain and key PEM.
func (m *Manager) obtain(ctx context.Context, o edgeplane.CertificateOrder) (certPEM, keyPEM string, err error) {
	client := &acmez.Client{Client: &acme.Client{Directory: m.directory, HTTPClient: m.httpClient, UserAgent: "edgeplane",
		PollInterval: m.poll}}
	account, err := m.registered(ctx, client.Client)
	if err != nil {
		return "", "", err
	}
	client.ChallengeSolvers = m.solvers(o)
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
// store, see [edgeplane.Host.ACMEAccountKey]) with the CA on first use:
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
// jitter.
func (m *Manager) failure(o edgeplane.CertificateOrder, err error, started time.Time) domains.ProvisioningFailure {
	now := m.clock()
	code, msg := classify(o.Domain, err)
	lo, hi := InternalRetryMin, InternalRetryMax
	if code == domains.ErrorCodeDNS {
		lo, hi = DNSRetryMin, DNSRetryMax
	}
	wait := min(max(now.Sub(started), lo), hi)
	wait = time.Duration(float64(wait) * (0.9 + 0.2*mrand.Float64()))
	return domains.ProvisioningFailure{ErrorCode: code, Msg: clip(msg), RetriesAt: now.Add(max(wait, time.Second))}
}

// dnsProblems are the ACME problems of a validation that mean the
// domain's DNS does not lead to the edge (or forbids the CA).
var dnsProblems = map[string]bool{
	acme.ProblemTypeDNS: true, acme.ProblemTypeCAA: true, acme.ProblemTypeConnection: true,
	acme.ProblemTypeUnauthorized: true, acme.ProblemTypeIncorrectResponse: true, acme.ProblemTypeTLS: true,
	acme.ProblemTypeMalformed: true, acme.ProblemTypeRejectedIdentifier: true,
}

// classify returns the error code and the user's message of an order's
// error.
func classify(domain string, err error) (code, msg string) {
	var p acme.Problem
	if errors.As(err, &p) {
		_, validation := p.Resource.(acme.Authorization)
		switch {
		case validation && dnsProblems[p.Type], p.Type == acme.ProblemTypeDNS, p.Type == acme.ProblemTypeCAA, p.Type == acme.ProblemTypeRejectedIdentifier:
			return domains.ErrorCodeDNS, fmt.Sprintf("the CA could not validate %s: %s; check that its DNS records lead to this service (see the domain's cname_target and acme_challenge_cname_target)",
				domain, problemText(p))
		case p.Type == acme.ProblemTypeRateLimited:
			return domains.ErrorCodeInternal, "the CA's rate limit was reached: " + problemText(p)
		}
		return domains.ErrorCodeInternal, "the CA refused the order: " + problemText(p)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return domains.ErrorCodeInternal, "the order timed out"
	}
	return domains.ErrorCodeInternal, "cannot obtain a certificate from the CA: " + err.Error()
}

// problemText is a problem's detail, else its type.
func problemText(p acme.Problem) string {
	if p.Detail != "" {
		return p.Detail
	}
	return strings.TrimPrefix(p.Type, acme.ProblemTypeNamespace)
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
