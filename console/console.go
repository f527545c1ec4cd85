package console

import (
	"bytes"
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/clientip"
	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/edgeplane/edgeplane/internal/livefeed"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/store"
)

// Prefix is the path the console is served under: mount a [Handler] on
// it ("/console/") in the server's mux.
const Prefix = "/console/"

// Defaults of [Options].
const (
	DefaultSessionLifetime = 12 * time.Hour
	DefaultMaxSessions     = 10000
	DefaultMaxBodyBytes    = 64 << 10
	DefaultPollInterval    = 2 * time.Second
	DefaultRecheckInterval = time.Minute
	DefaultMaxLiveStreams  = livefeed.DefaultMaxWaiters
)

// Cookie names.
const (
	sessionCookie = "ep_console"
	signInCookie  = "ep_console_signin" // the sign-in form's CSRF token, before a session
)

// Options configures a [Handler]. The zero value gives the documented
// defaults.
type Options struct {
	// Logger receives the causes of internal errors. Default: discard.
	Logger *slog.Logger
	// Clock returns the current time (session lifetimes). Default
	// time.Now.
	Clock func() time.Time
	// SessionLifetime bounds a session from its sign-in. Default
	// [DefaultSessionLifetime] (12 h).
	SessionLifetime time.Duration
	// MaxSessions bounds the sessions held in memory; signing in beyond
	// it ends the session that would expire first. Default
	// [DefaultMaxSessions].
	MaxSessions int
	// MaxBodyBytes bounds a form's body; a larger one gets 413. Default
	// [DefaultMaxBodyBytes] (64 KiB).
	MaxBodyBytes int64
	// Feed is the change feed of the Service's store: an open overview
	// reads again when it reports a change of what the overview shows
	// (see the package's Live updates). Nil: the overview polls, every
	// PollInterval.
	Feed store.Feed
	// PollInterval is how often an open overview asks the Service what
	// is online, and checks its session again, without waiting for a
	// change. Default: [DefaultPollInterval] (2 s) without a Feed;
	// [DefaultRecheckInterval] (1 minute) with one, when it only
	// catches what the feed does not report (a session's end of life).
	PollInterval time.Duration
	// MaxLiveStreams bounds the overviews open at once, each a stream of
	// live updates; an account may hold a tenth of them (at least one).
	// One beyond is told that live updates are busy. Default
	// [DefaultMaxLiveStreams].
	MaxLiveStreams int
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client that the account's IP restrictions of type dashboard check,
	// as the API's (httpapi.Options.TrustedProxies). Default: none.
	TrustedProxies []netip.Prefix
}

// Handler serves the web console. Create it with [New]; it is safe for
// concurrent use.
type Handler struct {
	svc      *edgeplane.Service
	opts     Options
	log      *slog.Logger
	now      func() time.Time
	sessions *sessions
	mux      *http.ServeMux
	pages    map[string]*template.Template
	bufs     sync.Pool
	hub      *livefeed.Hub // wakes the open overviews
	patterns []string      // the routes registered by handle, in order
}

// handle registers hd for pattern on m, and records the pattern so that
// the package's tests reach every route (the session and CSRF checks of
// each page and form) without a list of their own.
func (h *Handler) handle(m *http.ServeMux, pattern string, hd http.Handler) {
	h.patterns = append(h.patterns, pattern)
	m.Handle(pattern, hd)
}

// liveKinds are the kinds of record whose changes wake an account's
// open overviews: those it lists (tunnel sessions, endpoints), and those
// that decide whether its session may still see them (API keys, their
// owners, the account, its IP restrictions and their policies), so that
// a revoked key or a new dashboard restriction ends the stream at once.
var liveKinds = []store.Kind{kinds.TunnelSession, kinds.Endpoint,
	kinds.APIKey, kinds.User, kinds.Bot, kinds.Account, kinds.IPRestriction, kinds.IPPolicy, kinds.IPPolicyRule}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// New returns a Handler acting for its signed-in users through svc.
