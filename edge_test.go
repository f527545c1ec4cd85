package edgeplane_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/google/go-cmp/cmp"
)

const testBase = "https://api.example.test/"

// httpsEdge creates an HTTPS edge for p.
func (e *env) httpsEdge(t testing.TB, p edgeplane.Principal) *edges.HTTPSEdge {
	t.Helper()
	v, err := e.svc.CreateHTTPSEdge(e.ctx, p, edges.CreateEdgeParams{Description: "web"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// route creates a route of an HTTPS edge for p.
func (e *env) route(t testing.TB, p edgeplane.Principal, edgeID, matchType, match string) *edges.HTTPSRoute {
	t.Helper()
	v, err := e.svc.CreateHTTPSEdgeRoute(e.ctx, p, edgeID, edges.CreateRouteParams{MatchType: matchType, Match: match})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tlsEdge creates a TLS edge for p.
func (e *env) tlsEdge(t testing.TB, p edgeplane.Principal) *edges.TLSEdge {
	t.Helper()
	v, err := e.svc.CreateTLSEdge(e.ctx, p, edges.CreateTLSEdgeParams{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tcpEdge creates a TCP edge for p.
func (e *env) tcpEdge(t testing.TB, p edgeplane.Principal) *edges.TCPEdge {
	t.Helper()
	v, err := e.svc.CreateTCPEdge(e.ctx, p, edges.CreateTCPEdgeParams{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// wantNotFoundNaming fails the test unless err is not-found and its message
// names id.
func wantNotFoundNaming(t *testing.T, err error, id string) {
	t.Helper()
	wantCode(t, err, apierr.NotFound)
	if !strings.Contains(err.Error(), id) {
		t.Fatalf("not-found error %q does not name %s", err, id)
	}
}

// edgeKind abstracts the three edge kinds' CRUD for one table test.
type edgeKind struct {
	name, collection, prefix string
	create                   func(e *env, p edgeplane.Principal, params edges.CreateEdgeParams) (id string, fields edgeFields, err error)
	get                      func(e *env, p edgeplane.Principal, id string) (edgeFields, error)
	list                     func(e *env, p edgeplane.Principal, opts edgeplane.ListOptions) ([]edgeFields, *string, string, error)
	update                   func(e *env, p edgeplane.Principal, id string, params edges.UpdateEdgeParams) (edgeFields, error)
	remove                   func(e *env, p edgeplane.Principal, id string) error
}

// edgeFields are the fields every edge kind shares.
type edgeFields struct {
	ID, URI, Description, Metadata string
	CreatedAt                      string
}

func fieldsOf(id, uri, desc, meta string, created interface{ Format(string) string }) edgeFields {
	return edgeFields{ID: id, URI: uri, Description: desc, Metadata: meta, CreatedAt: created.Format("2006-01-02T15:04:05Z07:00")}
}

func edgeKinds() []edgeKind {
	return []edgeKind{
		{
			name: "https", collection: "edges/https", prefix: "edghts_",
			create: func(e *env, p edgeplane.Principal, params edges.CreateEdgeParams) (string, edgeFields, error) {
				v, err := e.svc.CreateHTTPSEdge(e.ctx, p, params)
				if err != nil {
					return "", edgeFields{}, err
				}
				return v.ID, fieldsOf(v.ID, v.URI, v.Description, v.Metadata, v.CreatedAt), nil
			},
			get: func(e *env, p edgeplane.Principal, id string) (edgeFields, error) {
				v, err := e.svc.GetHTTPSEdge(e.ctx, p, id)
				if err != nil {
					return edgeFields{}, err
				}
				return fieldsOf(v.ID, v.URI, v.Description, v.Metadata, v.CreatedAt), nil
			},
			list: func(e *env, p edgeplane.Principal, opts edgeplane.ListOptions) ([]edgeFields, *string, string, error) {
				page, err := e.svc.ListHTTPSEdges(e.ctx, p, opts)
				if err != nil {
					return nil, nil, "", err
				}
				out := []edgeFields{}
				for _, v := range page.Items {
					out = append(out, fieldsOf(v.ID, v.URI, v.Description, v.Metadata, v.CreatedAt))
				}
				return out, page.NextPageURI, page.URI, nil
			},
			update: func(e *env, p edgeplane.Principal, id string, params edges.UpdateEdgeParams) (edgeFields, error) {
				v, err := e.svc.UpdateHTTPSEdge(e.ctx, p, id, params)
				if err != nil {
					return edgeFields{}, err
				}
				return fieldsOf(v.ID, v.URI, v.Description, v.Metadata, v.CreatedAt), nil
			},
			remove: func(e *env, p edgeplane.Principal, id string) error { return e.svc.DeleteHTTPSEdge(e.ctx, p, id) },
		},
		{
			name: "tls", collection: "edges/tls", prefix: "edgtls_",
			create: func(e *env, p edgeplane.Principal, params edges.CreateEdgeParams) (string, edgeFields, error) {
				v, err := e.svc.CreateTLSEdge(e.ctx, p, edges.CreateTLSEdgeParams{Description: params.Description, Metadata: params.Metadata})
				if err != nil {
					return "", edgeFields{}, err
				}
				if v.IPRestriction != nil || v.TrafficPolicy != nil || v.TLSTermination != nil {
					return "", edgeFields{}, errors.New("a new TLS edge has modules")
				}
				return v.ID, fieldsOf(v.ID, v.URI, v.Description, v.Metadata, v.CreatedAt), nil
			},
			get: func(e *env, p edgeplane.Principal, id string) (edgeFields, error) {
				v, err := e.svc.GetTLSEdge(e.ctx, p, id)
				if err != nil {
					return edgeFields{}, err
				}
				return fieldsOf(v.ID, v.URI, v.Description, v.Metadata, v.CreatedAt), nil
			},
			list: func(e *env, p edgeplane.Principal, opts edgeplane.ListOptions) ([]edgeFields, *string, string, error) {
				page, err := e.svc.ListTLSEdges(e.ctx, p, opts)
				if err != nil {
					return nil, nil, "", err
				}
				out := []edgeFields{}
				for _, v := range page.Items {
					out = append(out, fieldsOf(v.ID, v.URI, v.Description, v.Metadata, v.CreatedAt))
				}
				return out, page.NextPageURI, page.URI, nil
			},
			update: func(e *env, p edgeplane.Principal, id string, params edges.UpdateEdgeParams) (edgeFields, error) {
				v, err := e.svc.UpdateTLSEdge(e.ctx, p, id, edges.UpdateTLSEdgeParams{Description: params.Description, Metadata: params.Metadata})
				if err != nil {
					return edgeFields{}, err
				}
				return fieldsOf(v.ID, v.URI, v.Description, v.Metadata, v.CreatedAt), nil
			},
			remove: func(e *env, p edgeplane.Principal, id string) error { return e.svc.DeleteTLSEdge(e.ctx, p, id) },
		},
		{
			name: "tcp", collection: "edges/tcp", prefix: "edgtcp_",
			create: func(e *env, p edgeplane.Principal, params edges.CreateEdgeParams) (string, edgeFields, error) {
				v, err := e.svc.CreateTCPEdge(e.ctx, p, edges.CreateTCPEdgeParams{Description: params.Description, Metadata: params.Metadata})
				if err != nil {
					return "", edgeFields{}, err
				}
				if v.IPRestriction != nil || v.Backend != nil {
					return "", edgeFields{}, errors.New("a new TCP edge has modules")
				}
				return v.ID, fieldsOf(v.ID, v.URI, v.Description, v.Metadata, v.CreatedAt), nil
			},
			get: func(e *env, p edgeplane.Principal, id string) (edgeFields, error) {
				v, err := e.svc.GetTCPEdge(e.ctx, p, id)
				if err != nil {
					return edgeFields{}, err
				}
				return fieldsOf(v.ID, v.URI, v.Description, v.Metadata, v.CreatedAt), nil
			},
			list: func(e *env, p edgeplane.Principal, opts edgeplane.ListOptions) ([]edgeFields, *string, string, error) {
				page, err := e.svc.ListTCPEdges(e.ctx, p, opts)
				if err != nil {
					return nil, nil, "", err
				}
				out := []edgeFields{}
				for _, v := range page.Items {
					out = append(out, fieldsOf(v.ID, v.URI, v.Description, v.Metadata, v.CreatedAt))
				}
				return out, page.NextPageURI, page.URI, nil
			},
			update: func(e *env, p edgeplane.Principal, id string, params edges.UpdateEdgeParams) (edgeFields, error) {
				v, err := e.svc.UpdateTCPEdge(e.ctx, p, id, edges.UpdateTCPEdgeParams{Description: params.Description, Metadata: params.Metadata})
				if err != nil {
					return edgeFields{}, err
				}
				return fieldsOf(v.ID, v.URI, v.Description, v.Metadata, v.CreatedAt), nil
			},
			remove: func(e *env, p edgeplane.Principal, id string) error { return e.svc.DeleteTCPEdge(e.ctx, p, id) },
		},
	}
}

func TestEdgeCRUD(t *testing.T) {
	for _, k := range edgeKinds() {
		t.Run(k.name, func(t *testing.T) {
			e := newEnv(t)
			id, got, err := k.create(e, e.user, edges.CreateEdgeParams{Description: "api", Metadata: `{"team":"edge"}`})
			if err != nil {
				t.Fatal(err)
			}
			want := edgeFields{ID: id, URI: testBase + k.collection + "/" + id, Description: "api", Metadata: `{"team":"edge"}`,
				CreatedAt: "2026-11-21T09:30:15Z"}
			if !strings.HasPrefix(id, k.prefix) {
				t.Errorf("ID %s lacks the prefix %s", id, k.prefix)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("create (-want +got):\n%s", diff)
			}
			if got, err := k.get(e, e.admin, id); err != nil || !cmp.Equal(want, got) {
				t.Errorf("get = %+v, %v; want %+v", got, err, want)
			}

			// Update: absent fields keep their value; "" clears.
			got, err = k.update(e, e.user, id, edges.UpdateEdgeParams{Description: ptr("")})
			want.Description = ""
			if err != nil || !cmp.Equal(want, got) {
				t.Errorf("update = %+v, %v; want %+v", got, err, want)
			}
			_, err = k.update(e, e.user, id, edges.UpdateEdgeParams{Metadata: ptr(strings.Repeat("m", 4097))})
			wantViolation(t, err, "metadata", "4096 bytes")
			_, _, err = k.create(e, e.user, edges.CreateEdgeParams{Description: strings.Repeat("é", 128)})
			wantViolation(t, err, "description", "255 bytes")

			// Paging, newest first.
			id2, _, err := k.create(e, e.user, edges.CreateEdgeParams{})
			if err != nil {
				t.Fatal(err)
			}
			items, next, uri, err := k.list(e, e.user, edgeplane.ListOptions{Limit: 1})
			if err != nil || len(items) != 1 || items[0].ID != id2 || next == nil || uri != testBase+k.collection {
				t.Fatalf("list page 1 = %+v next %v uri %s, %v", items, next, uri, err)
			}
			items, next, _, err = k.list(e, e.user, edgeplane.ListOptions{Limit: 1, BeforeID: id2})
			if err != nil || len(items) != 1 || items[0].ID != id || next != nil {
				t.Fatalf("list page 2 = %+v next %v, %v", items, next, err)
			}
			_, _, _, err = k.list(e, e.user, edgeplane.ListOptions{BeforeID: "cr_x"})
			wantViolation(t, err, "before_id", k.prefix)

			// Another account sees nothing.
			_, err = k.get(e, e.other, id)
			wantNotFoundNaming(t, err, id)
			_, err = k.update(e, e.other, id, edges.UpdateEdgeParams{Description: ptr("x")})
			wantNotFoundNaming(t, err, id)
			wantNotFoundNaming(t, k.remove(e, e.other, id), id)
			if items, _, _, err := k.list(e, e.other, edgeplane.ListOptions{}); err != nil || len(items) != 0 {
				t.Errorf("another account lists %+v, %v", items, err)
			}
			_, err = k.get(e, e.user, "edgxxx_nope")
			wantNotFoundNaming(t, err, "edgxxx_nope")

			if err := k.remove(e, e.user, id); err != nil {
				t.Fatal(err)
			}
			_, err = k.get(e, e.user, id)
			wantNotFoundNaming(t, err, id)
			wantNotFoundNaming(t, k.remove(e, e.user, id), id)
		})
	}
}

func TestHTTPSEdgeRoutes(t *testing.T) {
	e := newEnv(t)
	edge := e.httpsEdge(t, e.user)
	r, err := e.svc.CreateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, edges.CreateRouteParams{
		MatchType: "path_prefix", Match: "/api/", Description: "api", Metadata: "m",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &edges.HTTPSRoute{
		ID: r.ID, URI: testBase + "edges/https/" + edge.ID + "/routes/" + r.ID, EdgeID: edge.ID,
		CreatedAt: r.CreatedAt, Description: "api", Metadata: "m", MatchType: "path_prefix", Match: "/api/",
	}
	if diff := cmp.Diff(want, r); diff != "" || !strings.HasPrefix(r.ID, "edghtsrt_") {
		t.Errorf("create route (-want +got):\n%s", diff)
	}
	got, err := e.svc.GetHTTPSEdgeRoute(e.ctx, e.bot, edge.ID, r.ID)
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Errorf("get route (%v) (-want +got):\n%s", err, diff)
	}

	// Two routes of one edge cannot match the same thing; another edge can.
	_, err = e.svc.CreateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, edges.CreateRouteParams{MatchType: "path_prefix", Match: "/api/"})
	wantCode(t, err, apierr.Conflict)
	if !strings.Contains(err.Error(), edge.ID) || !strings.Contains(err.Error(), "/api/") {
		t.Errorf("duplicate match conflict %q does not say which", err)
	}
	exact := e.route(t, e.user, edge.ID, "exact_path", "/api/")
	edge2 := e.httpsEdge(t, e.user)
	e.route(t, e.user, edge2.ID, "path_prefix", "/api/")

	// Update: match fields and text; clashing with a sibling is a conflict.
	upd, err := e.svc.UpdateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, r.ID, edges.UpdateRouteParams{Match: ptr("/v1/"), Metadata: ptr("")})
	if err != nil || upd.Match != "/v1/" || upd.MatchType != "path_prefix" || upd.Metadata != "" || upd.Description != "api" || upd.URI != want.URI {
		t.Errorf("update = %+v, %v", upd, err)
	}
	_, err = e.svc.UpdateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, exact.ID, edges.UpdateRouteParams{MatchType: ptr("path_prefix"), Match: ptr("/v1/")})
	wantCode(t, err, apierr.Conflict)
	// The freed match can be taken.
	e.route(t, e.user, edge.ID, "path_prefix", "/api/")
	_, err = e.svc.UpdateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, r.ID, edges.UpdateRouteParams{Match: ptr("no-slash")})
	wantViolation(t, err, "match", `starting with "/"`)
	_, err = e.svc.CreateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, edges.CreateRouteParams{MatchType: "glob", Match: "/"})
	wantViolation(t, err, "match_type", "exact_path, path_prefix")

	// Lists are per edge.
	page, err := e.svc.ListHTTPSEdgeRoutes(e.ctx, e.user, edge.ID, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 3 || page.URI != testBase+"edges/https/"+edge.ID+"/routes" {
		t.Fatalf("list routes = %+v, %v", page, err)
	}
	if page.Items[2].ID != r.ID || page.Items[1].ID != exact.ID {
		t.Errorf("routes not newest first: %v", page.Items)
	}
	page, err = e.svc.ListHTTPSEdgeRoutes(e.ctx, e.user, edge.ID, edgeplane.ListOptions{Limit: 2})
	if err != nil || page.NextPageURI == nil || !strings.HasPrefix(*page.NextPageURI, testBase+"edges/https/"+edge.ID+"/routes?") {
		t.Errorf("list routes page = %+v, %v", page, err)
	}

	// A route of another edge, another account's edge, a missing edge.
	_, err = e.svc.GetHTTPSEdgeRoute(e.ctx, e.user, edge2.ID, r.ID)
	wantNotFoundNaming(t, err, r.ID)
	_, err = e.svc.UpdateHTTPSEdgeRoute(e.ctx, e.user, edge2.ID, r.ID, edges.UpdateRouteParams{Description: ptr("x")})
	wantNotFoundNaming(t, err, r.ID)
	wantNotFoundNaming(t, e.svc.DeleteHTTPSEdgeRoute(e.ctx, e.user, edge2.ID, r.ID), r.ID)
	_, err = e.svc.GetHTTPSEdgeRoute(e.ctx, e.other, edge.ID, r.ID)
	wantNotFoundNaming(t, err, edge.ID)
	_, err = e.svc.ListHTTPSEdgeRoutes(e.ctx, e.other, edge.ID, edgeplane.ListOptions{})
	wantNotFoundNaming(t, err, edge.ID)
	_, err = e.svc.CreateHTTPSEdgeRoute(e.ctx, e.other, edge.ID, edges.CreateRouteParams{MatchType: "exact_path", Match: "/x"})
	wantNotFoundNaming(t, err, edge.ID)
	_, err = e.svc.CreateHTTPSEdgeRoute(e.ctx, e.user, "edghts_bad", edges.CreateRouteParams{MatchType: "exact_path", Match: "/x"})
	wantNotFoundNaming(t, err, "edghts_bad")
	_, err = e.svc.GetHTTPSEdgeRoute(e.ctx, e.user, edge.ID, "edghtsrt_bad")
	wantNotFoundNaming(t, err, "edghtsrt_bad")
	_, err = e.svc.UpdateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, "edghtsrt_bad", edges.UpdateRouteParams{})
	wantNotFoundNaming(t, err, "edghtsrt_bad")
	_, err = e.svc.UpdateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, edge2.ID, edges.UpdateRouteParams{})
	wantNotFoundNaming(t, err, edge2.ID)

	// Deleting a route.
	if err := e.svc.DeleteHTTPSEdgeRoute(e.ctx, e.user, edge.ID, exact.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetHTTPSEdgeRoute(e.ctx, e.user, edge.ID, exact.ID)
	wantNotFoundNaming(t, err, exact.ID)
	wantNotFoundNaming(t, e.svc.DeleteHTTPSEdgeRoute(e.ctx, e.user, edge.ID, exact.ID), exact.ID)

	// Deleting the edge deletes its routes, and only its.
	if err := e.svc.DeleteHTTPSEdge(e.ctx, e.user, edge.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Get(e.ctx, edgeplane.KindHTTPSEdgeRoute, e.user.AccountID, r.ID); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("route survived its edge: %v", err)
	}
	_, err = e.svc.GetHTTPSEdgeRoute(e.ctx, e.user, edge.ID, r.ID)
	wantNotFoundNaming(t, err, edge.ID)
	if page, err := e.svc.ListHTTPSEdgeRoutes(e.ctx, e.user, edge2.ID, edgeplane.ListOptions{}); err != nil || len(page.Items) != 1 {
		t.Errorf("the other edge's routes: %+v, %v", page, err)
	}
}

// TestEdgeOperationsNeedAPrincipal: every edge, route and module operation
// refuses a call without a valid principal, before looking at anything.
func TestEdgeOperationsNeedAPrincipal(t *testing.T) {
	e := newEnv(t)
	f := newModuleFixture(t, e, e.user)
	route := routeTarget(e, t, e.user)
	tls := e.tlsEdge(t, e.user).ID
	tcp := e.tcpEdge(t, e.user).ID
	var p edgeplane.Principal // nobody
	ops := map[string]func() error{
		"CreateHTTPSEdge": func() error { _, err := e.svc.CreateHTTPSEdge(e.ctx, p, edges.CreateEdgeParams{}); return err },
		"GetHTTPSEdge":    func() error { _, err := e.svc.GetHTTPSEdge(e.ctx, p, route.edgeID); return err },
		"ListHTTPSEdges":  func() error { _, err := e.svc.ListHTTPSEdges(e.ctx, p, edgeplane.ListOptions{}); return err },
		"UpdateHTTPSEdge": func() error {
			_, err := e.svc.UpdateHTTPSEdge(e.ctx, p, route.edgeID, edges.UpdateEdgeParams{})
			return err
		},
		"DeleteHTTPSEdge": func() error { return e.svc.DeleteHTTPSEdge(e.ctx, p, route.edgeID) },
		"CreateHTTPSEdgeRoute": func() error {
			_, err := e.svc.CreateHTTPSEdgeRoute(e.ctx, p, route.edgeID, edges.CreateRouteParams{MatchType: "exact_path", Match: "/x"})
			return err
		},
		"GetHTTPSEdgeRoute": func() error { _, err := e.svc.GetHTTPSEdgeRoute(e.ctx, p, route.edgeID, route.routeID); return err },
		"ListHTTPSEdgeRoutes": func() error {
			_, err := e.svc.ListHTTPSEdgeRoutes(e.ctx, p, route.edgeID, edgeplane.ListOptions{})
			return err
		},
		"UpdateHTTPSEdgeRoute": func() error {
			_, err := e.svc.UpdateHTTPSEdgeRoute(e.ctx, p, route.edgeID, route.routeID, edges.UpdateRouteParams{})
			return err
		},
		"DeleteHTTPSEdgeRoute": func() error { return e.svc.DeleteHTTPSEdgeRoute(e.ctx, p, route.edgeID, route.routeID) },
		"CreateTLSEdge":        func() error { _, err := e.svc.CreateTLSEdge(e.ctx, p, edges.CreateTLSEdgeParams{}); return err },
		"UpdateTLSEdge":        func() error { _, err := e.svc.UpdateTLSEdge(e.ctx, p, tls, edges.UpdateTLSEdgeParams{}); return err },
		"ListTLSEdges":         func() error { _, err := e.svc.ListTLSEdges(e.ctx, p, edgeplane.ListOptions{}); return err },
		"CreateTCPEdge":        func() error { _, err := e.svc.CreateTCPEdge(e.ctx, p, edges.CreateTCPEdgeParams{}); return err },
		"UpdateTCPEdge":        func() error { _, err := e.svc.UpdateTCPEdge(e.ctx, p, tcp, edges.UpdateTCPEdgeParams{}); return err },
		"DeleteTCPEdge":        func() error { return e.svc.DeleteTCPEdge(e.ctx, p, tcp) },
		"ReplaceTLSEdgeTrafficPolicy": func() error {
			_, err := e.svc.ReplaceTLSEdgeTrafficPolicy(e.ctx, p, tls, edges.TrafficPolicyParams{Value: denyAll})
			return err
		},
	}
	for _, m := range allModules() {
		tg := moduleTarget{tls, ""}
		switch {
		case strings.HasPrefix(m.event, "https"):
			tg = route
		case strings.HasPrefix(m.event, "tcp"):
			tg = moduleTarget{tcp, ""}
		}
		ops["replace "+m.event] = func() error { _, err := m.replace(e, p, tg, m.valid(f)); return err }
		ops["get "+m.event] = func() error { _, err := m.get(e, p, tg); return err }
		ops["delete "+m.event] = func() error { return m.del(e, p, tg) }
	}
	for name, op := range ops {
		if err := op(); apierr.CodeOf(err) != apierr.Unauthenticated {
			t.Errorf("%s without a principal: %v, want unauthenticated", name, err)
		}
	}
	if _, err := e.svc.GetHTTPSEdgeRoute(e.ctx, e.user, route.edgeID, route.routeID); err != nil {
		t.Errorf("the calls changed something: %v", err)
	}
}
