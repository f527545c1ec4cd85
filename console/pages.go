package console

import (
	"bytes"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
)

// The sign-in page: an API key becomes a session.

type signInData struct {
	nav
	CSRF     string
	KeyError string
}

func (h *Handler) signInPage(w http.ResponseWriter, r *http.Request) {
	h.showSignIn(w, r, http.StatusOK, "")
}

// showSignIn renders the sign-in form with a fresh CSRF token, kept in a
// cookie of its own until a session exists (a form from another site
// cannot read it nor, SameSite=Strict, send it).
func (h *Handler) showSignIn(w http.ResponseWriter, r *http.Request, status int, keyError string) {
	token := randomToken()
	setCookie(w, r, signInCookie, token, time.Hour)
	h.render(w, status, "signin", &signInData{CSRF: token, KeyError: keyError})
}

func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if err := h.parseForm(w, r, h.opts.MaxBodyBytes); err != nil {
		h.fail(w, r, nil, err)
		return
	}
	c, err := r.Cookie(signInCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostForm.Get("csrf"))) != 1 {
		h.fail(w, r, nil, errCSRF)
		return
	}
	key := strings.TrimSpace(r.PostForm.Get("api_key"))
	p, err := h.svc.Authenticate(r.Context(), key)
	if err != nil {
		if apierr.CodeOf(err) == apierr.Unauthenticated {
			h.showSignIn(w, r, http.StatusUnauthorized, err.Error())
			return
		}
		h.fail(w, r, nil, err)
		return
	}
	// The account's dashboard restrictions before a session exists: a
	// refused address gets the refusal and no cookie.
	if _, err := h.checkIP(r, p); err != nil {
		h.fail(w, r, nil, err)
		return
	}
	cookie, _ := h.sessions.add(key, h.now())
	setCookie(w, r, sessionCookie, cookie, h.opts.SessionLifetime)
	setCookie(w, r, signInCookie, "", -1)
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// signOut ends the session. Without a valid session it changes
// nothing and shows the sign-in page; with one, it needs the session's
// CSRF token.
func (h *Handler) signOut(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		http.Redirect(w, r, Prefix+"signin", http.StatusSeeOther)
		return
	}
	s, _, err := h.sessions.get(c.Value, h.now())
	if err != nil {
		setCookie(w, r, sessionCookie, "", -1)
		http.Redirect(w, r, Prefix+"signin", http.StatusSeeOther)
		return
	}
	if err := h.parseForm(w, r, h.opts.MaxBodyBytes); err != nil {
		h.fail(w, r, nil, err)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
		h.fail(w, r, nil, errCSRF)
		return
	}
	h.sessions.end(c.Value)
	setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, Prefix+"signin", http.StatusSeeOther)
}

// The overview: what is online, live.

// overviewLimit is how many sessions and endpoints the overview lists.
const overviewLimit = 50

type liveData struct {
	Sessions     []agents.TunnelSession
	MoreSessions bool
	Endpoints    []agents.Endpoint
	MoreEndpts   bool
}

type overviewData struct {
	nav
	Live    liveData
	Updates string // how the lists update
}

func (h *Handler) liveData(v *visit) (liveData, error) {
	ctx := v.request.Context()
	ss, err := h.svc.ListTunnelSessions(ctx, v.p, edgeplane.ListOptions{Limit: overviewLimit})
	if err != nil {
		return liveData{}, err
	}
	es, err := h.svc.ListEndpoints(ctx, v.p, edgeplane.ListOptions{Limit: overviewLimit})
	if err != nil {
		return liveData{}, err
	}
	return liveData{Sessions: ss.Items, MoreSessions: ss.NextBeforeID != "", Endpoints: es.Items, MoreEndpts: es.NextBeforeID != ""}, nil
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request, v *visit) error {
	d, err := h.liveData(v)
	if err != nil {
		return err
	}
	updates := "the lists update as it changes."
	if h.opts.Feed == nil {
		updates = "the lists update every " + h.opts.PollInterval.String() + "."
	}
	h.render(w, http.StatusOK, "overview", &overviewData{nav: h.nav(v, "overview"), Live: d, Updates: updates})
	return nil
}

// liveCoalesce is the least time between two reads of one overview's
// stream that changes woke: a burst of changes is one read.
const liveCoalesce = 250 * time.Millisecond