func New(svc *edgeplane.Service, opts Options) (*Handler, error) {
	h := &Handler{svc: svc, opts: opts, log: opts.Logger, now: opts.Clock}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.opts.SessionLifetime <= 0 {
		h.opts.SessionLifetime = DefaultSessionLifetime
	}
	if h.opts.MaxSessions <= 0 {
		h.opts.MaxSessions = DefaultMaxSessions
	}
	if h.opts.MaxBodyBytes <= 0 {
		h.opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if h.opts.PollInterval <= 0 {
		h.opts.PollInterval = DefaultPollInterval
		if h.opts.Feed != nil {
			h.opts.PollInterval = DefaultRecheckInterval
		}
	}
	if h.opts.MaxLiveStreams <= 0 {
		h.opts.MaxLiveStreams = DefaultMaxLiveStreams
	}
	h.hub = livefeed.New(h.opts.Feed, livefeed.Options{Kinds: liveKinds, MaxWaiters: h.opts.MaxLiveStreams,
		MaxPerAccount: max(1, h.opts.MaxLiveStreams/10), Logger: h.log})
	h.sessions = newSessions(h.opts.MaxSessions, h.opts.SessionLifetime)
	if err := h.parseTemplates(); err != nil {
		return nil, err
	}
	h.routes()
	return h, nil
}

func (h *Handler) parseTemplates() error {
	funcs := template.FuncMap{
		"when":       when,
		"invalid":    invalidAttrs,
		"fieldError": fieldErrorHTML,
		"fid":        fieldID,
	}
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/live.html", "templates/partials.html")
	if err != nil {
		return err
	}
	h.pages = make(map[string]*template.Template)
	names, _ := fs.Glob(templateFS, "templates/*.html")
	for _, name := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if base == "layout" || base == "live" || base == "partials" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, name)
		if err != nil {
			return err
		}
		h.pages[base] = t
	}
	h.pages["live"] = layout
	return nil
}

// when formats a time.Time or *time.Time (nil: "") for a page.
func when(t any) string {
	switch t := t.(type) {
	case time.Time:
		return t.UTC().Format("2006-01-02 15:04:05Z")
	case *time.Time:
		if t != nil {
			return t.UTC().Format("2006-01-02 15:04:05Z")
		}
	}
	return ""
}

// routes registers every route, in one place.
func (h *Handler) routes() {
	static, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix(Prefix+"static/", http.FileServerFS(static))
	m := http.NewServeMux()
	h.handle(m, "GET "+Prefix+"static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	}))
	m.HandleFunc("GET "+Prefix+"signin", h.signInPage)
	m.HandleFunc("POST "+Prefix+"signin", h.signIn)
	m.HandleFunc("POST "+Prefix+"signout", h.signOut)
	h.handle(m, "GET "+Prefix+"{$}", h.page(h.overview))
	h.handle(m, "GET "+Prefix+"live", h.page(h.live))
	h.handle(m, "GET "+Prefix+"credentials", h.page(h.credentials))
	h.handle(m, "POST "+Prefix+"credentials", h.form(h.createCredential))
	h.handle(m, "GET "+Prefix+"credentials/{id}", h.page(h.credential))
	h.handle(m, "POST "+Prefix+"credentials/{id}/edit", h.form(h.editCredential))
	h.handle(m, "POST "+Prefix+"credentials/{id}/delete", h.form(h.deleter("credential", Prefix+"credentials", h.svc.DeleteCredential)))
	h.handle(m, "GET "+Prefix+"endpoints", h.page(h.endpoints))
	h.handle(m, "GET "+Prefix+"endpoints/{id}", h.page(h.endpoint))
	h.handle(m, "GET "+Prefix+"reserved_domains", h.page(h.reservedDomains))
	h.handle(m, "POST "+Prefix+"reserved_domains", h.form(h.createReservedDomain))
	h.handle(m, "GET "+Prefix+"reserved_domains/{id}", h.page(h.reservedDomain))
	h.handle(m, "POST "+Prefix+"reserved_domains/{id}/edit", h.form(h.editReservedDomain))
	h.handle(m, "POST "+Prefix+"reserved_domains/{id}/certificate_management_policy/delete", h.form(h.unmanageDomain))
	h.handle(m, "POST "+Prefix+"reserved_domains/{id}/delete", h.form(h.deleter("reserved domain", Prefix+"reserved_domains", h.svc.DeleteReservedDomain)))
	h.edgeRoutes(m)
	h.ipRoutes(m)
	h.destinationRoutes(m)
	h.backendRoutes(m)
	h.ipModuleRoutes(m)
	h.subscriptionRoutes(m)
	h.certificateRoutes(m)
	h.botRoutes(m)
	h.apiKeyRoutes(m)
	h.handle(m, "GET "+Prefix+"tunnel_sessions", h.page(h.tunnelSessions))
	h.handle(m, "POST "+Prefix+"tunnel_sessions/{id}/stop", h.form(h.stopTunnelSession))
	m.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, nil, apierr.NotFoundf("no such page %s", clip(r.URL.Path)))
	})
	h.mux = m
}

