package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The local CA of the agents' tunnel listener.
//
// edgeplane serve -proxy -proxy-tunnel-addr ADDR without
// -proxy-tunnel-cert makes a certificate authority of its own and a leaf
// certificate it signs for the listener, so that a first run needs
// neither openssl nor a public certificate: agents trust the CA with
// -ca. Both are kept in a directory beside the store (see
// localTLSDirFor) and reused at every start, so agents given the CA's
// file once keep trusting the server. The leaf is issued again, by the
// same CA, when the listener's host is one it does not cover or when it
// has less than localLeafRenewBefore left. A file that is there but
// cannot be used (unreadable, not PEM, a key that is not the
// certificate's, a leaf another CA signed) stops serve with an error
// that names it: it is never replaced silently, since agents may trust
// it.
//
// The reserved domains' certificates are still presented by SNI, first:
// an agent that dials the listener by a reserved domain's name (with
// that domain's certificate uploaded or issued) gets that certificate,
// as edgeplane proxy does; the leaf is presented for the names it covers
// and for a hello without a name (an agent dialing an IP address).

// The files of a local TLS directory.
const (
	localCAFile      = "ca.pem" // the CA's certificate: agents' -ca
	localCAKeyFile   = "ca.key"
	localLeafFile    = "tunnel.pem" // the tunnel listener's certificate
	localLeafKeyFile = "tunnel.key"
)

// localCAValidity and localLeafValidity are how long a new CA and a new
// leaf are valid; a leaf with less than localLeafRenewBefore left is
// issued again at start.
const (
	localCAValidity      = 10 * 365 * 24 * time.Hour
	localLeafValidity    = 365 * 24 * time.Hour
	localLeafRenewBefore = 30 * 24 * time.Hour
)

// localTLS is the local CA and the leaf of the tunnel listener, loaded
// or made by loadLocalTLS.
type localTLS struct {
	dir    string // absolute
	caFile string // absolute path of the CA's certificate
	// caSHA256 is the SHA-256 of the CA certificate's DER, in hex.
	caSHA256 string
	leaf     *tls.Certificate // with Leaf set
	// made says what this start did: "made" (a new CA and leaf),
	// "issued" (a new leaf from the kept CA: why in reason) or "" (both
	// kept).
	made, reason string
}

// localTLSDirFor returns the directory of the local CA of a server on
// the store spec: for sqlite:PATH, PATH.tls beside the database (and its
// PATH.sealkey); for the other stores (memory:, PostgreSQL), which have
// no directory of their own, edgeplane/tunnel-ca in the user's
// configuration directory (os.UserConfigDir: $XDG_CONFIG_HOME or
// ~/.config on Linux), shared by every such server of the user. The
// path is absolute: it is printed for agents' -ca.
func localTLSDirFor(spec string) (string, error) {
	if path, ok := strings.CutPrefix(spec, "sqlite:"); ok {
		return filepath.Abs(path + ".tls")
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no directory for the tunnel listener's local CA (%v): give -proxy-tunnel-ca-dir, or -proxy-tunnel-cert and -proxy-tunnel-key", err)
	}
	return filepath.Join(dir, "edgeplane", "tunnel-ca"), nil
}

// localTLSNames returns the names and addresses a leaf for a listener on
// addr (HOST:PORT) must cover: its host (an IP address, or a name), and
// 127.0.0.1, ::1 and localhost when it listens on loopback or on every
// interface.
func localTLSNames(addr string) (dnsNames []string, ips []netip.Addr, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	loopback := host == "" || host == "localhost"
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		loopback = ip.IsLoopback() || ip.IsUnspecified()
		if !ip.IsUnspecified() {
			ips = append(ips, ip)
		}
	} else if host != "" {
		dnsNames = append(dnsNames, host)
	}
	if loopback {
		for _, ip := range []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()} {
			if !slices.Contains(ips, ip) {
				ips = append(ips, ip)
			}
		}
		if !slices.Contains(dnsNames, "localhost") {
			dnsNames = append(dnsNames, "localhost")
		}
	}
	return dnsNames, ips, nil
}

