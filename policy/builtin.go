package policy

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
)

// builtinType is a built-in action type. Each built-in action declares
// its own in the file named after it (action_<name>.go: its config,
// validation and execution), and [builtinTypes] lists them all: the
// registry every [Engine] starts from, which the package doc's list of
// actions and of result variables is checked against.
type builtinType struct {
	name    string
	compile func(c *CompileContext, config []byte) (Action, error)
	// results are the result variables the action sets
	// (actions.service.<type>.<field>).
	results []ResultField
	// httpOnly makes the action a compile error in a connection policy
	// (see needHTTP).
	httpOnly bool
}

// builtinTypes returns the built-in action types, in the order an
// [Engine] registers them (which orders their result variables' slots).
func builtinTypes() []builtinType {
	return []builtinType{
		logType,
		denyType,
		customResponseType,
		addHeadersType,
		removeHeadersType,
		redirectType,
		urlRewriteType,
		restrictIPsType,
		rateLimitType,
		setVarsType,
		jwtValidationType,
		basicAuthType,
		forwardInternalType,
	}
}

// Type returns the action's name.
func (t builtinType) Type() string { return t.name }

// Compile compiles one action of the type.
func (t builtinType) Compile(c *CompileContext, config []byte) (Action, error) {
	return t.compile(c, config)
}

// ResultFields returns the result variables the type's actions set.
func (t builtinType) ResultFields() []ResultField { return t.results }

// connectionActions is what needHTTP tells a connection policy it may use
// instead: the built-in actions that are not HTTP-only, in the registry's
// order, as "log, deny, restrict-ips and set-vars".
func connectionActions(types []builtinType) string {
	var names []string
	for _, t := range types {
		if !t.httpOnly {
			names = append(names, t.name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// needHTTP refuses an HTTP-only action in a connection policy, naming the
// built-in actions a connection policy allows.
func needHTTP(c *CompileContext, vs *apierr.Violations, action string) bool {
	if c.Target() == TargetConnection {
		vs.Add("type", "%s is only available in HTTP policies; a TLS/TCP connection policy allows %s", action, c.c.e.connActions)
		return false
	}
	return true
}

// maxHeaderEntries bounds the entries of add-headers and remove-headers,
// of custom-response headers and of log metadata.
const maxHeaderEntries = 64

// resultSlots looks up an action's result slots by field.
func resultSlots(c *CompileContext, slots map[string]*ResultSlot) error {
	for f, p := range slots {
		s, err := c.Result(f)
		if err != nil {
			return err
		}
		*p = s
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func statusCode(vs *apierr.Violations, p *int, def, min, max int) int {
	if p == nil {
		return def
	}
	if *p < min || *p > max {
		vs.Add("config.status_code", "must be between %d and %d, got %d", min, max, *p)
	}
	return *p
}

// headerField is the JSON path of a header-keyed config entry.
func headerField(base, name string) string { return base + "[" + strconv.Quote(name) + "]" }

func checkHeaderName(vs *apierr.Violations, field, name string) {
	switch {
	case !validHeaderName(name):
		vs.Add(field, "invalid header name %s: use letters, digits and !#$%%&'*+-.^_`|~", quoteTrunc(name))
	case framingHeaders[strings.ToLower(name)]:
		vs.Add(field, "header %s may not be changed by a policy", strings.ToLower(name))
	}
}

// literalHeaderValue refuses CR, LF and NUL in the literal text of a value.
func checkHeaderValue(vs *apierr.Violations, field, v string) {
	if strings.ContainsAny(v, "\r\n\x00") {
		vs.Add(field, "a header value may not contain CR, LF or NUL")
	}
}

// compileHeaderMap compiles a config object of header names to templated
// values (custom-response and add-headers headers), lowercasing the names.
func compileHeaderMap(c *CompileContext, vs *apierr.Violations, base string, m map[string]string) ([]string, []*Template) {
	if len(m) > maxHeaderEntries {
		vs.Add(base, "has %d headers; at most %d are allowed", len(m), maxHeaderEntries)
	}
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return strings.ToLower(keys[i]) < strings.ToLower(keys[j]) })
	var names []string
	var vals []*Template
	for i, name := range keys {
		f := headerField(base, name)
		checkHeaderName(vs, f, name)
		checkHeaderValue(vs, f, m[name])
		if i > 0 && strings.EqualFold(keys[i-1], name) {
			vs.Add(f, "header %s is given twice (names are case-insensitive)", strings.ToLower(name))
		}
		names = append(names, strings.ToLower(name))
		vals = append(vals, c.c.template(vs, f, m[name], -1))
	}
	return names, vals
}

func asAPIErr(err error, target **apierr.Error) bool { return errors.As(err, target) }
