package proxy_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/proxy"
	"github.com/edgeplane/edgeplane/resource"
)

// fakeHost is a [proxy.Host] of one account with one HTTPS edge, whose
// one route sends every request to the backend's one tunnel, forwarding
// to upstream. The Service's *edgeplane.Host plays this part in a real
// proxy.
type fakeHost struct{ upstream string }

const (
	fakeAccount = "acct_1"
	fakeEdge    = "edghts_1"
	fakeBackend = "bkdtg_1"
)

func (h fakeHost) ListHTTPSEdges(ctx context.Context, opts resource.ListOptions) ([]edgeconfig.EdgeRef, string, error) {
	return []edgeconfig.EdgeRef{{AccountID: fakeAccount, ID: fakeEdge}}, "", nil
}

func (h fakeHost) ListTLSEdges(ctx context.Context, opts resource.ListOptions) ([]edgeconfig.EdgeRef, string, error) {
	return nil, "", nil
}

func (h fakeHost) ListTCPEdges(ctx context.Context, opts resource.ListOptions) ([]edgeconfig.EdgeRef, string, error) {
	return nil, "", nil
}

func (h fakeHost) HTTPSEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.HTTPSEdge, error) {
	if accountID != fakeAccount || edgeID != fakeEdge {
		return nil, apierr.NotFoundf("no HTTPS edge %s", edgeID)
	}
	route := &edgeconfig.Route{
		AccountID: accountID, EdgeID: edgeID, RouteID: "edghtsrt_1",
		MatchType: edges.MatchPathPrefix, Match: "/",
		Backend: &edgeconfig.Backend{BackendID: fakeBackend},
	}
	e := edgeconfig.NewHTTPSEdge(accountID, edgeID, []*edgeconfig.Route{route})
	e.Hostports = []string{"app.example.com:443"}
	return e, nil
}

func (h fakeHost) TLSEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.TLSEdge, error) {
	return nil, apierr.NotFoundf("no TLS edge %s", edgeID)
}

func (h fakeHost) TCPEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.TCPEdge, error) {
	return nil, apierr.NotFoundf("no TCP edge %s", edgeID)
}

func (h fakeHost) BackendTunnels(ctx context.Context, accountID, backendID string) ([]backends.Tunnel, error) {
	if accountID != fakeAccount || backendID != fakeBackend {
		return nil, apierr.NotFoundf("no backend %s", backendID)
	}
	return []backends.Tunnel{{ID: "tn_1", AccountID: accountID, Labels: map[string]string{"app": "web"}, ForwardsTo: h.upstream}}, nil
}

func (h fakeHost) HostCertificate(ctx context.Context, accountID, host string) (*domains.HostCertificate, error) {
	return nil, apierr.NotFoundf("no certificate for %s", host) // served over plain HTTP only
}

func (h fakeHost) EndpointRestrictions(ctx context.Context, accountID string) (*ipaccess.EndpointRestrictions, error) {
	return &ipaccess.EndpointRestrictions{}, nil // none
}

func (h fakeHost) WaitRevision(ctx context.Context, revision int64) error {
	return nil // reads nothing cached
}

func (h fakeHost) ACMEChallenge(ctx context.Context, typ, name, token string) (*domains.ACMEChallenge, error) {
	return nil, apierr.NotFoundf("no pending challenge for %s", name)
}

// The proxy needs only a [proxy.Host] and a change feed, not the
// Service: here a fake Host of one HTTPS edge on app.example.com, whose
// route goes to an upstream server, over the change feed of an empty
// store (nothing changes).
func Example_fakeHost() {
	ctx := context.Background()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from the upstream, %s\n", r.URL.Path)
	}))
	defer upstream.Close()

	configs, err := proxy.New(ctx, fakeHost{upstream: upstream.URL}, memstore.New(), proxy.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer configs.Close()
	srv := httptest.NewServer(proxy.NewHandler(configs, proxy.HandlerOptions{}))
	defer srv.Close()

	req, err := http.NewRequest(http.MethodGet, srv.URL+"/hi", nil)
	if err != nil {
		log.Fatal(err)
	}
	req.Host = "app.example.com"
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.StatusCode, strings.TrimSpace(string(body)))
	// Output:
	// 200 hello from the upstream, /hi
}
