package console

import (
	"context"
	"fmt"
	"html"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/filter"
	"github.com/edgeplane/edgeplane/httpapi"
)

// Lists: every list page takes the API's list parameters in its query
// (limit, before_id, filter) and passes them to the Service as they are,
// so that a page and its filter mean what they mean in the API. A
// problem with them (a malformed filter, a bad limit or cursor) is the
// API's message, shown next to the filter box, with an empty list.

// listState is what a list page's filter box and pager show.
type listState struct {
	Path   string   // the page's path, where the filter box sends its query
	Filter string   // the filter as typed
	Limit  string   // the limit as given ("" for the default)
	Errors []string // the API's messages about limit, before_id or filter
	Next   string   // the next (older) page's URL; "" on the last page
	// Example is a filter shown as the box's placeholder.
	Example string
}

// listFields are the list parameters whose problems are shown next to
// the filter box.
var listFields = []string{filter.Field, "limit", "before_id"}

// listOptions reads a list page's query as the API reads its list's:
// filter at most once, limit a whole number, before_id as given (the
// Service checks them). Problems are returned as messages for the filter
// box.
func listOptions(q url.Values) (edgeplane.ListOptions, []string) {
	var opts edgeplane.ListOptions
	var msgs []string
	if fs := q["filter"]; len(fs) > 1 {
		msgs = append(msgs, fmt.Sprintf("filter: must be given at most once, got %d", len(fs)))
	}
	opts.Filter = q.Get("filter")
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		switch {
		case err != nil:
			msgs = append(msgs, fmt.Sprintf("limit: must be a whole number between 1 and %d", edgeplane.MaxPageSize))
		case n == 0:
			msgs = append(msgs, fmt.Sprintf("limit: must be between 1 and %d, got 0", edgeplane.MaxPageSize))
		default:
			opts.Limit = n
		}
	}
	opts.BeforeID = q.Get("before_id")
	return opts, msgs
}

// listFunc is the shape of the Service's list methods.
type listFunc[T any] func(ctx context.Context, p edgeplane.Principal, opts edgeplane.ListOptions) (*edgeplane.Page[T], error)

// listPage returns the page of list that r's query asks for, and the
// filter box's state. A problem with the query (the API's violations of
// filter, limit or before_id) gives no items, the messages in the state
// and status 400; any other error is returned.
func listPage[T any](r *http.Request, v *visit, path string, list listFunc[T]) ([]T, listState, int, error) {
	q := r.URL.Query()
	st := listState{Path: path, Filter: q.Get("filter"), Limit: q.Get("limit")}
	opts, msgs := listOptions(q)
	if len(msgs) > 0 {
		st.Errors = msgs
		return nil, st, http.StatusBadRequest, nil
	}
	page, err := list(r.Context(), v.p, opts)
	if err != nil {
		if msgs, ok := queryErrors(err); ok {
			st.Errors = msgs
			return nil, st, httpapi.StatusOf(apierr.CodeOf(err)), nil
		}
		return nil, st, 0, err
	}
	if page.NextBeforeID != "" {
		next := url.Values{"before_id": {page.NextBeforeID}}
		if opts.Limit != 0 {
			next.Set("limit", strconv.Itoa(opts.Limit))
		}
		if opts.Filter != "" {
			next.Set("filter", opts.Filter)
		}
		st.Next = path + "?" + next.Encode()
	}
	return page.Items, st, http.StatusOK, nil
}

// queryErrors returns the messages of err when it is an invalid argument
// whose violations all concern a list parameter.
func queryErrors(err error) ([]string, bool) {
	if apierr.CodeOf(err) != apierr.InvalidArgument {
		return nil, false
	}
	vs := apierr.ViolationsOf(err)
	if len(vs) == 0 {
		return nil, false
	}
	msgs := make([]string, 0, len(vs))
	for _, v := range vs {
		known := false
		for _, f := range listFields {
			known = known || v.Field == f
		}
		if !known {
			return nil, false
		}
		msgs = append(msgs, v.String())
	}
	return msgs, true
}

// Forms.