// loadLocalTLS loads the local CA kept in dir and the leaf it signed for
// a listener on addr, or makes what is not there yet (the directory
// included), at now. See the top of this file.
func loadLocalTLS(dir, addr string, now time.Time) (*localTLS, error) {
	dnsNames, ips, err := localTLSNames(addr)
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("the tunnel listener's local CA: %w; give -proxy-tunnel-ca-dir a directory serve may write", err)
	}
	l := &localTLS{dir: dir, caFile: filepath.Join(dir, localCAFile)}
	ca, caKey, err := loadPair(dir, localCAFile, localCAKeyFile)
	if err != nil {
		return nil, err
	}
	if ca == nil {
		if ca, caKey, err = newLocalCA(now); err != nil {
			return nil, err
		}
		// The key first: a CA certificate is never there without it.
		if err := writePair(dir, localCAFile, localCAKeyFile, ca, caKey); err != nil {
			return nil, err
		}
		l.made = "made"
	} else if err := checkLocalCA(dir, ca, now); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(ca.Raw)
	l.caSHA256 = hex.EncodeToString(sum[:])

	// A new CA's leaf is new too: one kept from another CA is of no use.
	var leaf *x509.Certificate
	var leafKey *ecdsa.PrivateKey
	if l.made == "" {
		if leaf, leafKey, err = loadPair(dir, localLeafFile, localLeafKeyFile); err != nil {
			return nil, err
		}
	}
	if leaf != nil {
		if err := leaf.CheckSignatureFrom(ca); err != nil {
			return nil, fmt.Errorf("%s was not signed by the CA of %s (%v): remove %s and %s to have a new one issued",
				filepath.Join(dir, localLeafFile), l.caFile, err, filepath.Join(dir, localLeafFile), filepath.Join(dir, localLeafKeyFile))
		}
		switch missing := leafLacks(leaf, dnsNames, ips); {
		case missing != "":
			l.made, l.reason = "issued", "the one kept does not cover "+missing
		case leaf.NotAfter.Sub(now) < localLeafRenewBefore:
			l.made, l.reason = "issued", "the one kept expires on "+leaf.NotAfter.UTC().Format(time.DateOnly)
		}
	}
	if leaf == nil || l.made == "issued" {
		if leaf, leafKey, err = newLocalLeaf(ca, caKey, dnsNames, ips, now); err != nil {
			return nil, err
		}
		if err := writePair(dir, localLeafFile, localLeafKeyFile, leaf, leafKey); err != nil {
			return nil, err
		}
		if l.made == "" {
			l.made = "issued"
		}
	}
	l.leaf = &tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: leafKey, Leaf: leaf}
	return l, nil
}

// checkLocalCA reports a kept CA that cannot sign: not a CA, or expired.
func checkLocalCA(dir string, ca *x509.Certificate, now time.Time) error {
	path := filepath.Join(dir, localCAFile)
	redo := fmt.Sprintf("remove the directory %s to make a new CA (agents then need the new %s as -ca), or give -proxy-tunnel-cert and -proxy-tunnel-key", dir, localCAFile)
	switch {
	case !ca.IsCA || ca.KeyUsage&x509.KeyUsageCertSign == 0:
		return fmt.Errorf("%s is not a CA certificate: %s", path, redo)
	case now.After(ca.NotAfter):
		return fmt.Errorf("the local CA %s expired on %s: %s", path, ca.NotAfter.UTC().Format(time.DateOnly), redo)
	}
	return nil
}

