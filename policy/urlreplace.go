package policy

import "github.com/edgeplane/edgeplane/apierr"

// Result fields of redirect and url-rewrite (extensions of the SPEC,
// issue 19).
const (
	resMatches = "matches" // from matched (always, without from)
	resURL     = "url"     // the URL it gave, or ""
)

// urlResults are the result fields of redirect and url-rewrite.
var urlResults = []ResultField{{Name: resMatches, Type: ResultBool, HTTPOnly: true}, {Name: resURL, Type: ResultString, HTTPOnly: true}}

// urlReplace holds the compiled from/to of redirect and url-rewrite.
type urlReplace struct {
	res  urlResultSlots
	from *Regexp // nil: to is the whole new URL
	to   *Template
}

func compileURLReplace(c *CompileContext, vs *apierr.Violations, from, to *string, fromRequired bool) urlReplace {
	var u urlReplace
	groups := 0
	switch {
	case from != nil:
		re, err := c.c.compileRegexp(*from)
		switch {
		case err == errDocumentBudget:
		case err != nil:
			vs.Add("config.from", "%s", err.Error())
		default:
			u.from = re
			groups = re.NumSubexp()
			// It runs on req.url: its cost counts in the document's.
			if m := c.c.addCost(regexCost(estURLMax, re.prog)); m != "" {
				vs.Add("config.from", "%s", m)
			}
		}
	case fromRequired:
		vs.Add("config.from", "is required: a regular expression matched against the request URL")
	}
	if to == nil || *to == "" {
		vs.Add("config.to", "is required")
		return u
	}
	checkHeaderValue(vs, "config.to", *to)
	u.to = c.c.template(vs, "config.to", *to, groups)
	return u
}

// apply returns the new URL, or false when from does not match. The match
// of from in the URL is replaced by the expansion of to.
func (u *urlReplace) apply(r *RunContext, subject string) (string, bool) {
	st := r.st
	if u.from == nil {
		return st.renderGroups(u.to, r.cur, "", nil), true
	}
	if !st.charge(regexCost(size(subject), u.from.prog)) {
		r.ReportError(ErrCostLimit)
		return "", false
	}
	m := u.from.FindStringSubmatchIndex(subject)
	if m == nil {
		return "", false
	}
	repl := st.renderGroups(u.to, r.cur, subject, m)
	return subject[:m[0]] + repl + subject[m[1]:], true
}

// urlResults holds the slots of the matches and url result variables.
type urlResultSlots struct{ matches, url ResultSlot }

func (u *urlResultSlots) init(c *CompileContext) error {
	return resultSlots(c, map[string]*ResultSlot{resMatches: &u.matches, resURL: &u.url})
}

// set sets the matches and url result variables.
func (u *urlResultSlots) set(r *RunContext, matched bool, url string) {
	r.SetBool(u.matches, matched)
	r.SetString(u.url, url)
}
