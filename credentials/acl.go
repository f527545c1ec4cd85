package credentials

import (
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
)

// Limits on an ACL.
const (
	// MaxACLRules is the largest number of rules an ACL may hold.
	MaxACLRules = 100
	// MaxRuleBytes is the longest a single rule may be, in bytes.
	MaxRuleBytes = 512
)

// Limits on the names that rules and matchers accept.
const (
	maxDomainBytes = 253
	maxLabelBytes  = 63
	bindPrefix     = "bind:"
)

// BindKind is the kind of a [BindRule]. The zero value is not a valid kind.
type BindKind int

// The kinds of bind rule.
const (
	// BindAll permits everything: the rule "*" or "bind:*".
	BindAll BindKind = iota + 1
	// BindDomain permits a domain, or with Wildcard every subdomain of it.
	BindDomain
	// BindAddr permits a host:port address.
	BindAddr
	// BindLabel permits a label key=value; either side may be "*".
	BindLabel
)

// String returns the kind's lowercase name: "all", "domain", "addr" or
// "label".
func (k BindKind) String() string {
	switch k {
	case BindAll:
		return "all"
	case BindDomain:
		return "domain"
	case BindAddr:
		return "addr"
	case BindLabel:
		return "label"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// BindRule is one parsed ACL rule, in normal form: domains and hosts are
// lowercase without a trailing dot. Which fields are set depends on Kind.
type BindRule struct {
	// Kind says what the rule permits.
	Kind BindKind
	// Domain is the domain of a BindDomain rule; for a wildcard rule it is
	// the suffix after "*." ("example.com" for "bind:*.example.com").
	Domain string
	// Wildcard marks a BindDomain rule "bind:*.<Domain>".
	Wildcard bool
	// Host and Port are the address of a BindAddr rule.
	Host string
	Port uint16
	// Key and Value are the label of a BindLabel rule; either may be "*",
	// meaning any.
	Key   string
	Value string
}

// String returns the rule in its normal written form, which parses back to
// the same rule: "*", "bind:example.com", "bind:*.example.com",
// "bind:host:port" or "bind:key=value".
func (r BindRule) String() string {
	switch r.Kind {
	case BindAll:
		return "*"
	case BindDomain:
		if r.Wildcard {
			return bindPrefix + "*." + r.Domain
		}
		return bindPrefix + r.Domain
	case BindAddr:
		return bindPrefix + r.Host + ":" + strconv.Itoa(int(r.Port))
	case BindLabel:
		return bindPrefix + r.Key + "=" + r.Value
	}
	return "invalid rule"
}

// label is a key=value pair, a map key for exact label rules.
type label struct{ key, value string }

// ACL is a parsed list of bind rules that answers whether an authtoken may
// bind a domain, an address or a set of labels. Build one with [ParseACL].
// An ACL is immutable and safe for concurrent use. A nil *ACL has no rules
// and so allows everything.
type ACL struct {
	rules       []BindRule
	all         bool
	domains     map[string]struct{} // exact domain rules
	wildcards   map[string]struct{} // suffixes of *.suffix rules
	addrs       map[string]struct{} // "host:port"
	labels      map[label]struct{}  // key=value
	labelKeys   map[string]struct{} // key=*
	labelValues map[string]struct{} // *=value
	anyLabel    bool                // *=*
}

// ParseACL parses rules into an ACL. An empty or nil list gives an ACL that
// allows everything. It reports every bad rule at once as an
// InvalidArgument [*apierr.Error] with one violation per rule, named acl[i]
// (or acl for a list longer than [MaxACLRules]).
func ParseACL(rules []string) (*ACL, error) {
	a, vs := parseACL(rules)
	if err := vs.Err(); err != nil {
		return nil, err
	}
	return a, nil
}

// parseACL parses rules, returning the ACL (meaningful only without
// violations) and every violation.
func parseACL(rules []string) (*ACL, apierr.Violations) {
	a := &ACL{rules: make([]BindRule, 0, len(rules))}
	vs := eachRule(rules, a.add)
	return a, vs
}

// checkACL reports every violation of rules, as parseACL does, without
// building the ACL's lookup tables: what Validate needs.
func checkACL(rules []string) apierr.Violations {
	return eachRule(rules, func(BindRule) {})
}

// eachRule parses rules, calls keep with each good rule that does not
// repeat an earlier one, in order, and returns every violation. A short
// list is checked for repeats pairwise, a long one through a map.
func eachRule(rules []string, keep func(BindRule)) apierr.Violations {
	var vs apierr.Violations
	if len(rules) > MaxACLRules {
		vs.Add("acl", "must have at most %d rules, got %d", MaxACLRules, len(rules))
		return vs
	}
	const pairwise = 8
	var (
		short [pairwise]BindRule // the good rules so far, when len(rules) <= pairwise
		at    [pairwise]int      // and their indexes
		n     int
		seen  map[BindRule]int
	)
	if len(rules) > pairwise {
		seen = make(map[BindRule]int, len(rules))
	}
	for i, s := range rules {
		r, reason := parseRule(s)
		if reason != "" {
			vs.Add(aclField(i), "%s", reason)
			continue
		}
		j, dup := -1, false
		if seen != nil {
			j, dup = seen[r]
			if !dup {
				seen[r] = i
			}
		} else {
			for k := range n {
				if short[k] == r {
					j, dup = at[k], true
					break
				}
			}
			if !dup {
				short[n], at[n] = r, i
				n++
			}
		}
		if dup {
			vs.Add(aclField(i), "duplicates acl[%d]; each rule may appear once", j)
			continue
		}
		keep(r)
	}
	return vs
}

// aclField names rule i of the acl field in a violation.
func aclField(i int) string { return "acl[" + strconv.Itoa(i) + "]" }

// add records r in a's lookup tables.
func (a *ACL) add(r BindRule) {
	a.rules = append(a.rules, r)
	switch r.Kind {
	case BindAll:
		a.all = true
	case BindDomain:
		if r.Wildcard {
			a.wildcards = addKey(a.wildcards, r.Domain)
		} else {
			a.domains = addKey(a.domains, r.Domain)
		}
	case BindAddr:
		a.addrs = addKey(a.addrs, r.Host+":"+strconv.Itoa(int(r.Port)))
	case BindLabel:
		switch {
		case r.Key == "*" && r.Value == "*":
			a.anyLabel = true
		case r.Key == "*":
			a.labelValues = addKey(a.labelValues, r.Value)
		case r.Value == "*":
			a.labelKeys = addKey(a.labelKeys, r.Key)
		default:
			a.labels = addKey(a.labels, label{r.Key, r.Value})
		}
	}
}

func addKey[K comparable](m map[K]struct{}, k K) map[K]struct{} {
	if m == nil {
		m = make(map[K]struct{})
	}
	m[k] = struct{}{}
	return m
}

// parseRule parses one rule. On failure it returns the reason, lowercase,
// saying what is wrong and what is allowed.
func parseRule(s string) (BindRule, string) {
	if len(s) > MaxRuleBytes {
		return BindRule{}, "must be at most " + strconv.Itoa(MaxRuleBytes) + " bytes, got " + strconv.Itoa(len(s))
	}
	if s == "*" {
		return BindRule{Kind: BindAll}, ""
	}
	target, ok := strings.CutPrefix(s, bindPrefix)
	if !ok {
		return BindRule{}, `must be "*" or a bind rule of the form bind:<domain>, bind:<host>:<port> or bind:<key>=<value>`
	}
	switch {
	case target == "":
		return BindRule{}, "bind target must not be empty; use bind:<domain>, bind:<host>:<port> or bind:<key>=<value>"
	case target == "*":
		return BindRule{Kind: BindAll}, ""
	case strings.Contains(target, "="):
		return parseLabelRule(target)
	case strings.Contains(target, ":"):
		return parseAddrRule(target)
	}
	return parseDomainRule(target)
}

func parseLabelRule(target string) (BindRule, string) {
	key, value, _ := strings.Cut(target, "=")
	if p := labelPartProblem("key", key); p != "" {
		return BindRule{}, p
	}
	if strings.Contains(value, "=") {
		return BindRule{}, `label value must not contain "="; a label rule is bind:<key>=<value>`
	}
	if p := labelPartProblem("value", value); p != "" {
		return BindRule{}, p
	}
	return BindRule{Kind: BindLabel, Key: key, Value: value}, ""
}

// labelPartProblem checks a label key or value of a rule, where "*" means
// any.
func labelPartProblem(what, s string) string {
	if s == "" {
		return "label " + what + " must not be empty; use * to match any " + what
	}
	if s != "*" && !validLabelPart(s) {
		return "label " + what + ` may contain only letters, digits and . _ - / : or be exactly *`
	}
	return ""
}

// validLabelPart reports whether s is a non-empty label key or value
// (not a wildcard).
func validLabelPart(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLabelByte(s[i]) {
			return false
		}
	}
	return true
}

func isLabelByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '/' || c == ':'
}