// live streams the overview's online part as server-sent events: an
// "update" event with the part's HTML whenever it changes. The stream
// reads the part from the Service when the change feed reports a change
// of the account that the overview shows (at most once per
// liveCoalesce), and every PollInterval in any case, each time for the
// session as it is then (re-authenticated, IP-checked). When the session
// ends or is refused, an "end" event tells the page to reload, and the
// stream closes; beyond MaxLiveStreams, a "busy" event tells it live
// updates are off.
func (h *Handler) live(w http.ResponseWriter, r *http.Request, v *visit) error {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(event string, data []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second)) // a stuck reader ends the stream
		var b bytes.Buffer
		b.WriteString("event: " + event + "\n")
		for line := range bytes.Lines(data) {
			b.WriteString("data: ")
			b.Write(bytes.TrimRight(line, "\r\n"))
			b.WriteByte('\n')
		}
		if len(data) == 0 {
			b.WriteString("data: \n")
		}
		b.WriteByte('\n')
		if _, err := w.Write(b.Bytes()); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// Wait before the first read: a change committed after the read
	// wakes the stream.
	waiter, err := h.hub.Wait(v.p.AccountID)
	if err != nil {
		send("busy", []byte("too many live views are open: reload the page later"))
		return nil
	}
	defer waiter.Close()
	ctx := r.Context()
	var last []byte
	var buf bytes.Buffer
	tick := time.NewTicker(h.opts.PollInterval)
	defer tick.Stop()
	pause := time.NewTimer(liveCoalesce)
	pause.Stop()
	for {
		d, err := h.liveData(v)
		if err != nil {
			if ctx.Err() == nil {
				send("end", []byte(apierr.CodeOf(err).String()))
			}
			return nil
		}
		read := time.Now()
		buf.Reset()
		if err := h.pages["live"].ExecuteTemplate(&buf, "live", &d); err != nil {
			h.log.Error("console: the live part did not render", "err", err)
			return nil
		}
		if !bytes.Equal(buf.Bytes(), last) {
			last = append(last[:0], buf.Bytes()...)
			if !send("update", last) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-waiter.C:
			// Coalesce: the changes of a burst are read once.
			if wait := liveCoalesce - time.Since(read); wait > 0 {
				pause.Reset(wait)
				select {
				case <-ctx.Done():
					return nil
				case <-pause.C:
				}
			}
			select {
			case <-waiter.C: // the read that follows sees those changes too
			default:
			}
		}
		nv, err := h.visitor(r)
		if err != nil {
			send("end", []byte("signed out"))
			return nil
		}
		v = nv
	}
}

// Credentials.

// credentialsData is the credentials page: a page of the list and the
// create form with its values and the API's violations by field.
type credentialsData struct {
	nav
	List   listState
	Items  []credentials.Credential
	Form   credentialForm
	Errors map[string][]string // field (description, metadata, acl, "") -> reasons
}

type credentialForm struct {
	Description, Metadata, ACL string
}

func (h *Handler) credentials(w http.ResponseWriter, r *http.Request, v *visit) error {
	return h.showCredentials(w, r, v, http.StatusOK, credentialForm{}, nil)
}

func (h *Handler) showCredentials(w http.ResponseWriter, r *http.Request, v *visit, status int, form credentialForm, errs map[string][]string) error {
	items, st, code, err := listPage(r, v, Prefix+"credentials", h.svc.ListCredentials)
	if err != nil {
		return err
	}
	st.Example = `obj.description.startsWith("prod")`
	h.render(w, max(status, code), "credentials", &credentialsData{nav: h.nav(v, "credentials"), List: st, Items: items, Form: form, Errors: errs})
	return nil
}

// createCredential creates a credential from the form. Its violations
// are shown next to their fields; on success the browser is sent to the
// credential's page, which shows the token this once.
func (h *Handler) createCredential(w http.ResponseWriter, r *http.Request, v *visit) error {
	form := credentialForm{Description: r.PostForm.Get("description"), Metadata: r.PostForm.Get("metadata"), ACL: r.PostForm.Get("acl")}
	acl := splitLines(form.ACL)
	params := credentials.CreateParams{Description: form.Description, Metadata: form.Metadata, ACL: acl.items}
	c, err := h.svc.CreateCredential(r.Context(), v.p, params)
	if err != nil {
		return formFailure(err, map[string]*lines{"description": nil, "metadata": nil, "acl": acl}, func(status int, errs map[string][]string) error {
			return h.showCredentials(w, r, v, status, form, errs)
		})
	}
	h.sessions.setToken(v.cookie, v.s, c.ID, *c.Token)
	http.Redirect(w, r, Prefix+"credentials/"+c.ID, http.StatusSeeOther)
	return nil
}

