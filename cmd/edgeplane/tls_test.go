package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  string
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "edgeplane test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// leaf issues a server certificate for host, and returns the chain (leaf,
// then the CA) and the key, in PEM.
func (ca *testCA) leaf(t *testing.T, host string, serial int64) (chainPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) + ca.pem,
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
}

// uploadCertificate uploads a chain and key through POST /tls_certificates
// and attaches it to tn's reserved domain; it returns the certificate's
// ID.
func (tn *tenant) uploadCertificate(chainPEM, keyPEM string) string {
	body, _ := json.Marshal(map[string]string{"certificate_pem": chainPEM, "private_key_pem": keyPEM})
	id := tn.api.must(201, "POST", "/tls_certificates", string(body))["id"].(string)
	tn.api.must(200, "PATCH", "/reserved_domains/"+tn.domain, `{"certificate_id":"`+id+`"}`)
	return id
}

// TestProxyTLS: an edgeplane proxy process terminates TLS with the
// certificate uploaded through the API and attached to the edge's
// reserved domain, chosen by SNI. HTTPS edges serve port 443 only (the
// API refuses another port), while the test's listener is on a port of
// its own: so the client names host:443, as a real client would, and
// connects to the listener (curl --connect-to host:443:127.0.0.1:PORT;
// a crypto/tls client dialing the listener). curl --resolve
// host:PORT:127.0.0.1 would send Host host:PORT, a hostport no HTTPS edge
// can list. A wrong SNI fails the handshake with the alert
// unrecognized_name, on the HTTPS listener and on the agents' tunnel
// listener (which, without -tunnel-cert, also chooses the certificate by
// SNI); a Host that is not the SNI gets 421; a certificate attached
// later is presented from the next handshake on, without a restart.
func TestProxyTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	spec := "sqlite:" + filepath.Join(t.TempDir(), "edgeplane.db")
	key := "epk_" + strings.Repeat("t", 40)
	api, _ := startProcess(t, spec, "EDGEPLANE_API_KEY="+key)
	p := startProxyArgs(t, "proxy", spec, []string{"-tunnel-addr", "127.0.0.1:0"})
	apiA := apiClient{t: t, base: "http://" + api, key: key}
	a, b := newTenant(apiA, "a.example.com", "a"), newTenant(apiA, "b.example.com", "b")
	upA, upB := newUpstream(t, "a"), newUpstream(t, "b")
	a.registerTunnel(t, spec, upA.URL, time.Hour)
	b.registerTunnel(t, spec, upB.URL, time.Hour)
	ca := newTestCA(t)
	chain, keyPEM := ca.leaf(t, "a.example.com", 2)
	certA := a.uploadCertificate(chain, keyPEM) // b.example.com has no certificate
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)

	// crypto/tls: the certificate for a.example.com, issued by the CA.
	c := through(p.https, &tls.Config{RootCAs: pool})
	if took, ok := within(5*time.Second, func() bool { code, _ := fetch(c, "https://a.example.com/tls", "tls"); return code == 200 }); !ok {
		code, body := fetch(c, "https://a.example.com/tls", "tls")
		t.Fatalf("https://a.example.com/: %d %q", code, body)
	} else {
		t.Logf("the proxy served a.example.com over TLS %v after the upload", took.Round(time.Millisecond))
	}
	if code, body := fetch(c, "https://a.example.com/tls", "tls"); code != 200 || body != "upstream a /tls" {
		t.Errorf("https://a.example.com/tls: %d %q", code, body)
	}
	serialAt := func(addr, serverName string) (int64, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{ServerName: serverName, RootCAs: pool})
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
	}
	serial := func(serverName string) (int64, error) { return serialAt(p.https, serverName) }
	for _, addr := range []string{p.https, p.agents} {
		if s, err := serialAt(addr, "a.example.com"); err != nil || s != 2 {
			t.Errorf("handshake for a.example.com on %s: serial %d, %v; want the uploaded certificate (2)", addr, s, err)
		}
		// Wrong SNI: a name no edge serves, a served name without a
		// certificate, none at all.
		for _, name := range []string{"c.example.com", "b.example.com", ""} {
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
				&tls.Config{ServerName: name, RootCAs: pool, InsecureSkipVerify: name == ""})
			if err == nil {
				conn.Close()
				t.Errorf("handshake with SNI %q on %s succeeded; want it refused", name, addr)
			} else if !strings.Contains(err.Error(), "tls: unrecognized name") {
				t.Errorf("handshake with SNI %q on %s: %v; want the alert unrecognized_name", name, addr, err)
			}
		}
	}
	// The Host is not the SNI: 421, never b's edge.
	if code, body := fetch(c, "https://b.example.com/", "tls"); code != 0 {
		t.Errorf("https://b.example.com/ without a certificate for it: %d %q; want a failed handshake", code, body)
	}
	misdirected := through(p.https, &tls.Config{RootCAs: pool, ServerName: "a.example.com"})
	if code, _ := fetch(misdirected, "https://b.example.com/", "tls"); code != 421 {
		t.Errorf("SNI a.example.com, Host b.example.com: %d; want 421", code)
	}
	if n := upB.count("tls"); n != 0 {
		t.Errorf("b's upstream received %d requests over TLS", n)
	}

	// curl, as an operator would check it.
	if _, err := exec.LookPath("curl"); err != nil {
		t.Log("curl is not installed: the curl checks are skipped")
	} else {
		caFile := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(caFile, []byte(ca.pem), 0o600); err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(p.https)
		curl := func(host string) (string, error) {
			out, err := exec.Command("curl", "-sS", "--max-time", "10", "--connect-to", host+":443:127.0.0.1:"+port, "--cacert", caFile, "https://"+host+"/curl").CombinedOutput()
			return string(out), err
		}
		if out, err := curl("a.example.com"); err != nil || out != "upstream a /curl" {
			t.Errorf("curl https://a.example.com/curl: %v %q", err, out)
		}
		for _, host := range []string{"b.example.com", "c.example.com"} {
			if out, err := curl(host); err == nil {
				t.Errorf("curl https://%s/ (no certificate for that SNI) succeeded: %q", host, out)
			} else {
				t.Logf("curl https://%s/: %v: %s", host, err, strings.TrimSpace(out))
			}
		}
	}

	// Another certificate attached to the domain is presented from the
	// next handshake on; the first can then be deleted.
	chain2, key2 := ca.leaf(t, "a.example.com", 3)
	a.uploadCertificate(chain2, key2)
	if took, ok := within(time.Second, func() bool { s, _ := serial("a.example.com"); return s == 3 }); !ok {
		t.Errorf("the new certificate is not presented 1s after it was attached")
	} else {
		t.Logf("the new certificate was presented %v after it was attached", took.Round(time.Millisecond))
	}
	apiA.must(204, "DELETE", "/tls_certificates/"+certA, "")

	// SIGTERM: a graceful shutdown, exit status 0.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v; want exit status 0", err)
	}
}