func parseAddrRule(target string) (BindRule, string) {
	i := strings.LastIndexByte(target, ':')
	host, portStr := target[:i], target[i+1:]
	if strings.Contains(host, "*") {
		return BindRule{}, "address host must be an exact domain name; wildcards are allowed only in domain rules"
	}
	host = strings.TrimSuffix(host, ".")
	if p := domainProblem(host); p != "" {
		return BindRule{}, "address host " + p
	}
	port, ok := parsePort(portStr)
	if !ok {
		return BindRule{}, "address port must be a number from 1 to 65535; an address rule is bind:<host>:<port>"
	}
	return BindRule{Kind: BindAddr, Host: strings.ToLower(host), Port: port}, ""
}

// parsePort parses a decimal port from 1 to 65535 without sign or leading
// zeros.
func parsePort(s string) (uint16, bool) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n > 65535 {
		return 0, false
	}
	return uint16(n), true
}

func parseDomainRule(target string) (BindRule, string) {
	rest, wildcard := strings.CutPrefix(target, "*.")
	if strings.Contains(rest, "*") {
		return BindRule{}, "wildcard * is allowed only as the whole first label of a domain, as in bind:*.example.com"
	}
	rest = strings.TrimSuffix(rest, ".")
	if p := domainProblem(rest); p != "" {
		return BindRule{}, p
	}
	return BindRule{Kind: BindDomain, Domain: strings.ToLower(rest), Wildcard: wildcard}, ""
}

