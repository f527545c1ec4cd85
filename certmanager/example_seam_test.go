package certmanager_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"

	"github.com/edgeplane/edgeplane/acmedns"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/certmanager"
	"github.com/edgeplane/edgeplane/domains"
)

// oneOrder is a Host with one reserved domain due for a certificate:
// all a Manager asks of the Service (package edgeplane's Host implements
// it over the store). It keeps the challenges the Manager presents,
// which it also answers as an acmedns.Host, and records what it was
// asked and reported.
type oneOrder struct {
	order      domains.CertificateOrder
	mu         sync.Mutex
	done       bool
	accountKey []byte
	challenges map[string]domains.ACMEChallenge // by name
	calls      []string
	report     string
}

// lock locks h and records call; the caller unlocks.
func (h *oneOrder) lock(call string) (unlock func()) {
	h.mu.Lock()
	h.calls = append(h.calls, call)
	return h.mu.Unlock
}
func (h *oneOrder) CertificateOrders(context.Context, int) ([]domains.CertificateOrder, error) {
	defer h.lock("CertificateOrders")()
	if h.done {
		return nil, nil
	}
	return []domains.CertificateOrder{h.order}, nil
}
func (h *oneOrder) ReportCertificateIssued(_ context.Context, _, id, certPEM, _ string) (*domains.ReservedDomain, error) {
	defer h.lock("ReportCertificateIssued")()
	var der []byte
	if block, _ := pem.Decode([]byte(certPEM)); block != nil {
		der = block.Bytes
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, apierr.Invalidf("certificate", "is not a certificate: %v", err)
	}
	h.done, h.report = true, fmt.Sprintf("issued: a certificate for %v", leaf.DNSNames)
	return &domains.ReservedDomain{ID: id}, nil
}
func (h *oneOrder) ReportCertificateFailed(_ context.Context, _, id string, f domains.ProvisioningFailure) (*domains.ReservedDomain, error) {
	defer h.lock("ReportCertificateFailed")()
	h.done, h.report = true, "failed: "+f.ErrorCode+": "+f.Msg
	return &domains.ReservedDomain{ID: id}, nil
}
func (h *oneOrder) ReportCertificateProgress(_ context.Context, _, id, _ string) (*domains.ReservedDomain, error) {
	defer h.lock("ReportCertificateProgress")()
	return &domains.ReservedDomain{ID: id}, nil
}
func (h *oneOrder) ACMEAccountKey(_ context.Context, _ string, generate func() ([]byte, error)) ([]byte, error) {
	defer h.lock("ACMEAccountKey")()
	if h.accountKey == nil {
		key, err := generate()
		if err != nil {
			return nil, err
		}
		h.accountKey = key
	}
	return h.accountKey, nil
}
func (h *oneOrder) PutACMEChallenge(_ context.Context, c domains.ACMEChallenge) error {
	defer h.lock("PutACMEChallenge " + c.Type + " " + c.Name)()
	h.challenges[c.Name] = c
	return nil
}
func (h *oneOrder) DeleteACMEChallenge(_ context.Context, _, name, _ string) error {
	defer h.lock("DeleteACMEChallenge")()
	delete(h.challenges, name)
	return nil
}
func (h *oneOrder) ReapACMEChallenges(context.Context, int) (int, error) {
	defer h.lock("ReapACMEChallenges")()
	return 0, nil // the fake's challenges do not expire
}
func (h *oneOrder) WaitRevision(context.Context, int64) error { return nil }

// ACMEChallenge serves the DNS server (acmedns.Host).
func (h *oneOrder) ACMEChallenge(_ context.Context, typ, name, _ string) (*domains.ACMEChallenge, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.challenges[name]; ok && c.Type == typ {
		return &c, nil
	}
	return nil, apierr.NotFoundf("no %s challenge for %s", typ, name)
}

// A Manager wired to a fake of its Host makes a pass against Pebble, an
// ACME CA run in the process: it orders the one due certificate, a
// wildcard, whose DNS-01 challenge it presents through the Host; a DNS
// server (package acmedns) wired to the same fake answers the CA's
// query; the outcome is reported to the Host.
func ExampleManager_Pass() {
	host := &oneOrder{challenges: map[string]domains.ACMEChallenge{}, order: domains.CertificateOrder{AccountID: "ac_1",
		ReservedDomainID: "rd_1", Domain: "*.example.test", Authority: "letsencrypt", PrivateKeyType: domains.KeyTypeECDSA}}
	dnsServer, err := acmedns.New(acmedns.Options{Host: host, Zones: []string{"example.test"}})
	if err != nil {
		log.Fatal(err)
	}
	dnsAddr, err := dnsServer.Listen("127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer dnsServer.Close()

	// Pebble, whose validation asks dnsAddr for the TXT record. It reads
	// its knobs from the environment: validate at once, refuse no nonce.
	for k, v := range map[string]string{"PEBBLE_VA_NOSLEEP": "1", "PEBBLE_WFE_NONCEREJECT": "0"} {
		os.Setenv(k, v)
		defer os.Unsetenv(k)
	}
	quiet, pebbleDB := log.New(io.Discard, "", 0), db.NewMemoryStore()
	authority := ca.New(quiet, pebbleDB, "", "ecdsa", 0, 1, map[string]ca.Profile{"default": {Description: "default"}})
	validator := va.New(quiet, 0, 0, false, dnsAddr, pebbleDB)
	front := wfe.New(quiet, pebbleDB, validator, authority, nil, false, false, 0, 0)
	acmeServer := httptest.NewTLSServer(front.Handler())
	defer acmeServer.Close()

	m, err := certmanager.New(certmanager.Options{Host: host, Directory: acmeServer.URL + wfe.DirectoryPath,
		HTTPClient: acmeServer.Client(), PollInterval: 20 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	res, err := m.Pass(context.Background())
	fmt.Printf("issued %d, failed %d, %v\n", res.Issued, res.Failed, err)
	fmt.Println(host.report)
	fmt.Println("the Manager asked the Host:", strings.Join(host.calls, ", "))
	// Output:
	// issued 1, failed 0, <nil>
	// issued: a certificate for [*.example.test]
	// the Manager asked the Host: ReapACMEChallenges, CertificateOrders, ReportCertificateProgress, ACMEAccountKey, PutACMEChallenge dns-01 _acme-challenge.example.test, ReportCertificateProgress, DeleteACMEChallenge, ReportCertificateIssued
}
