package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"flag"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/internal/acmetest"
	"github.com/edgeplane/edgeplane/internal/syncbuf"
)

// latePebble is Pebble (package acmetest) for a server under test: its
// HTTPS server runs from the start (serve needs its directory URL), its
// validation once the proxy's ports are known.
type latePebble struct {
	*acmetest.Pebble
	flags []string // serve's -acme-* flags for it
}

func startLatePebble(t *testing.T) *latePebble {
	t.Helper()
	p := &latePebble{Pebble: acmetest.NewPebble(t)}
	rootsFile := filepath.Join(t.TempDir(), "acme-server-roots.pem")
	if err := os.WriteFile(rootsFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Server.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	// The default -acme-interval (a sweep a minute): orders start from
	// the store's change feed.
	p.flags = []string{"-acme-directory", p.Directory, "-acme-ca-roots", rootsFile, "-acme-email", "ops@example.com"}
	return p
}

// start starts Pebble's validation on the ports of the proxy whose
// stdout is out, resolving names to 127.0.0.1, and returns the proxy's
// HTTP and HTTPS addresses.
func (p *latePebble) start(t *testing.T, out string, names ...string) (proxyHTTP, proxyHTTPS string) {
	t.Helper()
	h := regexp.MustCompile(`(?m)^proxy on http://(\S+)$`).FindStringSubmatch(out)
	hs := regexp.MustCompile(`(?m)^proxy on https://(\S+)$`).FindStringSubmatch(out)
	if h == nil || hs == nil {
		t.Fatalf("stdout: %s", out)
	}
	portOf := func(addr string) int {
		_, p, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(p)
		return n
	}
	p.Start(t, portOf(h[1]), portOf(hs[1]), acmetest.StartResolver(t, names...).Addr, 0)
	return h[1], hs[1]
}

// TestServeACME: edgeplane serve -proxy orders a certificate from Pebble
// (the ACME test server, in this process) for a reserved domain with a
// certificate management policy, the challenge answered by the proxy's
// HTTP listener; the proxy then presents it (crypto/tls and curl verify
// it with Pebble's root); deleting the domain deletes the certificate.
// With the default -acme-interval, the order starts when the policy is
// set: the certificate is there within 15 s.
func TestServeACME(t *testing.T) {
	pb := startLatePebble(t)
	spec := "sqlite:" + filepath.Join(t.TempDir(), "edgeplane.db")
	key := "epk_" + strings.Repeat("a", 40)
	s := startServe(t, append([]string{"-store", spec, "-proxy", "-proxy-http-addr", "127.0.0.1:0", "-proxy-https-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0"}, pb.flags...),
		map[string]string{"EDGEPLANE_API_KEY": key, "EDGEPLANE_RATE_LIMIT": "0"})
	_, proxyHTTPS := pb.start(t, s.stdout.String(), "app.example.com")
	pebbleRoots := pb.Roots
	portOf := func(addr string) int {
		_, p, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(p)
		return n
	}
	api := apiClient{t: t, base: "http://" + s.addr, key: key}
	tn := newTenant(api, "app.example.com", "app")
	up := newUpstream(t, "app")
	tn.registerTunnel(t, spec, up.URL, time.Hour)
	d := api.must(200, "PATCH", "/reserved_domains/"+tn.domain, `{"certificate_management_policy":{"authority":"letsencrypt","private_key_type":"ecdsa"}}`)
	if st, _ := d["certificate_management_status"].(map[string]any); st == nil || st["provisioning_job"] == nil {
		t.Fatalf("after attaching the policy: %v", d)
	}
	var certID string
	if took, ok := within(15*time.Second, func() bool {
		d = api.must(200, "GET", "/reserved_domains/"+tn.domain, "")
		c, _ := d["certificate"].(map[string]any)
		if c != nil {
			certID, _ = c["id"].(string)
		}
		return certID != ""
	}); !ok {
		t.Fatalf("no certificate after %v: %v\n%s", took, d, tail(s.stderr.String(), 3000))
	} else {
		t.Logf("issued %v after the policy was attached", took.Round(time.Millisecond))
	}
	st, _ := d["certificate_management_status"].(map[string]any)
	if st == nil || st["provisioning_job"] != nil || st["renews_at"] == nil {
		t.Errorf("status after issuance: %v; want renews_at and no job", st)
	}
	cert := api.must(200, "GET", "/tls_certificates/"+certID, "")
	if cert["private_key_type"] != "ecdsa" || !strings.Contains(cert["description"].(string), "app.example.com") {
		t.Errorf("managed certificate: %v", cert)
	}

	// crypto/tls through the proxy, verified with Pebble's root.
	c := through(proxyHTTPS, &tls.Config{RootCAs: pebbleRoots})
	if _, ok := within(5*time.Second, func() bool { code, _ := fetch(c, "https://app.example.com/x", "tls"); return code == 200 }); !ok {
		code, body := fetch(c, "https://app.example.com/x", "tls")
		t.Fatalf("https://app.example.com/x through the proxy: %d %q", code, body)
	}
	// curl, as an operator would check it.
	if _, err := exec.LookPath("curl"); err != nil {
		t.Log("curl is not installed: the curl check is skipped")
	} else {
		rootFile := filepath.Join(t.TempDir(), "pebble-root.pem")
		if err := os.WriteFile(rootFile, pb.RootPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("curl", "-sS", "--max-time", "10", "--connect-to", "app.example.com:443:127.0.0.1:"+strconv.Itoa(portOf(proxyHTTPS)),
			"--cacert", rootFile, "https://app.example.com/curl").CombinedOutput()
		if err != nil || string(out) != "upstream app /curl" {
			t.Errorf("curl --cacert <Pebble's root> https://app.example.com/curl: %v %q", err, out)
		}
	}

	// The metrics say so.
	metricsAddr := regexp.MustCompile(`(?m)^metrics on http://(\S+)/metrics$`).FindStringSubmatch(s.stdout.String())
	if metricsAddr == nil {
		t.Fatalf("stdout: %s", s.stdout)
	}
	_, exposition := get(t, "http://"+metricsAddr[1]+"/metrics", nil)
	for name, want := range map[string]float64{`edgeplane_acme_orders_total{result="issued"}`: 1, `edgeplane_acme_orders_total{result="dns_error"}`: 0, "edgeplane_acme_lease_held": 1} {
		if got := metricValue(exposition, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}

	// Deleting the domain deletes its managed certificate.
	api.must(204, "DELETE", "/edges/https/"+tn.edge, "")
	api.must(204, "DELETE", "/reserved_domains/"+tn.domain, "")
	api.must(404, "GET", "/tls_certificates/"+certID, "")
	if !strings.Contains(s.stderr.String(), "ordering=true") {
		t.Errorf("the log does not say this replica took the acme lease:\n%s", tail(s.stderr.String(), 2000))
	}
}

// TestACMEFlags: the -acme-* flags are checked before serve starts.
func TestACMEFlags(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "roots.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-acme-staging", "-acme-directory", "https://ca.example/dir"}, "exclude each other"},
		{[]string{"-acme-directory", "ftp://ca.example/dir"}, "Options.Directory"},
		{[]string{"-acme-email", "not an address"}, "Options.Email"},
		{[]string{"-acme-ca-roots", filepath.Join(dir, "missing.pem")}, "-acme-ca-roots"},
		{[]string{"-acme-ca-roots", notPEM}, "no PEM certificate"},
		{[]string{"-acme-interval", "0s"}, "-acme-interval"},
		{[]string{"-acme-challenges", "dns-01"}, "-acme-challenges"},
		{[]string{"-acme-challenges", "http-01,http-01"}, "-acme-challenges"},
		{[]string{"-acme-challenges", ""}, "-acme-challenges"},
		{[]string{"-proxy", "-proxy-dns-addr", "127.0.0.1:0", "-proxy-dns-zone", "*.example.com"}, "-proxy-dns-zone"},
		{[]string{"-proxy", "-proxy-dns-addr", "127.0.0.1:0", "-proxy-dns-ns-name", "ns 1.example.com"}, "-proxy-dns-ns-name"},
		{[]string{"-proxy", "-proxy-dns-ns-name", "ns1.example.com"}, "-proxy-dns-ns-name needs -proxy-dns-addr"},
	} {
		var out, errOut strings.Builder
		code := run(t.Context(), append([]string{"serve", "-addr", "127.0.0.1:0", "-store", "memory:"}, tc.args...), func(string) string { return "" }, &out, &errOut, nil)
		if code != 2 || !strings.Contains(errOut.String()+out.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errOut.String()+out.String(), tc.want)
		}
	}
}