// domainProblem checks d, a domain without wildcard or trailing dot, in any
// case. It returns "" when d is valid, else the reason. It never allocates.
func domainProblem(d string) string {
	if d == "" {
		return "domain must not be empty"
	}
	if len(d) > maxDomainBytes {
		return "domain must be at most 253 bytes"
	}
	labels, start := 0, 0
	for i := 0; i <= len(d); i++ {
		if i < len(d) && d[i] != '.' {
			c := d[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return "domain may contain only letters, digits, hyphens and dots"
			}
			continue
		}
		l := d[start:i]
		switch {
		case l == "":
			return "domain must not have an empty label (leading, doubled or extra trailing dot)"
		case len(l) > maxLabelBytes:
			return "domain labels must be at most 63 bytes"
		case l[0] == '-' || l[len(l)-1] == '-':
			return "domain labels must not start or end with a hyphen"
		}
		labels++
		start = i + 1
	}
	if labels < 2 {
		return "domain must have at least two labels, such as example.com"
	}
	if allDigits(d[strings.LastIndexByte(d, '.')+1:]) {
		return "domain must not end in an all-numeric label; IP addresses are not allowed"
	}
	return ""
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Rules returns a copy of the parsed rules in the order they were given.
func (a *ACL) Rules() []BindRule {
	if a == nil {
		return []BindRule{}
	}
	return append([]BindRule{}, a.rules...)
}

// Strings returns the rules in normal written form ([BindRule.String]), in
// the order they were given; never nil.
func (a *ACL) Strings() []string {
	if a == nil {
		return []string{}
	}
	out := make([]string, len(a.rules))
	for i, r := range a.rules {
		out[i] = r.String()
	}
	return out
}

// AllowsAll reports whether a permits everything: it has no rules, or one
// of them is "*" (or "bind:*").
func (a *ACL) AllowsAll() bool {
	return a == nil || len(a.rules) == 0 || a.all
}

// AllowsDomain reports whether a permits binding domain, which may be a
// wildcard domain such as "*.example.com". Domains compare
// case-insensitively and one trailing dot is ignored. A malformed domain is
// never allowed. It does not allocate.
func (a *ACL) AllowsDomain(domain string) bool {
	domain = strings.TrimSuffix(domain, ".")
	if domainProblem(strings.TrimPrefix(domain, "*.")) != "" {
		return false
	}
	if a.AllowsAll() {
		return true
	}
	var buf [len("*.") + maxDomainBytes]byte
	d := lower(buf[:], domain)
	if _, ok := a.domains[string(d)]; ok {
		return true
	}
	if len(a.wildcards) == 0 {
		return false
	}
	// A wildcard rule *.s matches every name that ends in ".s".
	for i := range d {
		if d[i] == '.' {
			if _, ok := a.wildcards[string(d[i+1:])]; ok {
				return true
			}
		}
	}
	return false
}

// AllowsAddr reports whether a permits binding the address hostport,
// "host:port", where host is a domain name (compared case-insensitively, one
// trailing dot ignored) and port is from 1 to 65535. Only address rules
// permit addresses. A malformed address is never allowed. It does not
// allocate.
func (a *ACL) AllowsAddr(hostport string) bool {
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 {
		return false
	}
	host := strings.TrimSuffix(hostport[:i], ".")
	port := hostport[i+1:]
	if domainProblem(host) != "" {
		return false
	}
	if _, ok := parsePort(port); !ok {
		return false
	}
	if a.AllowsAll() {
		return true
	}
	if len(a.addrs) == 0 {
		return false
	}
	var buf [maxDomainBytes + 1 + 5]byte
	n := len(lower(buf[:], host))
	buf[n] = ':'
	n++
	n += copy(buf[n:], port)
	_, ok := a.addrs[string(buf[:n])]
	return ok
}

// AllowsLabels reports whether a permits binding a tunnel with labels: every
// label must be permitted by some label rule (see the package
// documentation). Keys and values compare case-sensitively. An empty set is
// allowed. A label with an empty or ill-formed key or value is never
// allowed. It does not allocate.
func (a *ACL) AllowsLabels(labels map[string]string) bool {
	for k, v := range labels {
		if !validLabelPart(k) || !validLabelPart(v) {
			return false
		}
	}
	if a.AllowsAll() || a.anyLabel {
		return true
	}
	for k, v := range labels {
		if _, ok := a.labelKeys[k]; ok {
			continue
		}
		if _, ok := a.labelValues[v]; ok {
			continue
		}
		if _, ok := a.labels[label{k, v}]; ok {
			continue
		}
		return false
	}
	return true
}

// lower writes s in lowercase ASCII into buf, which must be long enough, and
// returns the written part.
func lower(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return buf[:len(s)]
}
