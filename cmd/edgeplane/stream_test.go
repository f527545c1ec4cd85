package main

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// streamTenant is account-level setup for a TLS or TCP edge: a
// reserved domain, a backend selecting app=<label> and a credential that
// may bind it.
func streamBackend(t *testing.T, api apiClient, spec, label, forwardsTo string) string {
	t.Helper()
	bk := api.must(201, "POST", "/backends/tunnel_group", `{"labels":{"app":"`+label+`"}}`)["id"].(string)
	tn := &tenant{api: api, label: label}
	tn.credToken = api.must(201, "POST", "/credentials", `{"acl":["bind:app=`+label+`"]}`)["token"].(string)
	tn.registerTunnel(t, spec, forwardsTo, time.Hour)
	return bk
}

// TestProxyTLSAndTCPEdges: an edgeplane proxy process serves TLS edges
// on its HTTPS port beside the HTTPS edges and TCP edges on -tcp-ports,
// set up through the API, checked with curl: a TLS edge that terminates
// TLS with the domain's certificate in front of a plain HTTP upstream; a
// passthrough TLS edge in front of an HTTPS upstream whose own
// certificate curl sees; min_version 1.3 refusing a TLS 1.2 client; a
// TCP edge in front of a plain HTTP upstream; an IP restriction put on
// the TCP edge refusing new connections within a second.
func TestProxyTLSAndTCPEdges(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	spec := "sqlite:" + filepath.Join(t.TempDir(), "edgeplane.db")
	key := "epk_" + strings.Repeat("t", 40)
	apiAddr, _ := startProcess(t, spec, "EDGEPLANE_API_KEY="+key)
	api := apiClient{t: t, base: "http://" + apiAddr, key: key}
	tcpPort := freePort(t)
	p := startProxyArgs(t, "proxy", spec, []string{"-tcp-ports", strconv.Itoa(tcpPort) + "-" + strconv.Itoa(tcpPort), "-tcp-host", "127.0.0.1"})
	_, httpsPort, _ := net.SplitHostPort(p.https)

	plain := newUpstream(t, "plain")
	edgeCA, upstreamCA := newTestCA(t), newTestCA(t)
	chain, keyPEM := upstreamCA.leaf(t, "pass.example.com", 7)
	pair, err := tls.X509KeyPair([]byte(chain), []byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	secure := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("upstream secure " + r.URL.Path))
	}))
	secure.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	secure.StartTLS()
	t.Cleanup(secure.Close)

	for _, d := range []string{"term.example.com", "pass.example.com", "db.example.com"} {
		id := api.must(201, "POST", "/reserved_domains", `{"domain":"`+d+`"}`)["id"].(string)
		if d == "term.example.com" {
			(&tenant{api: api, domain: id}).uploadCertificate(edgeCA.leaf(t, d, 3))
		}
	}
	plainBk := streamBackend(t, api, spec, "plain", "tcp://"+strings.TrimPrefix(plain.URL, "http://"))
	secureBk := streamBackend(t, api, spec, "secure", "tls://"+strings.TrimPrefix(secure.URL, "https://"))
	term := api.must(201, "POST", "/edges/tls", `{"hostports":["term.example.com:443"],"backend":{"backend_id":"`+plainBk+`"}}`)["id"].(string)
	api.must(201, "POST", "/edges/tls", `{"hostports":["pass.example.com:443"],"tls_termination":{"terminate_at":"upstream"},"backend":{"backend_id":"`+secureBk+`"}}`)
	tcp := api.must(201, "POST", "/edges/tcp", `{"hostports":["db.example.com:`+strconv.Itoa(tcpPort)+`"],"backend":{"backend_id":"`+plainBk+`"}}`)["id"].(string)

	dir := t.TempDir()
	caFile := func(name, pem string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(pem), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	edgeCAFile, upstreamCAFile := caFile("edge.pem", edgeCA.pem), caFile("upstream.pem", upstreamCA.pem)
	curl := func(args ...string) (string, error) {
		out, err := exec.Command("curl", append([]string{"-sS", "--max-time", "5"}, args...)...).CombinedOutput()
		return string(out), err
	}
	curlTLS := func(host, ca string, more ...string) (string, error) {
		return curl(append([]string{"--connect-to", host + ":443:127.0.0.1:" + httpsPort, "--cacert", ca, "https://" + host + "/curl"}, more...)...)
	}
	// The edges reach the proxy through the store's feed.
	if took, ok := within(5*time.Second, func() bool { out, _ := curlTLS("term.example.com", edgeCAFile); return out == "upstream plain /curl" }); !ok {
		out, err := curlTLS("term.example.com", edgeCAFile)
		t.Fatalf("TLS edge terminating at the edge: %v %q", err, out)
	} else {
		t.Logf("the TLS edge served %v after it was created", took.Round(time.Millisecond))
	}
	// The three edges were created one after another: the proxy may read
	// them in separate reads of the feed, so each is waited for.
	if _, ok := within(5*time.Second, func() bool {
		out, _ := curlTLS("pass.example.com", upstreamCAFile)
		return out == "upstream secure /curl"
	}); !ok {
		out, err := curlTLS("pass.example.com", upstreamCAFile)
		t.Errorf("passthrough TLS edge, trusting the upstream's CA: %v %q", err, out)
	}
	if out, err := curlTLS("pass.example.com", edgeCAFile); err == nil {
		t.Errorf("passthrough TLS edge, trusting only the edge's CA: succeeded %q; want the upstream's certificate refused", out)
	}
	tcpURL := "http://127.0.0.1:" + strconv.Itoa(tcpPort) + "/tcp"
	if _, ok := within(5*time.Second, func() bool { out, _ := curl(tcpURL); return out == "upstream plain /tcp" }); !ok {
		out, err := curl(tcpURL)
		t.Errorf("TCP edge: %v %q", err, out)
	}

	// min_version 1.3: curl limited to TLS 1.2 is refused.
	api.must(200, "PUT", "/edges/tls/"+term+"/tls_termination", `{"terminate_at":"edge","min_version":"1.3"}`)
	if took, ok := within(time.Second, func() bool { _, err := curlTLS("term.example.com", edgeCAFile, "--tls-max", "1.2"); return err != nil }); !ok {
		t.Errorf("a TLS 1.2 client still served 1s after min_version 1.3")
	} else {
		t.Logf("min_version 1.3 applied %v after the PUT", took.Round(time.Millisecond))
	}
	if out, err := curlTLS("term.example.com", edgeCAFile, "--tlsv1.3"); err != nil || out != "upstream plain /curl" {
		t.Errorf("TLS 1.3 client: %v %q", err, out)
	}

	// An IP restriction denying 127.0.0.1 on the TCP edge.
	ipp := api.must(201, "POST", "/ip_policies", `{}`)["id"].(string)
	api.must(201, "POST", "/ip_policy_rules", `{"ip_policy_id":"`+ipp+`","cidr":"127.0.0.1/32","action":"deny"}`)
	api.must(200, "PUT", "/edges/tcp/"+tcp+"/ip_restriction", `{"ip_policy_ids":["`+ipp+`"]}`)
	if took, ok := within(time.Second, func() bool { _, err := curl(tcpURL); return err != nil }); !ok {
		t.Errorf("the TCP edge still serves 127.0.0.1 1s after the IP restriction")
	} else {
		t.Logf("the IP restriction applied %v after the PUT", took.Round(time.Millisecond))
	}
	if n := plain.count(""); n < 3 {
		t.Errorf("the plain upstream saw %d requests, want at least 3", n)
	}
}
