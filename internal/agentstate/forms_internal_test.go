package agentstate

import (
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// TestStoredForms pins the documents the forms store: records written
// before the forms moved here read the same, and a change of a field's
// name or tag fails here first.
func TestStoredForms(t *testing.T) {
	db := &records.DB{Log: slog.New(slog.DiscardHandler)}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	encode := func(t *testing.T, f func(rec *store.Record) error) store.Record {
		t.Helper()
		rec := store.Record{AccountID: "acct_1", ParentID: "parent_1"}
		if err := f(&rec); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	t.Run("session", func(t *testing.T) {
		f := SessionForm(&records.Kind{StoreKind: kinds.TunnelSession})
		r := &SessionRecord{TunnelSession: agents.TunnelSession{ID: "ts_1", AccountID: "acct_1", AgentVersion: "3.1", Credential: resource.Ref{ID: "parent_1"},
			IP: "192.0.2.1", Metadata: "m", OS: "linux", Region: "eu", StartedAt: at, Node: "node_1", StopRequested: true}, ClientType: "sdk", StopSupported: true}
		rec := encode(t, func(rec *store.Record) error { rec.ID = r.ID; return f.Encode(db, r, rec) })
		const want = `{"started_at":"2026-01-02T03:04:05Z","node":"node_1","agent_version":"3.1","os":"linux","ip":"192.0.2.1","metadata":"m","region":"eu","client_type":"sdk","stop_supported":true,"stop_requested":true}`
		if string(rec.Data) != want {
			t.Errorf("stored\n%s\nwant\n%s", rec.Data, want)
		}
		got, err := f.Decode(db, rec)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("decoded (-want +got):\n%s", diff)
		}
	})
	t.Run("tunnels", func(t *testing.T) {
		f := TunnelForm(&records.Kind{StoreKind: kinds.Tunnel})
		for _, tc := range []struct {
			name    string
			tunnel  backends.Tunnel
			want    string
			indexes []string
		}{{
			name: "registered",
			tunnel: backends.Tunnel{ID: "tn_1", AccountID: "acct_1", StartedAt: at, Labels: map[string]string{"app": "web", "env": "prod"},
				Credential: resource.Ref{ID: "parent_1"}, ForwardsTo: "http://localhost:80", ExpiresAt: at.Add(time.Minute), Metadata: "m"},
			want:    `{"started_at":"2026-01-02T03:04:05Z","labels":{"app":"web","env":"prod"},"forwards_to":"http://localhost:80","expires_at":"2026-01-02T03:05:05Z","metadata":"m"}`,
			indexes: []string{"label app=web", "label env=prod", "lease_end 2026-01-02T03:05:05.000000000Z"},
		}, {
			name: "an agent's",
			tunnel: backends.Tunnel{ID: "tn_2", AccountID: "acct_1", StartedAt: at, Labels: map[string]string{"app": "web"},
				Credential: resource.Ref{ID: "cr_1"}, TunnelSession: &resource.Ref{ID: "parent_1"}, Node: "node_1", ForwardsTo: "app://x"},
			want:    `{"started_at":"2026-01-02T03:04:05Z","labels":{"app":"web"},"forwards_to":"app://x","credential_id":"cr_1","node":"node_1"}`,
			indexes: []string{"label app=web"},
		}} {
			t.Run(tc.name, func(t *testing.T) {
				rec := encode(t, func(rec *store.Record) error { rec.ID = tc.tunnel.ID; return f.Encode(db, &tc.tunnel, rec) })
				if string(rec.Data) != tc.want {
					t.Errorf("stored\n%s\nwant\n%s", rec.Data, tc.want)
				}
				var indexes []string
				for _, e := range tunnelIndexes(&tc.tunnel) {
					indexes = append(indexes, e.Name+" "+e.Value)
				}
				slices.Sort(indexes)
				if !slices.Equal(indexes, tc.indexes) {
					t.Errorf("indexes %q, want %q", indexes, tc.indexes)
				}
				got, err := f.Decode(db, rec)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(&tc.tunnel, got); diff != "" {
					t.Errorf("decoded (-want +got):\n%s", diff)
				}
				// What selecting tunnels and holding them to an ACL
				// read of the document is the model's.
				var online onlineTunnel
				if err := json.Unmarshal(rec.Data, &online); err != nil {
					t.Fatal(err)
				}
				if !maps.Equal(online.Labels, tc.tunnel.Labels) || !online.ExpiresAt.Equal(tc.tunnel.ExpiresAt) || online.Node != tc.tunnel.Node {
					t.Errorf("read as online: %+v, from %+v", online, tc.tunnel)
				}
			})
		}
	})
	t.Run("endpoint", func(t *testing.T) {
		f := EndpointForm(&records.Kind{StoreKind: kinds.Endpoint})
		r := &EndpointRecord{Endpoint: agents.Endpoint{ID: "ep_1", AccountID: "acct_1", Region: "eu", CreatedAt: at, UpdatedAt: at.Add(time.Second),
			Proto: agents.ProtoHTTPS, Host: "app.example.com", Port: 443, Metadata: "m", Description: "d", Domain: &resource.Ref{ID: "rd_1"},
			UpstreamURL: "http://localhost:8080", TrafficPolicy: "{}", TunnelSession: &resource.Ref{ID: "parent_1"}, PassthroughTLS: true, Node: "node_1",
			Bindings: []string{"public"}},
			CredentialID: "cr_1"}
		setEndpointAddress(&r.Endpoint)
		rec := encode(t, func(rec *store.Record) error { rec.ID = r.ID; return f.Encode(db, r, rec) })
		const want = `{"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:06Z","proto":"https","host":"app.example.com","port":443,"credential_id":"cr_1","domain_id":"rd_1","region":"eu","metadata":"m","description":"d","upstream_url":"http://localhost:8080","traffic_policy":"{}","passthrough_tls":true,"node":"node_1"}`
		if string(rec.Data) != want {
			t.Errorf("stored\n%s\nwant\n%s", rec.Data, want)
		}
		got, err := f.Decode(db, rec)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("decoded (-want +got):\n%s", diff)
		}
	})
}

// TestSetEndpointAddress: the computed address of each protocol.
func TestSetEndpointAddress(t *testing.T) {
	for _, tc := range []struct {
		proto, host string
		port        int64
		url         string
		hostport    string
	}{
		{agents.ProtoHTTP, "app.example.com", 80, "http://app.example.com", "app.example.com:80"},
		{agents.ProtoHTTPS, "app.example.com", 443, "https://app.example.com", "app.example.com:443"},
		{agents.ProtoTLS, "app.example.com", 443, "tls://app.example.com:443", "app.example.com:443"},
		{agents.ProtoTCP, "2001:db8::1", 20001, "tcp://[2001:db8::1]:20001", "[2001:db8::1]:20001"},
	} {
		t.Run(tc.proto, func(t *testing.T) {
			e := agents.Endpoint{Proto: tc.proto, Host: tc.host, Port: tc.port}
			setEndpointAddress(&e)
			if e.URL != tc.url || e.PublicURL != tc.url || e.Hostport != tc.hostport || e.Scheme != tc.proto || e.Type != agents.EndpointType {
				t.Errorf("got URL %q, PublicURL %q, Hostport %q, Scheme %q, Type %q", e.URL, e.PublicURL, e.Hostport, e.Scheme, e.Type)
			}
		})
	}
}