// ServeHTTP implements [http.Handler] for the paths under [Prefix].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "same-origin")
	hdr.Set("X-Frame-Options", "DENY")
	if ctx := h.svc.Fence(r.Context()); ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	h.mux.ServeHTTP(w, r)
}

// visit is a request of a signed-in principal.
type visit struct {
	p       edgeplane.Principal
	s       *session
	cookie  string
	csrf    string
	request *http.Request
}

// pageFunc serves a page for a signed-in principal. It returns an error
// that [Handler.fail] turns into a page.
type pageFunc func(w http.ResponseWriter, r *http.Request, v *visit) error

// errSignIn: the request has no valid session; the answer is the
// sign-in page.
var errSignIn = errors.New("sign in")

// visitor resolves the request's session, authenticates its API key
// again (so that a revoked or deleted key, or a deactivated owner, ends
// the session at once: the Service's authentication cache forgets a
// deleted key at once) and checks the account's IP restrictions of type
// dashboard against the client's address.
func (h *Handler) visitor(r *http.Request) (*visit, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, errSignIn
	}
	s, key, err := h.sessions.get(c.Value, h.now())
	if err != nil {
		return nil, errSignIn
	}
	p, err := h.svc.Authenticate(r.Context(), key)
	if err != nil {
		if apierr.CodeOf(err) == apierr.Unauthenticated {
			h.sessions.end(c.Value) // the key is gone: so is the session
			return nil, errSignIn
		}
		return nil, err
	}
	if p, err = h.checkIP(r, p); err != nil {
		return nil, err
	}
	return &visit{p: p, s: s, cookie: c.Value, csrf: s.csrf, request: r}, nil
}

// checkIP sets the client's address on p, as the server sees it, and
// checks it against the account's IP restrictions of type dashboard.
func (h *Handler) checkIP(r *http.Request, p edgeplane.Principal) (edgeplane.Principal, error) {
	client, _ := clientip.Of(r, h.opts.TrustedProxies)
	p.ClientIP = client.Addr()
	return p, h.svc.CheckIPRestrictions(r.Context(), p, ipaccess.TypeDashboard, p.ClientIP)
}

// page adapts a page to an http.Handler: the visitor, then the page.
func (h *Handler) page(fn pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		v, err := h.visitor(r)
		if err == nil {
			err = fn(w, r, v)
		}
		if err != nil {
			h.fail(w, r, v, err)
		}
	})
}

// errCSRF is the answer to a form without its session's token, or sent
// from another site.
var errCSRF = apierr.New(apierr.PermissionDenied, "the form was not sent from this console's page (its security token is missing or wrong); reload the page and send it again")

// form adapts a form's handler: the visitor, the body's bound, the
// request's origin and the form's CSRF token, then the handler. A
// request without a valid session is sent to the sign-in page and
// changes nothing.
func (h *Handler) form(fn pageFunc) http.Handler {
	return h.formUpTo(h.opts.MaxBodyBytes, fn)
}

