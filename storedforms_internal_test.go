package edgeplane

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/google/go-cmp/cmp"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/agentstate"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/seal"
	"github.com/edgeplane/edgeplane/internal/storedforms"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// fill sets every exported field reachable from v to a distinct non-zero
// value, so that a form that forgets a field fails its round trip.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 1, 0, 0, *n, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(v.Index(0), n)
		fill(v.Index(1), n)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n)
		fill(e, n)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		// Characters encoders may escape differently (HTML, line
		// separators, non-ASCII), so that their bytes are compared too.
		v.SetString("v" + strconv.Itoa(*n) + "<&>\u2028é")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float64:
		v.SetFloat(float64(*n))
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64, reflect.Uint8:
		if v.CanInt() {
			v.SetInt(int64(*n))
		} else {
			v.SetUint(uint64(*n))
		}
	default:
		panic("fill: unhandled kind " + v.Kind().String())
	}
}

// scribble changes in place every value reachable from v: through
// pointers, slice elements and map entries.
func scribble(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(1, 0)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				scribble(v.Field(i))
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			scribble(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			scribble(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			scribble(e)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		v.SetString("scribbled")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(-1)
	case reflect.Uint8, reflect.Uint32, reflect.Uint64:
		v.SetUint(99)
	}
}

// computedFields are the model fields no document stores: computed when a
// resource is read (URIs, a backend's tunnels, a subscription's sources,
// read from their own records, a domain's always-null
// error_redirect_url, a tunnel session's constant transport) or shown
// once (tokens).
var computedFields = map[string]bool{"URI": true, "Tunnels": true, "Token": true, "ErrorRedirectURL": true, "Sources": true, "Transport": true,
	// An endpoint's addresses and its constant type, computed from its
	// proto, host and port: named with their struct, as other kinds
	// store fields of these names.
	"Endpoint.URL": true, "Endpoint.PublicURL": true, "Endpoint.Scheme": true, "Endpoint.Hostport": true, "Endpoint.Type": true,
	// An endpoint's pool, read from its members' records.
	"Endpoint.Pool": true,
	// Its bindings, stored as the one binding of an internal endpoint
	// (internal/agentstate's form; tested there).
	"Endpoint.Bindings": true,
	// An event destination's delivery state (a record of its own), its
	// secret (sealed beside the model, shown once) and the original
	// service's targets it never has.
	"Destination.Delivery": true, "HTTPTarget.Secret": true, "Target.Firehose": true, "Target.Kinesis": true,
	"Target.CloudwatchLogs": true, "Target.Datadog": true}

// isComputed says whether the last step of p is a computed field.
func isComputed(p cmp.Path) bool {
	sf, ok := p.Last().(cmp.StructField)
	if !ok {
		return false
	}
	if computedFields[sf.Name()] {
		return true
	}
	parent := p.Index(-2).Type()
	return parent != nil && computedFields[parent.Name()+"."+sf.Name()]
}

// roundTrip saves a filled model in form f, checks the document's JSON,
// loads it back and compares: every field but the computed ones survives.
// rec says which model fields the record (not the document) carries.
func roundTrip[M any](t *testing.T, s *Service, f records.Form[M], rec func(m *M) store.Record, secrets func(m *M) []string) {
	t.Helper()
	m := new(M)
	n := 0
	fill(reflect.ValueOf(m).Elem(), &n)
	r := rec(m)
	r.Kind = f.StoreKind
	saved, err := f.EncodeDoc(s.db, m, &r)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	sampled[f.StoreKind] = r
	var doc any
	if err := json.Unmarshal(r.Data, &doc); err != nil {
		t.Fatalf("the document is not JSON: %v", err)
	}
	// Documents are encoded with their own AppendDocJSON or
	// go-json-experiment's v1 options: the bytes must be those
	// encoding/json makes of the same document.
	if want, err := json.Marshal(saved); err != nil || !bytes.Equal(r.Data, want) {
		t.Errorf("%s: the stored document is not what encoding/json makes of it:\n got %s\nwant %s (%v)", f.StoreKind, r.Data, want, err)
	}
	checkDocKeys(t, doc, "")
	for _, secret := range secrets(m) {
		if strings.Contains(string(r.Data), secret) {
			t.Errorf("the document holds the secret %q in the clear: %s", secret, r.Data)
		}
	}
	got, err := f.Decode(s.db, r)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	// A parsed document is cached and shared by reads: a model built from
	// it and then changed in place must leave the next model unchanged.
	parsed, err := f.Parse(r.Data)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	// Documents are decoded with go-json-experiment's v1 options: into
	// what encoding/json makes of them.
	want := reflect.New(reflect.TypeOf(parsed).Elem())
	if err := json.Unmarshal(r.Data, want.Interface()); err != nil {
		t.Fatalf("encoding/json cannot decode the document: %v", err)
	}
	all := cmp.Exporter(func(reflect.Type) bool { return true })
	if diff := cmp.Diff(want.Interface(), parsed, all); diff != "" {
		t.Errorf("%s: parse decodes differently from encoding/json (-encoding/json +parse):\n%s", f.StoreKind, diff)
	}
	first, err := f.Model(s.db, parsed, r)
	if err != nil {
		t.Fatalf("model: %v", err)
	}
	scribble(reflect.ValueOf(first).Elem())
	second, err := f.Model(s.db, parsed, r)
	if err != nil {
		t.Fatalf("model: %v", err)
	}
	if diff := cmp.Diff(got, second); diff != "" {
		t.Errorf("%s: changing a model changed the cached document it was built from (-want +got):\n%s", f.StoreKind, diff)
	}
	ignoreComputed := cmp.FilterPath(isComputed, cmp.Ignore())
	if diff := cmp.Diff(m, got, ignoreComputed); diff != "" {
		t.Errorf("%s: the model does not survive its stored form (-saved +loaded):\n%s\ndocument: %s", f.StoreKind, diff, r.Data)
	}
	if d, err := f.Save(s.db, m, &r); err == nil {
		if _, ok := f.Own(d); ok {
			checkOwn(t, s, f, m, r)
		}
	}
}

// checkOwn checks f.own on the document of m, stored as r: it equals what
// parse makes of the document's JSON, and shares no memory with m.
func checkOwn[M any](t *testing.T, s *Service, f records.Form[M], m *M, r store.Record) {
	t.Helper()
	d, err := f.Save(s.db, m, &r)
	if err != nil {
		t.Fatalf("save: %v", err)
	}
	owned, _ := f.Own(d)
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := f.Parse(data)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if !reflect.DeepEqual(owned, parsed) {
		t.Errorf("%s: own made %#v; parse makes %#v of %s", f.StoreKind, owned, parsed, data)
	}
	scribble(reflect.ValueOf(m).Elem())
	if !reflect.DeepEqual(owned, parsed) {
		t.Errorf("%s: changing a model changed the document own made of it: %#v", f.StoreKind, owned)
	}
}

// TestOwnCredentialDoc checks the credential form's own on the documents
// whose JSON drops something: no ACL, an empty one, and a time with a
// monotonic reading and a fraction of a second.
func TestOwnCredentialDoc(t *testing.T) {
	s, err := New(memstore.New(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]credentials.Credential{
		"no acl":    {ID: "cr_1", Description: "d", OwnerID: "usr_1", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		"empty acl": {ID: "cr_1", ACL: []string{}, Metadata: "m", OwnerID: "usr_1", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		"now":       {ID: "cr_1", ACL: []string{"bind:a.example.com", "bind:b.example.com"}, OwnerID: "bot_1", CreatedAt: time.Now().UTC()},
	} {
		t.Run(name, func(t *testing.T) {
			checkOwn(t, s, credentialForm.Form, &c, store.Record{Kind: KindCredential, AccountID: "acc_1", ID: c.ID})
		})
	}
}

// TestCredentialDocJSON checks that encodeDoc, through the credential
// document's own encoding (a docAppender, as the build checks in
// credential.go; the "credential" case of TestStoredForms runs it too),
// writes what encoding/json makes of the document when fields are left
// out (omitempty), escaped or not encodable (then EncodeDoc fails, as it
// does by reflection).
func TestCredentialDocJSON(t *testing.T) {
	s, err := New(memstore.New(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("", -3600))
	for name, c := range map[string]credentials.Credential{
		"zero":        {},
		"no acl":      {Description: "d", OwnerID: "usr_1", CreatedAt: at},
		"empty acl":   {ACL: []string{}, Metadata: "m", OwnerID: "usr_1", CreatedAt: at},
		"escapes":     {Description: "<&>\u2028é", Metadata: "\xff\"\n", ACL: []string{"bind:a=<b>", ""}, OwnerID: "bot_\u2029", CreatedAt: time.Now()},
		"year 10000":  {OwnerID: "usr_1", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"zone 24 hrs": {OwnerID: "usr_1", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600))},
	} {
		t.Run(name, func(t *testing.T) {
			rec := store.Record{Kind: KindCredential, AccountID: "acc_1", ID: "cr_1"}
			_, err := credentialForm.EncodeDoc(s.db, &c, &rec)
			doc, err2 := credentialForm.Save(s.db, &c, &store.Record{})
			if err2 != nil {
				t.Fatal(err2)
			}
			want, werr := json.Marshal(doc)
			switch {
			case werr != nil && err == nil:
				t.Errorf("encodeDoc = %s; encoding/json fails (%v)", rec.Data, werr)
			case werr == nil && (err != nil || !bytes.Equal(rec.Data, want)):
				t.Errorf("encodeDoc = %s, %v; encoding/json writes %s", rec.Data, err, want)
			}
			// appendJSON keeps what dst held, and leaves it unchanged
			// when it fails.
			b, ok := doc.(records.DocAppender).AppendDocJSON([]byte("x"))
			if ok != (werr == nil) || string(b) != "x"+string(want) {
				t.Errorf("appendJSON = %s, %v; want x%s, %v", b, ok, want, werr == nil)
			}
		})
	}
}

// checkDocKeys fails on a key of the API's computed or identifying
// fields anywhere in a document.
func checkDocKeys(t *testing.T, doc any, path string) {
	t.Helper()
	switch d := doc.(type) {
	case map[string]any:
		for k, v := range d {
			switch k {
			case "uri", "id", "token", "tunnels":
				t.Errorf("the document has a key %q at %q", k, path)
			}
			checkDocKeys(t, v, path+"."+k)
		}
	case []any:
		for _, v := range d {
			checkDocKeys(t, v, path+"[]")
		}
	}
}

// TestStoredForms checks every form: a model with every field set survives
// save and load except its computed fields, its document names no
// computed field, ID or token, and holds no secret in the clear.
func TestStoredForms(t *testing.T) {
	s, err := New(memstore.New(), Options{SealingKey: make([]byte, seal.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	clear(sampled)
	defer checkSampled(t, s)
	t.Run("account", func(t *testing.T) {
		roundTrip(t, s, accountForm.Form, func(m *identity.Account) store.Record { return store.Record{AccountID: m.ID, ID: m.ID} },
			func(*identity.Account) []string { return nil })
	})
	subject := func(m *identity.Subject) store.Record {
		return store.Record{AccountID: m.AccountID, ID: m.ID, ParentID: m.AccountID}
	}
	t.Run("user", func(t *testing.T) {
		roundTrip(t, s, userForm.Form, subject, func(*identity.Subject) []string { return nil })
	})
	t.Run("bot", func(t *testing.T) { roundTrip(t, s, botForm, subject, func(*identity.Subject) []string { return nil }) })
	t.Run("api key", func(t *testing.T) {
		roundTrip(t, s, apiKeyForm.Form, func(m *identity.APIKey) store.Record {
			return store.Record{AccountID: "acct", ID: m.ID, ParentID: m.OwnerID}
		},
			func(m *identity.APIKey) []string { return []string{*m.Token} })
	})
	t.Run("bot user", func(t *testing.T) {
		roundTrip(t, s, botUserForm.Form, func(m *botRecord) store.Record { return store.Record{AccountID: "acct", ID: m.ID, ParentID: "acct"} },
			func(*botRecord) []string { return nil })
	})
	plain := func(id string) store.Record { return store.Record{AccountID: "acct", ID: id} }
	t.Run("credential", func(t *testing.T) {
		roundTrip(t, s, credentialForm.Form, func(m *credentials.Credential) store.Record { return plain(m.ID) },
			func(m *credentials.Credential) []string { return []string{*m.Token} })
	})
	t.Run("ip policy", func(t *testing.T) {
		roundTrip(t, s, ipPolicyForm.Form, func(m *ipaccess.Policy) store.Record { return plain(m.ID) }, func(*ipaccess.Policy) []string { return nil })
	})
	t.Run("ip policy rule", func(t *testing.T) {
		roundTrip(t, s, ipRuleForm.Form, func(m *ipaccess.Rule) store.Record {
			r := plain(m.ID)
			r.ParentID = m.IPPolicy.ID
			return r
		}, func(*ipaccess.Rule) []string { return nil })
	})
	t.Run("ip restriction", func(t *testing.T) {
		roundTrip(t, s, ipRestrictionForm.Form, func(m *ipaccess.Restriction) store.Record { return plain(m.ID) },
			func(*ipaccess.Restriction) []string { return nil })
	})
	t.Run("event destination", func(t *testing.T) {
		roundTrip(t, s, eventDestinationForm.Form, func(m *storedDestination) store.Record { return plain(m.ID) },
			func(*storedDestination) []string { return nil })
	})
	t.Run("reserved domain", func(t *testing.T) {
		roundTrip(t, s, reservedDomainForm.Form, func(m *domains.ReservedDomain) store.Record { return plain(m.ID) },
			func(*domains.ReservedDomain) []string { return nil })
	})
	t.Run("tls certificate", func(t *testing.T) {
		roundTrip(t, s, certificateForm.Form, func(m *storedCertificate) store.Record { return plain(m.ID) },
			func(*storedCertificate) []string { return nil })
	})
	t.Run("endpoint configuration", func(t *testing.T) {
		roundTrip(t, s, endpointConfigForm.Form, func(m *domains.EndpointConfiguration) store.Record { return plain(m.ID) },
			func(*domains.EndpointConfiguration) []string { return nil })
	})
	t.Run("tunnel group backend", func(t *testing.T) {
		roundTrip(t, s, backendForm.Form, func(m *backends.TunnelGroupBackend) store.Record { return plain(m.ID) },
			func(*backends.TunnelGroupBackend) []string { return nil })
	})
	t.Run("tunnel", func(t *testing.T) {
		// fill sets TunnelSession: a tunnel an agent started in its
		// session, the record's parent (TestTunnelDocParent has one a
		// host registered).
		roundTrip(t, s, tunnelForm.Form, func(m *backends.Tunnel) store.Record {
			return store.Record{AccountID: m.AccountID, ID: m.ID, ParentID: m.TunnelSession.ID}
		}, func(*backends.Tunnel) []string { return nil })
	})
	t.Run("tunnel session", func(t *testing.T) {
		roundTrip(t, s, tunnelSessionForm.Form, func(m *agentstate.SessionRecord) store.Record {
			return store.Record{AccountID: m.AccountID, ID: m.ID, ParentID: m.Credential.ID}
		}, func(*agentstate.SessionRecord) []string { return nil })
	})
	t.Run("endpoint", func(t *testing.T) {
		roundTrip(t, s, endpointForm.Form, func(m *agentstate.EndpointRecord) store.Record {
			return store.Record{AccountID: m.AccountID, ID: m.ID, ParentID: m.TunnelSession.ID}
		}, func(*agentstate.EndpointRecord) []string { return nil })
	})
	t.Run("event subscription", func(t *testing.T) {
		roundTrip(t, s, eventSubscriptionForm.Form, func(m *events.Subscription) store.Record { return plain(m.ID) },
			func(*events.Subscription) []string { return nil })
	})
	t.Run("event source", func(t *testing.T) {
		roundTrip(t, s, eventSourceForm.Form, func(*events.Source) store.Record { return plain("evs_1") }, func(*events.Source) []string { return nil })
	})
	t.Run("https edge", func(t *testing.T) {
		roundTrip(t, s, httpsEdgeForm.Form, func(m *edges.HTTPSEdge) store.Record { return plain(m.ID) }, func(*edges.HTTPSEdge) []string { return nil })
	})
	t.Run("https edge route", func(t *testing.T) {
		roundTrip(t, s, httpsRouteForm.Form, func(m *edges.HTTPSRoute) store.Record {
			r := plain(m.ID)
			r.ParentID = m.EdgeID
			return r
		}, func(m *edges.HTTPSRoute) []string { return []string{m.OIDC.ClientSecret} })
	})
	t.Run("tls edge", func(t *testing.T) {
		roundTrip(t, s, tlsEdgeForm.Form, func(m *edges.TLSEdge) store.Record { return plain(m.ID) }, func(*edges.TLSEdge) []string { return nil })
	})
	t.Run("tcp edge", func(t *testing.T) {
		roundTrip(t, s, tcpEdgeForm.Form, func(m *edges.TCPEdge) store.Record { return plain(m.ID) }, func(*edges.TCPEdge) []string { return nil })
	})
}

// TestTunnelDocParent: a tunnel's credential and session are its
// record's parent and its document's credential_id, whichever registered
// it: a host's tunnel has no session and stores no credential_id (its
// document is as before sessions existed); an agent's has both.
func TestTunnelDocParent(t *testing.T) {
	s, err := New(memstore.New(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		tunnel backends.Tunnel
		parent string
		doc    string
	}{
		{name: "registered by a host", parent: "cr_1",
			tunnel: backends.Tunnel{ID: "tn_1", AccountID: "acct", StartedAt: at, Labels: map[string]string{"a": "b"}, Credential: resource.Ref{ID: "cr_1"},
				ForwardsTo: "http://127.0.0.1:80", ExpiresAt: at},
			doc: `{"started_at":"2026-01-02T03:04:05Z","labels":{"a":"b"},"forwards_to":"http://127.0.0.1:80","expires_at":"2026-01-02T03:04:05Z"}`},
		{name: "started by an agent", parent: "ts_1",
			tunnel: backends.Tunnel{ID: "tn_1", AccountID: "acct", StartedAt: at, Labels: map[string]string{"a": "b"}, Credential: resource.Ref{ID: "cr_1"},
				ForwardsTo: "app://laptop", ExpiresAt: at, TunnelSession: &resource.Ref{ID: "ts_1"}, Metadata: "m"},
			doc: `{"started_at":"2026-01-02T03:04:05Z","labels":{"a":"b"},"forwards_to":"app://laptop","expires_at":"2026-01-02T03:04:05Z","credential_id":"cr_1","metadata":"m"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := store.Record{Kind: KindTunnel, AccountID: "acct", ID: "tn_1", ParentID: tc.parent}
			if err := tunnelForm.Encode(s.db, &tc.tunnel, &rec); err != nil {
				t.Fatal(err)
			}
			if string(rec.Data) != tc.doc {
				t.Errorf("document %s, want %s", rec.Data, tc.doc)
			}
			got, err := tunnelForm.Decode(s.db, rec)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tc.tunnel, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkEncodeDoc is what every write of a credential pays to encode
// its stored document: encodeDoc (the document's own appendJSON), and
// the reflective encoders it would use otherwise (go-json-experiment's
// v1, records.MarshalDoc's fallback) and encoding/json.
func BenchmarkEncodeDoc(b *testing.B) {
	c := &credentials.Credential{ID: "cr_0EReVdLuOSi6MMSeu91MCUT4Anx", CreatedAt: time.Date(2026, 11, 24, 0, 56, 43, 0, time.UTC),
		Description: "load", Metadata: "patched", ACL: []string{"bind:*.example.com"}, OwnerID: "usr_0EReVdL2T2cUX9nyK3mkUB5X59l"}
	s, err := New(memstore.New(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	b.Run("encodeDoc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rec := store.Record{Kind: KindCredential, ID: c.ID}
			if _, err := credentialForm.EncodeDoc(s.db, c, &rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, enc := range []struct {
		name    string
		marshal func(any) ([]byte, error)
	}{{"json-experiment", func(v any) ([]byte, error) { return jsonv1.Marshal(v) }}, {"encoding-json", json.Marshal}} {
		b.Run(enc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := store.Record{Kind: KindCredential, ID: c.ID}
				d, err := credentialForm.Save(s.db, c, &rec)
				if err != nil {
					b.Fatal(err)
				}
				if rec.Data, err = enc.marshal(d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTokenLookupKey: the lookup key a credential is stored under (and
// found by, on every agent connection) keeps its format, which stored
// records already hold: the hash alone for a legacy token, the
// credential's ID and the hash for one that names it.
func TestTokenLookupKey(t *testing.T) {
	legacy := credentials.TokenPrefix + strings.Repeat("x", credentials.LegacyTokenLen-len(credentials.TokenPrefix))
	if got, want := tokenLookup(legacy), "credential_token:"+credentials.HashToken(legacy); got != want {
		t.Fatalf("tokenLookup(legacy) = %q, want %q", got, want)
	}
	const id = "cr_2BjSiaW8q7lZoHf5oy7tzj3cMqA"
	tok, err := credentials.NewToken(id)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tokenLookup(tok), "credential_token:"+id+":"+credentials.HashToken(tok); got != want {
		t.Fatalf("tokenLookup = %q, want %q", got, want)
	}
	// Keys of later credentials sort after earlier ones'.
	g := ids.NewGenerator(time.Now)
	prev := ""
	for range 100 {
		tok, err := credentials.NewToken(g.New(credentials.IDPrefix))
		if err != nil {
			t.Fatal(err)
		}
		key := tokenLookup(tok)
		if key <= prev {
			t.Fatalf("key %q sorts before the earlier %q", key, prev)
		}
		prev = key
	}
}

// BenchmarkParseDoc is what a read the record cache misses pays to
// decode a credential's stored document: parse (go-json-experiment with
// encoding/json's options) and encoding/json itself.
func BenchmarkParseDoc(b *testing.B) {
	data := []byte(`{"created_at":"2026-11-24T00:56:43Z","description":"load","metadata":"patched","acl":["bind:*.example.com"],"owner_id":"usr_0EReVdL2T2cUX9nyK3mkUB5X59l"}`)
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := credentialForm.Parse(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := json.Unmarshal(data, new(storedforms.CredentialDoc)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// sampled holds the stored record of each kind roundTrip saw, for
// checkSampled. Only TestStoredForms writes it (not in parallel).
var sampled = map[store.Kind]store.Record{}

// checkSampled fails for every kind of kindList that TestStoredForms
// has no sample of, and for each whose stored sample cannot be shown as
// an event shows it (the kind's presentation).
func checkSampled(t *testing.T, s *Service) {
	for _, d := range kindList {
		k := d.info().StoreKind
		rec, ok := sampled[k]
		if !ok {
			t.Errorf("kind %s has no stored-form sample: add a case to TestStoredForms", k)
			continue
		}
		obj, err := d.showRecord(context.Background(), s, rec)
		if err != nil {
			t.Errorf("kind %s: its stored sample cannot be shown: %v", k, err)
			continue
		}
		if b, err := json.Marshal(obj); err != nil || len(b) < 3 {
			t.Errorf("kind %s: its sample shows as %s, %v", k, b, err)
		}
	}
}

// TestLegacyTokenAuthenticates: a credential stored under a legacy
// token's key (the hash alone, as credentials were before their tokens
// named them) still authenticates by that token.
func TestLegacyTokenAuthenticates(t *testing.T) {
	e := newCacheEnv(t, Options{})
	c, err := e.svc.CreateCredential(e.ctx, e.p, credentials.CreateParams{ACL: []string{"bind:*.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	legacy := credentials.TokenPrefix + strings.Repeat("A", credentials.LegacyTokenLen-len(credentials.TokenPrefix)-1) + "E"
	if !credentials.WellFormedToken(legacy) {
		t.Fatalf("%q is not a well-formed legacy token", legacy)
	}
	if _, err := e.store.Update(e.ctx, KindCredential, e.p.AccountID, c.ID, func(r *store.Record) error {
		r.Keys = []string{"credential_token:" + credentials.HashToken(legacy)}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	synced(t, e.ctx, e.svc)
	auth, err := e.svc.Host().AuthenticateTunnelToken(e.ctx, legacy)
	if err != nil {
		t.Fatal(err)
	}
	if auth.Credential.ID != c.ID || !auth.ACL.AllowsDomain("a.example.com") {
		t.Fatalf("legacy token authenticated %+v", auth.Credential)
	}
	if _, err := e.svc.Host().AuthenticateTunnelToken(e.ctx, *c.Token); apierr.CodeOf(err) != apierr.Unauthenticated {
		t.Fatalf("the token whose key was replaced: %v", err)
	}
}