// TestServeDNS01: serve -proxy -proxy-dns-addr answers the DNS-01
// challenges in the store (another process's, on the same SQLite file)
// over UDP and TCP, authoritatively, in its zone only; its NS record
// names -proxy-dns-ns-name.
func TestServeDNS01(t *testing.T) {
	spec := "sqlite:" + filepath.Join(t.TempDir(), "edgeplane.db")
	s := startServe(t, []string{"-store", spec, "-proxy", "-proxy-http-addr", "127.0.0.1:0", "-proxy-dns-addr", "127.0.0.1:0",
		"-proxy-dns-ns-name", "ns1.edgeplane-cname.com", "-acme=false"}, nil)
	m := regexp.MustCompile(`(?m)^DNS-01 challenges answered on (\S+) \(UDP and TCP\)$`).FindStringSubmatch(s.stdout.String())
	if m == nil {
		t.Fatalf("stdout: %s", s.stdout)
	}
	st, closeStore, err := openStore(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	key, err := readSealingKey(spec, func(string) string { return "" }, io.Discard, false)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := edgeplane.New(st, edgeplane.Options{SealingKey: key})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(t.Context())
	const name = "lbl.acme.edgeplane-cname.com"
	if err := svc.Host().Certificates().PutACMEChallenge(t.Context(), edgeplane.ACMEChallenge{Type: edgeplane.ChallengeDNS01, Name: name,
		KeyAuthorization: "txt-value", ExpiresAt: time.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	for _, network := range []string{"udp", "tcp"} {
		q := new(dns.Msg)
		q.SetQuestion(name+".", dns.TypeTXT)
		in, _, err := (&dns.Client{Net: network, Timeout: 5 * time.Second}).Exchange(q, m[1])
		if err != nil {
			t.Fatal(err)
		}
		if len(in.Answer) != 1 || in.Answer[0].(*dns.TXT).Txt[0] != "txt-value" || !in.Authoritative {
			t.Errorf("%s: TXT %s: %v", network, name, in)
		}
		// The zone's NS record names -proxy-dns-ns-name, as the
		// delegation does.
		q.SetQuestion("acme.edgeplane-cname.com.", dns.TypeNS)
		if in, _, err = (&dns.Client{Net: network, Timeout: 5 * time.Second}).Exchange(q, m[1]); err != nil || len(in.Answer) != 1 ||
			in.Answer[0].(*dns.NS).Ns != "ns1.edgeplane-cname.com." {
			t.Errorf("%s: NS of the zone: %v, %v; want ns1.edgeplane-cname.com.", network, in, err)
		}
		q.SetQuestion("example.com.", dns.TypeTXT)
		if in, _, err = (&dns.Client{Net: network, Timeout: 5 * time.Second}).Exchange(q, m[1]); err != nil || in.Rcode != dns.RcodeRefused {
			t.Errorf("%s: a name outside the zone: %v, %v; want REFUSED", network, in, err)
		}
	}
}

// TestACMEOneOrdererSQLite and TestACMEOneOrdererPostgres: two serve
// replicas on one store; exactly one holds the acme lease and orders
// (one managed certificate per order); when it stops, the other takes
// over and orders the next.
func TestACMEOneOrdererSQLite(t *testing.T) {
	acmeReplicas(t, "sqlite:"+filepath.Join(t.TempDir(), "edgeplane.db"), nil)
}

func TestACMEOneOrdererPostgres(t *testing.T) {
	acmeReplicas(t, freshPostgres(t), map[string]string{"EDGEPLANE_SEAL_KEY": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))})
}

func acmeReplicas(t *testing.T, spec string, env map[string]string) {
	pb := startLatePebble(t)
	key := "epk_" + strings.Repeat("r", 40)
	e := map[string]string{"EDGEPLANE_API_KEY": key, "EDGEPLANE_RATE_LIMIT": "0"}
	for k, v := range env {
		e[k] = v
	}
	// P serves the proxy and never orders; A and B order when they hold
	// the lease (the challenges reach P's proxy through the store).
	p := startServe(t, []string{"-store", spec, "-proxy", "-proxy-http-addr", "127.0.0.1:0", "-proxy-https-addr", "127.0.0.1:0", "-acme=false"}, e)
	a := startServe(t, append([]string{"-store", spec}, pb.flags...), e)
	b := startServe(t, append([]string{"-store", spec}, pb.flags...), e)
	pb.start(t, p.stdout.String(), "one.example.com", "two.example.com")
	api := apiClient{t: t, base: "http://" + p.addr, key: key}
	order := func(name string) {
		t.Helper()
		id := api.must(201, "POST", "/reserved_domains", `{"domain":"`+name+`","certificate_management_policy":{"authority":"letsencrypt"}}`)["id"].(string)
		if took, ok := within(40*time.Second, func() bool {
			return api.must(200, "GET", "/reserved_domains/"+id, "")["certificate"] != nil
		}); !ok {
			t.Fatalf("%s: no certificate after %v\nA: %s\nB: %s", name, took, tail(a.stderr.String(), 2000), tail(b.stderr.String(), 2000))
		}
	}
	managed := func() int {
		n := 0
		for _, c := range api.must(200, "GET", "/tls_certificates", "")["tls_certificates"].([]any) {
			if strings.HasPrefix(c.(map[string]any)["description"].(string), "managed certificate for") {
				n++
			}
		}
		return n
	}
	holds := func(s *server) bool { return strings.Contains(s.stderr.String(), "ordering=true") }
	order("one.example.com")
	if n := managed(); n != 1 {
		t.Errorf("%d managed certificates after one order, want 1", n)
	}
	if holds(p) || holds(a) == holds(b) {
		t.Fatalf("want exactly one of A and B holding the acme lease; P %v, A %v, B %v", holds(p), holds(a), holds(b))
	}
	orderer, other := a, b
	if holds(b) {
		orderer, other = b, a
	}
	// The orderer stops (releasing the lease): the other takes over and
	// orders the next.
	if code := orderer.stop(); code != 0 {
		t.Errorf("stopping the orderer: exit %d", code)
	}
	order("two.example.com")
	if !holds(other) {
		t.Errorf("the other replica did not take the lease over:\n%s", tail(other.stderr.String(), 2000))
	}
	if n := managed(); n != 2 {
		t.Errorf("%d managed certificates after two orders, want 2", n)
	}
}

// TestProxyCommandACME: edgeplane serve orders (no proxy of its own),
// edgeplane proxy on the same SQLite file answers the CA's HTTP-01
// challenge from the store and presents the issued certificate.
func TestProxyCommandACME(t *testing.T) {
	pb := startLatePebble(t)
	spec := "sqlite:" + filepath.Join(t.TempDir(), "edgeplane.db")
	key := "epk_" + strings.Repeat("c", 40)
	s := startServe(t, append([]string{"-store", spec}, pb.flags...), map[string]string{"EDGEPLANE_API_KEY": key, "EDGEPLANE_RATE_LIMIT": "0"})
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncbuf.Buffer
	ready := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"proxy", "-store", spec, "-https-addr", "127.0.0.1:0", "-http-addr", "127.0.0.1:0"},
			func(string) string { return "" }, &stdout, &stderr, ready)
	}()
	defer func() { cancel(); <-done }()
	select {
	case <-ready:
	case code := <-done:
		done <- code // for the deferred wait, which would block forever
		t.Fatalf("proxy exited with %d: %s %s", code, stdout.String(), stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("proxy not ready")
	}
	_, proxyHTTPS := pb.start(t, stdout.String(), "cmd.example.com")
	api := apiClient{t: t, base: "http://" + s.addr, key: key}
	tn := newTenant(api, "cmd.example.com", "cmd")
	api.must(200, "PATCH", "/reserved_domains/"+tn.domain, `{"certificate_management_policy":{"authority":"letsencrypt"}}`)
	if took, ok := within(30*time.Second, func() bool {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", proxyHTTPS, &tls.Config{ServerName: "cmd.example.com", RootCAs: pb.Roots})
		if err != nil {
			return false
		}
		conn.Close()
		return true
	}); !ok {
		t.Fatalf("edgeplane proxy presents no certificate from Pebble after %v: %v\n%s", took, api.must(200, "GET", "/reserved_domains/"+tn.domain, ""), tail(s.stderr.String(), 2000))
	}
}