// formUpTo is [Handler.form] for a form whose body may be up to limit
// bytes, or MaxBodyBytes if larger (the traffic-policy editor's, whose
// document the API bounds).
func (h *Handler) formUpTo(limit int64, fn pageFunc) http.Handler {
	limit = max(limit, h.opts.MaxBodyBytes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		v, err := h.visitor(r)
		if err == nil {
			err = h.parseForm(w, r, limit)
		}
		if err == nil && subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(v.csrf)) != 1 {
			err = errCSRF
		}
		if err == nil {
			err = fn(w, r, v)
		}
		if err != nil {
			h.fail(w, r, v, err)
		}
	})
}

// parseForm checks that the request comes from this origin (Origin and
// Sec-Fetch-Site, when the browser sends them) and reads its form,
// bounded by limit (413 beyond).
func (h *Handler) parseForm(w http.ResponseWriter, r *http.Request, limit int64) error {
	if !sameOrigin(r) {
		return errCSRF
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return apierr.New(apierr.PayloadTooLarge, "the form is larger than %d bytes", limit)
		}
		return apierr.New(apierr.InvalidArgument, "the form cannot be read: send it from the console's page")
	}
	return nil
}

// sameOrigin reports whether the browser's own headers, when present,
// say the request comes from a page of this origin.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host && (u.Scheme == "https") == (r.TLS != nil)
}

// fail answers err: the sign-in page for a request without a session,
// else an error page with the API's status and client-safe message
// (internal errors: a generic one, the cause logged). v is nil before
// the visitor is known; the page then shows no navigation.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, v *visit, err error) {
	if errors.Is(err, errSignIn) {
		if r.Method == http.MethodGet && r.Header.Get("Accept") == "text/event-stream" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, Prefix+"signin", http.StatusSeeOther)
		return
	}
	code := apierr.CodeOf(err)
	msg := err.Error()
	var ae *apierr.Error
	if code == apierr.Internal || !errors.As(err, &ae) {
		if errors.Is(err, context.Canceled) {
			return
		}
		h.log.Error("console: internal error", "path", clip(r.URL.Path), "err", err)
		code, msg = apierr.Internal, "internal error; try again, and tell the service's operator if it happens again"
	}
	data := errorPage{Status: httpapi.StatusOf(code), Title: titleOf(code), Message: msg}
	if code == apierr.PermissionDenied && errors.Is(err, apierr.ErrPermissionDenied) && v == nil {
		data.Title = "Access denied"
	}
	if v != nil {
		data.nav = nav{SignedIn: true, CSRF: v.csrf}
	}
	h.render(w, data.Status, "error", &data)
}

// titleOf is an error page's heading.
func titleOf(c apierr.Code) string {
	switch c {
	case apierr.NotFound:
		return "Not found"
	case apierr.PermissionDenied:
		return "Not allowed"
	case apierr.PayloadTooLarge:
		return "Too large"
	case apierr.ResourceExhausted:
		return "Too many requests"
	case apierr.Internal:
		return "Something went wrong"
	}
	s := c.String()
	return strings.ToUpper(s[:1]) + s[1:]
}

// errorPage is the data of the error page.
type errorPage struct {
	nav
	Status  int
	Title   string
	Message string
}

// nav is what every page's header needs.
type nav struct {
	SignedIn bool
	CSRF     string
	Current  string // the page's name, marked in the navigation
	Notice   string // a message shown once, after a form
}

// render executes page with data into a buffer, then writes it with
// status: a page that fails to render is a 500, never half a page.
func (h *Handler) render(w http.ResponseWriter, status int, page string, data any) {
	buf, _ := h.bufs.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	defer h.bufs.Put(buf)
	if err := h.pages[page].ExecuteTemplate(buf, "layout.html", data); err != nil {
		h.log.Error("console: a page did not render", "page", page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// setCookie sets a cookie of the console's path: HttpOnly, SameSite
// Strict, and Secure when the request came over TLS. maxAge < 0 deletes
// it.
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	c := &http.Cookie{Name: name, Value: value, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	if maxAge < 0 {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(maxAge / time.Second)
	}
	http.SetCookie(w, c)
}

// clip bounds user-supplied text repeated in a page or a log line.
func clip(s string) string { return apierr.Truncate(s, 256) }