// leafLacks returns the first of the names and addresses leaf does not
// cover, or "".
func leafLacks(leaf *x509.Certificate, dnsNames []string, ips []netip.Addr) string {
	for _, n := range dnsNames {
		if !slices.Contains(leaf.DNSNames, n) {
			return n
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(leaf.IPAddresses, func(have net.IP) bool { a, ok := netip.AddrFromSlice(have); return ok && a.Unmap() == ip }) {
			return ip.String()
		}
	}
	return ""
}

// newLocalCA makes a CA's key and self-signed certificate.
func newLocalCA(now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	name := "edgeplane local CA"
	if host != "" {
		name += " on " + host
	}
	tmpl := &x509.Certificate{SerialNumber: randomSerial(), Subject: pkix.Name{CommonName: name, Organization: []string{"edgeplane"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(localCAValidity),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// newLocalLeaf makes a key and a server certificate for dnsNames and
// ips, signed by ca.
func newLocalLeaf(ca *x509.Certificate, caKey *ecdsa.PrivateKey, dnsNames []string, ips []netip.Addr, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: randomSerial(), Subject: pkix.Name{CommonName: "edgeplane tunnel listener", Organization: []string{"edgeplane"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(localLeafValidity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true,
		DNSNames: dnsNames}
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.IP(ip.AsSlice()))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func randomSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n.Add(n, big.NewInt(1)) // never 0
}

// loadPair reads the certificate certName and its key keyName in dir.
// Neither there: nil, nil, nil. One without the other, a file that is
// not what it should be, or a key that is not the certificate's: an
// error naming the file and what to do.
func loadPair(dir, certName, keyName string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPath, keyPath := filepath.Join(dir, certName), filepath.Join(dir, keyName)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	switch {
	case errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist):
		return nil, nil, nil
	case certErr != nil && !errors.Is(certErr, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("cannot read %s: %v", certPath, unwrapPath(certErr))
	case keyErr != nil && !errors.Is(keyErr, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("cannot read %s: %v", keyPath, unwrapPath(keyErr))
	case certErr != nil:
		return nil, nil, fmt.Errorf("%s is there but %s is not: put the certificate back, or remove %s too to have both made again%s",
			keyPath, certPath, keyPath, trustNote(certName))
	case keyErr != nil:
		return nil, nil, fmt.Errorf("%s is there but its private key %s is not: put the key back, or remove %s too to have both made again%s",
			certPath, keyPath, certPath, trustNote(certName))
	}
	bad := func(path, what string) error {
		return fmt.Errorf("%s is not %s: restore it, or remove %s and %s to have both made again%s", path, what, certPath, keyPath, trustNote(certName))
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, bad(certPath, "a PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, bad(certPath, "a readable certificate ("+err.Error()+")")
	}
	block, _ = pem.Decode(keyPEM)
	if block == nil {
		return nil, nil, bad(keyPath, "a PEM private key")
	}
	var key *ecdsa.PrivateKey
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "PRIVATE KEY":
		var k any
		if k, err = x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
			var ok bool
			if key, ok = k.(*ecdsa.PrivateKey); !ok {
				err = errors.New("not an ECDSA key")
			}
		}
	default:
		err = fmt.Errorf("a PEM block of type %q", block.Type)
	}
	if err != nil {
		return nil, nil, bad(keyPath, "an ECDSA private key ("+err.Error()+")")
	}
	if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, nil, fmt.Errorf("%s is not the private key of %s: put back the files that belong together, or remove both to have them made again%s",
			keyPath, certPath, trustNote(certName))
	}
	return cert, key, nil
}

// trustNote is what removing the certificate certName costs.
func trustNote(certName string) string {
	if certName == localCAFile {
		return " (a new CA: agents then need the new " + localCAFile + " as -ca)"
	}
	return " (the same CA issues it: agents keep trusting it)"
}

// unwrapPath returns the error of a *fs.PathError without its path,
// which the message already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// writePair writes key (mode 0600), then cert (0644), as PEM files
// keyName and certName in dir, each atomically.
func writePair(dir, certName, keyName string, cert *x509.Certificate, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, keyName), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, certName), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644)
}

// writeFileAtomic writes data to path with mode perm: to a new file in
// the same directory, synced, then renamed over path, so that path is
// never seen half written.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %v", path, unwrapPath(err))
	}
	tmp := f.Name()
	err = f.Chmod(perm)
	if err == nil {
		_, err = io.Copy(f, bytes.NewReader(data))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write %s: %v", path, unwrapPath(err))
	}
	return nil
}

// covers reports whether the leaf is the certificate to present for a
// ClientHello naming serverName: no name (an agent that dialed an IP
// address), or a name the leaf holds.
func (l *localTLS) covers(serverName string) bool {
	return serverName == "" || l.leaf.Leaf.VerifyHostname(serverName) == nil
}

// report prints on w where the tunnel listener's certificate comes from
// and the command that runs an agent against server (the listener's
// HOST:PORT as agents dial it); httpScheme says the proxy has a plain
// HTTP listener: the command asks for an http endpoint there, which
// needs no certificate for the domain (an https one does).
func (l *localTLS) report(w io.Writer, server string, httpScheme bool) {
	var how string
	switch l.made {
	case "made":
		how = "a new CA, made now"
	case "issued":
		how = "the CA kept there; the listener's certificate issued now"
		if l.reason != "" {
			how += ": " + l.reason
		}
	default:
		how = "kept from an earlier start"
	}
	fmt.Fprintf(w, "tunnel certificate: signed by the local CA %s (%s; SHA-256 %s)\n", l.caFile, how, l.caSHA256)
	scheme := ""
	if httpScheme {
		scheme = " -scheme http"
	}
	fmt.Fprintf(w, "run an agent (its authtoken in EDGEPLANE_AUTHTOKEN: a credential's token that may bind the domain, which the account reserved; 3000: the app's port):\n")
	fmt.Fprintf(w, "  edgeplane agent -server %s -ca %s http 3000 -domain app.example.com%s\n", shellQuote(server), shellQuote(l.caFile), scheme)
}

// agentDialAddr returns the HOST:PORT agents dial for a listener asked
// for as addr and listening on listened: addr's host when it names one
// (the certificate's), else the listener's address; 127.0.0.1 for every
// interface.
func agentDialAddr(addr, listened string) string {
	host, _, _ := net.SplitHostPort(addr)
	lhost, port, err := net.SplitHostPort(listened)
	if err != nil {
		return listened
	}
	if ip, err := netip.ParseAddr(host); host == "" || err == nil && ip.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", port)
	}
	if _, err := netip.ParseAddr(host); err != nil { // a name
		return net.JoinHostPort(host, port)
	}
	return net.JoinHostPort(lhost, port)
}