type credentialData struct {
	nav
	Credential *credentials.Credential
	Token      string // shown once: right after creation
	Command    string
	Edit       credentialForm      // the edit form's values
	Errors     map[string][]string // the edit form's violations by field
}

// editCredential updates a credential from its page's edit form, as
// PATCH /credentials/{id}: only a field whose value differs from the
// credential's current one is sent (the ACL compared rule by rule), so
// an untouched field is left as it is. A violation is shown next to its
// field (an ACL rule's at its line) and nothing is saved.
func (h *Handler) editCredential(w http.ResponseWriter, r *http.Request, v *visit) error {
	id := r.PathValue("id")
	c, err := h.svc.GetCredential(r.Context(), v.p, id)
	if err != nil {
		return err
	}
	form := credentialForm{Description: r.PostForm.Get("description"), Metadata: r.PostForm.Get("metadata"), ACL: r.PostForm.Get("acl")}
	acl := splitLines(form.ACL)
	params := credentials.UpdateParams{Description: changed(form.Description, c.Description), Metadata: changed(form.Metadata, c.Metadata), ACL: changedList(acl, c.ACL)}
	if params.Description == nil && params.Metadata == nil && params.ACL == nil {
		return h.saved(w, r, v, false, "credential", c.ID, Prefix+"credentials/"+c.ID)
	}
	if _, err := h.svc.UpdateCredential(r.Context(), v.p, id, params); err != nil {
		return formFailure(err, map[string]*lines{"description": nil, "metadata": nil, "acl": acl}, func(status int, errs map[string][]string) error {
			h.render(w, status, "credential", &credentialData{nav: h.nav(v, "credentials"), Credential: c, Edit: form, Errors: errs})
			return nil
		})
	}
	return h.saved(w, r, v, true, "credential", c.ID, Prefix+"credentials/"+c.ID)
}

func (h *Handler) credential(w http.ResponseWriter, r *http.Request, v *visit) error {
	id := r.PathValue("id")
	c, err := h.svc.GetCredential(r.Context(), v.p, id)
	if err != nil {
		return err
	}
	d := &credentialData{nav: h.nav(v, "credentials"), Credential: c,
		Edit: credentialForm{Description: c.Description, Metadata: c.Metadata, ACL: strings.Join(c.ACL, "\n")}}
	if token, ok := h.sessions.takeToken(v.cookie, v.s, c.ID); ok {
		d.Token = token
		d.Command = "edgeplane agent config add-authtoken " + token
	}
	h.render(w, http.StatusOK, "credential", d)
	return nil
}

// Tunnel sessions.

type tunnelSessionsData struct {
	nav
	List  listState
	Items []agents.TunnelSession
}

func (h *Handler) tunnelSessions(w http.ResponseWriter, r *http.Request, v *visit) error {
	items, st, code, err := listPage(r, v, Prefix+"tunnel_sessions", h.svc.ListTunnelSessions)
	if err != nil {
		return err
	}
	st.Example = `obj.os.startsWith("linux")`
	h.render(w, code, "tunnel_sessions", &tunnelSessionsData{nav: h.nav(v, "tunnel_sessions"), List: st, Items: items})
	return nil
}

func (h *Handler) stopTunnelSession(w http.ResponseWriter, r *http.Request, v *visit) error {
	id := r.PathValue("id")
	if err := h.svc.StopTunnelSession(r.Context(), v.p, id); err != nil {
		return err
	}
	h.sessions.setNotice(v.s, "Stop requested for tunnel session "+id+": its agent is told to stop; the session stays listed until the agent is gone.")
	http.Redirect(w, r, Prefix+"tunnel_sessions", http.StatusSeeOther)
	return nil
}

// nav returns the navigation of a page of v, with the session's notice
// (shown once).
func (h *Handler) nav(v *visit, current string) nav {
	return nav{SignedIn: true, CSRF: v.csrf, Current: current, Notice: h.sessions.takeNotice(v.s)}
}
