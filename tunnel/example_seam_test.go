package tunnel_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"golang.ngrok.com/ngrok"
	"golang.ngrok.com/ngrok/config"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/tunnel"
)

// oneCredential is a Host of one tunnel credential, whose authtoken is
// token: all a Server asks of the Service (package edgeplane's Host
// implements it over the store). Sessions and endpoints live in maps;
// resume tokens are plain strings, not sealed; labeled tunnels are not
// served.
type oneCredential struct {
	token     string
	mu        sync.Mutex
	sessions  map[string]*agents.TunnelSession
	endpoints map[string]*agents.Endpoint
}

func (h *oneCredential) RegisterNode(context.Context, agents.NodeParams) (*agents.Node, error) {
	return &agents.Node{ID: "nd_1"}, nil
}
func (h *oneCredential) RenewNode(_ context.Context, id string) (*agents.Node, error) {
	return &agents.Node{ID: id}, nil
}
func (h *oneCredential) RemoveNode(context.Context, string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.sessions) // the node's, with their endpoints
	clear(h.endpoints)
	return nil
}
func (h *oneCredential) OpenTunnelSession(_ context.Context, token string, p agents.SessionParams) (*agents.TunnelSession, error) {
	if token != h.token {
		return nil, apierr.New(apierr.Unauthenticated, "the authtoken is not one of this fake's")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ts := &agents.TunnelSession{ID: fmt.Sprintf("ts_%d", len(h.sessions)+1), AccountID: "ac_1", Credential: resource.Ref{ID: "cr_1"}, Node: p.Node}
	h.sessions[ts.ID] = ts
	return ts, nil
}
func (h *oneCredential) CloseTunnelSession(_ context.Context, _, id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.sessions, id)
	for epID, ep := range h.endpoints {
		if ep.TunnelSession.ID == id {
			delete(h.endpoints, epID)
		}
	}
	return nil
}
func (h *oneCredential) GetTunnelSession(_ context.Context, _, id string) (*agents.TunnelSession, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ts := h.sessions[id]; ts != nil {
		return ts, nil
	}
	return nil, apierr.NotFoundf("no tunnel session %s", id)
}
func (h *oneCredential) BindEndpoint(_ context.Context, _, sessionID string, p agents.EndpointParams) (*agents.Endpoint, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ep := &agents.Endpoint{ID: "ep_" + p.Domain, URL: p.Proto + "://" + p.Domain, Proto: p.Proto, TunnelSession: &resource.Ref{ID: sessionID}}
	h.endpoints[ep.ID] = ep
	return ep, nil
}
func (h *oneCredential) UnbindEndpoint(_ context.Context, _, id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.endpoints, id)
	return nil
}
func (h *oneCredential) GetEndpoint(_ context.Context, _, id string) (*agents.Endpoint, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ep := h.endpoints[id]; ep != nil {
		return ep, nil
	}
	return nil, apierr.NotFoundf("no endpoint %s", id)
}
func (h *oneCredential) AgentToken(purpose agents.TokenPurpose, _, _, id string) string {
	return string(purpose) + ":" + id
}
func (h *oneCredential) OpenAgentToken(purpose agents.TokenPurpose, token, _, _, id string) (time.Time, error) {
	if token != string(purpose)+":"+id {
		return time.Time{}, apierr.New(apierr.PermissionDenied, "not the %s's token", purpose.Noun())
	}
	return time.Now(), nil
}
func (h *oneCredential) StartLabeledTunnel(context.Context, string, string, agents.LabeledTunnelParams) (*backends.Tunnel, error) {
	return nil, apierr.New(apierr.FailedPrecondition, "this fake binds endpoints only")
}
func (h *oneCredential) UnregisterTunnel(context.Context, string, string) error { return nil }
func (h *oneCredential) IPRestrictions(context.Context, string, string) (*ipaccess.Enforcer, error) {
	return nil, nil // no IP restrictions: a nil Enforcer refuses nothing
}

// A Server wired to a fake of its Host: an agent built on the original
// SDK (golang.ngrok.com/ngrok) authenticates with the fake's authtoken
// and binds an HTTP endpoint; a connection dialed through the Server, as
// an edge proxy dials one, reaches the agent's handler. A wrong authtoken
// is refused with the fake's error, its code on a line of its own.
func ExampleServer() {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		log.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	roots := x509.NewCertPool() // what the agent trusts (ngrok.WithCA)
	roots.AddCert(leaf)

	host := &oneCredential{token: "the-authtoken", sessions: map[string]*agents.TunnelSession{}, endpoints: map[string]*agents.Endpoint{}}
	srv, err := tunnel.NewServer(tunnel.Options{Host: host, Feed: memstore.New(), // a store no one writes: nothing changes elsewhere
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)

	ctx := context.Background()
	agent, err := ngrok.Connect(ctx, ngrok.WithServer(ln.Addr().String()), ngrok.WithCA(roots), ngrok.WithAuthtoken("the-authtoken"))
	if err != nil {
		log.Fatal(err)
	}
	tun, err := agent.Listen(ctx, config.HTTPEndpoint(config.WithDomain("app.example.com")))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the agent serves", tun.URL())
	// The agent's handler answers the one connection dialed below (not
	// http.Serve: in SDK v1.12.1 an Accept that fails once the session
	// is closed may panic: see internal/sdktunnel).
	go func() {
		c, err := tun.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if r, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello from the agent: %s %s from %s", r.Method, r.URL.Path, c.RemoteAddr())
		}
	}()

	// What an edge proxy does with a request for app.example.com.
	c, err := srv.DialTunnel(ctx, srv.Node(), tun.ID(),
		agents.ConnHeader{ClientAddr: netip.MustParseAddrPort("203.0.113.7:40000"), Proto: "https", EdgeType: agents.EdgeHTTPS})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprint(c, "GET /hi HTTP/1.1\r\nHost: app.example.com\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	c.Close()
	fmt.Println(resp.Status, string(body))
	agent.Close()

	_, err = ngrok.Connect(ctx, ngrok.WithServer(ln.Addr().String()), ngrok.WithCA(roots), ngrok.WithAuthtoken("a-wrong-one"),
		ngrok.WithDisconnectHandler(func(_ context.Context, s ngrok.Session, _ error) { s.Close() })) // else the SDK retries
	var refused ngrok.Error
	if errors.As(err, &refused) {
		fmt.Printf("a wrong authtoken: %q\n", refused.Msg())
	}
	// Output:
	// the agent serves https://app.example.com
	// 200 OK hello from the agent: GET /hi from 203.0.113.7:40000
	// a wrong authtoken: "the authtoken is not one of this fake's\nERR_SERVICE_105"
}