// TestDNSNSNameFlag: -dns-ns-name (proxy) and -proxy-dns-ns-name (serve)
// reach the data plane's config, checked as a host name, and need the
// DNS server's address.
func TestDNSNSNameFlag(t *testing.T) {
	for _, prefix := range []string{"", "proxy-"} {
		for _, tc := range []struct {
			args []string
			ns   string
			err  string
		}{
			{[]string{"-" + prefix + "dns-addr", ":53", "-" + prefix + "dns-ns-name", "ns1.edgeplane-cname.com"}, "ns1.edgeplane-cname.com", ""},
			{[]string{"-" + prefix + "dns-addr", ":53"}, "", ""},
			{[]string{"-" + prefix + "dns-addr", ":53", "-" + prefix + "dns-ns-name", "ns_1.example.com"}, "", "-" + prefix + "dns-ns-name \"ns_1.example.com\": want a host name"},
			{[]string{"-" + prefix + "dns-ns-name", "ns1.example.com"}, "", "-" + prefix + "dns-ns-name needs -" + prefix + "dns-addr"},
		} {
			var c dataPlaneConfig
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			c.flags(fs, prefix, ":80")
			if err := parseFlags(fs, tc.args, func(string) string { return "" }, io.Discard); err != nil {
				t.Fatal(err)
			}
			_, err := c.check(prefix)
			switch {
			case tc.err == "" && (err != nil || c.dnsNS != tc.ns):
				t.Errorf("%v: %v, dnsNS %q; want %q", tc.args, err, c.dnsNS, tc.ns)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("%v: %v; want %q", tc.args, err, tc.err)
			}
		}
	}
}