// lines is the text of a list field typed one item per line (an ACL, the
// hostports of an edge): its items, blank lines left out, and the line
// number (from 1) of each.
type lines struct {
	items []string
	at    []int
}

// splitLines returns the lines of s.
func splitLines(s string) *lines {
	l := &lines{}
	n := 0
	for line := range strings.Lines(s) {
		n++
		if line = strings.TrimSpace(line); line != "" {
			l.items = append(l.items, line)
			l.at = append(l.at, n)
		}
	}
	return l
}

// formErrors groups the violations of err by the form field they
// concern: fields are the form's fields by the API's names (description,
// target.http.url), each with its lines when typed one item per line. A
// violation belongs to the longest field that is a prefix of its own
// (hostports[2] to hostports, shown as "line 3 (the text): reason";
// target.http.headers.X-A to target.http.headers, shown as "X-A:
// reason"). An error without violations, or a violation of no field of
// the form, is under "".
func formErrors(err error, fields map[string]*lines) map[string][]string {
	errs := make(map[string][]string)
	vs := apierr.ViolationsOf(err)
	if len(vs) == 0 {
		errs[""] = append(errs[""], err.Error())
		return errs
	}
	for _, v := range vs {
		field := v.Field
		for field != "" {
			if _, ok := fields[field]; ok {
				break
			}
			i := strings.LastIndexAny(field, ".[")
			if i < 0 {
				field = ""
				break
			}
			field = field[:i]
		}
		if field == "" {
			errs[""] = append(errs[""], v.String())
			continue
		}
		reason := v.Reason
		if rest := v.Field[len(field):]; rest != "" {
			reason = describeRest(rest, fields[field]) + ": " + reason
		}
		errs[field] = append(errs[field], reason)
	}
	return errs
}

// describeRest names the part of a violation's field below the form's
// field: "[2]" of a field typed one item per line is that item's line.
func describeRest(rest string, l *lines) string {
	if l != nil && strings.HasPrefix(rest, "[") {
		if end := strings.IndexByte(rest, ']'); end > 0 {
			if n, err := strconv.Atoi(rest[1:end]); err == nil && n >= 0 && n < len(l.items) {
				s := fmt.Sprintf("line %d (%s)", l.at[n], clip(l.items[n]))
				if tail := strings.TrimPrefix(rest[end+1:], "."); tail != "" {
					s += " " + tail
				}
				return s
			}
		}
	}
	return strings.TrimPrefix(rest, ".")
}

// formFailure answers a form whose Service call failed with err: an
// invalid argument, conflict, failed precondition or the like shows the
// form again, with status, by calling show with the errors by field;
// an internal or unexpected error is returned for the error page.
func formFailure(err error, fields map[string]*lines, show func(status int, errs map[string][]string) error) error {
	switch apierr.CodeOf(err) {
	case apierr.InvalidArgument, apierr.Conflict, apierr.FailedPrecondition, apierr.PermissionDenied, apierr.ResourceExhausted, apierr.PayloadTooLarge:
		return show(httpapi.StatusOf(apierr.CodeOf(err)), formErrors(err, fields))
	}
	return err
}

// Template helpers of the forms' fields.

// fieldID is the HTML id of a form field named by its API name:
// target.http.url is target-http-url.
func fieldID(name string) string {
	return strings.NewReplacer(".", "-", "[", "-", "]", "").Replace(name)
}

// invalidAttrs marks a field with errors: aria-invalid, and
// aria-describedby naming its error's element.
func invalidAttrs(errs map[string][]string, name string) template.HTMLAttr {
	if len(errs[name]) == 0 {
		return ""
	}
	return template.HTMLAttr(` aria-invalid="true" aria-describedby="` + fieldID(name) + `-error"`)
}

// fieldErrorHTML is the element showing a field's errors, or nothing.
func fieldErrorHTML(errs map[string][]string, name string) template.HTML {
	list := errs[name]
	if len(list) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(`<div class="field-error" id="` + fieldID(name) + `-error">`)
	for _, e := range list {
		b.WriteString("<p>" + html.EscapeString(e) + "</p>")
	}
	b.WriteString("</div>")
	return template.HTML(b.String())
}
