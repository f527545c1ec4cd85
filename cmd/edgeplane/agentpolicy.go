package main

import (
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/policy"
)

// A tunnel's traffic policy from the agent: -traffic-policy-file (YAML or
// JSON) and the shortcuts -basic-auth, -cidr-allow, -cidr-deny,
// -request-header-add and -response-header-add, turned into one traffic
// policy document that goes with the bind (the SDK's WithTrafficPolicy).
// The server compiles it, as it does an endpoint's policy from any agent,
// and its errors come back as the bind's refusal. Given with a file, the
// shortcuts' rules come first: the client's address is checked, then its
// password, before any rule of the file runs.

// agentPBKDF2Iterations is the iteration count of the PBKDF2-SHA256 hash
// -basic-auth sends in place of the password (the basic-auth action takes
// salted hashes only): a verification costs the edge about 30 ms of CPU
// on this project's 2-core test machine, once per client and five
// minutes (the action remembers what it verified).
const agentPBKDF2Iterations = 100_000

// maxHeaderShortcuts bounds -request-header-add and -response-header-add,
// each.
const maxHeaderShortcuts = 64

// policyShortcuts are the tunnel flags that make traffic policy rules.
type policyShortcuts struct {
	basicAuth       []string // USER:PASSWORD
	cidrAllow       []string
	cidrDeny        []string
	requestHeaders  []string // "Name: value"
	responseHeaders []string
}

// empty says whether no shortcut is given.
func (s *policyShortcuts) empty() bool {
	return len(s.basicAuth)+len(s.cidrAllow)+len(s.cidrDeny)+len(s.requestHeaders)+len(s.responseHeaders) == 0
}

// rules returns the rules the shortcuts make for a tunnel of proto:
// inbound, a restrict-ips rule (the CIDRs), then a basic-auth rule, then
// an add-headers rule (the request's headers); outbound, an add-headers
// rule (the response's). Passwords are hashed with salts from random. An
// error names the flag and never shows a password.
func (s *policyShortcuts) rules(random io.Reader) (inbound, outbound []policy.Rule, err error) {
	if len(s.cidrAllow)+len(s.cidrDeny) > 0 {
		cfg := struct {
			Allow []string `json:"allow,omitempty"`
			Deny  []string `json:"deny,omitempty"`
		}{}
		for _, l := range []struct {
			flag string
			in   []string
			out  *[]string
		}{{"-cidr-allow", s.cidrAllow, &cfg.Allow}, {"-cidr-deny", s.cidrDeny, &cfg.Deny}} {
			if len(l.in) > 1024 {
				return nil, nil, usageError{fmt.Sprintf("%s: given %d times; at most 1024", l.flag, len(l.in))}
			}
			for _, c := range l.in {
				p, err := parseCIDR(c)
				if err != nil {
					return nil, nil, usageError{fmt.Sprintf("%s %q: %v", l.flag, c, err)}
				}
				*l.out = append(*l.out, p)
			}
		}
		inbound = append(inbound, shortcutRule("agent -cidr-allow/-cidr-deny", policy.ActionRestrictIPs, cfg))
	}
	if len(s.basicAuth) > 0 {
		if len(s.basicAuth) > policy.MaxBasicAuthCredentials {
			return nil, nil, usageError{fmt.Sprintf("-basic-auth: given %d times; at most %d", len(s.basicAuth), policy.MaxBasicAuthCredentials)}
		}
		var creds []string
		seen := map[string]bool{}
		for i, ba := range s.basicAuth {
			user, password, ok := strings.Cut(ba, ":")
			switch {
			case !ok || user == "" || password == "":
				return nil, nil, usageError{fmt.Sprintf("-basic-auth (the %s): want USER:PASSWORD, both non-empty", ordinal(i+1))}
			case len(user) > 256 || strings.ContainsFunc(user, func(c rune) bool { return c < ' ' || c == 0x7f }):
				return nil, nil, usageError{fmt.Sprintf("-basic-auth (the %s): the user must be at most 256 bytes, without control characters", ordinal(i+1))}
			case seen[user]:
				return nil, nil, usageError{fmt.Sprintf("-basic-auth: the user %q is given twice", user)}
			}
			seen[user] = true
			hash, err := hashPassword(password, random)
			if err != nil {
				return nil, nil, err
			}
			creds = append(creds, user+":"+hash)
		}
		inbound = append(inbound, shortcutRule("agent -basic-auth", policy.ActionBasicAuth, map[string]any{"credentials": creds}))
	}
	for _, h := range []struct {
		flag    string
		in      []string
		phase   *[]policy.Rule
		summary string
	}{
		{"-request-header-add", s.requestHeaders, &inbound, "agent -request-header-add"},
		{"-response-header-add", s.responseHeaders, &outbound, "agent -response-header-add"},
	} {
		if len(h.in) == 0 {
			continue
		}
		if len(h.in) > maxHeaderShortcuts {
			return nil, nil, usageError{fmt.Sprintf("%s: given %d times; at most %d", h.flag, len(h.in), maxHeaderShortcuts)}
		}
		headers := map[string]string{}
		for _, nv := range h.in {
			name, value, err := parseHeaderShortcut(nv)
			if err != nil {
				return nil, nil, usageError{fmt.Sprintf("%s %q: %v", h.flag, nv, err)}
			}
			key := strings.ToLower(name)
			if _, dup := headers[key]; dup {
				return nil, nil, usageError{fmt.Sprintf("%s: the header %s is given twice", h.flag, name)}
			}
			headers[key] = value
		}
		*h.phase = append(*h.phase, shortcutRule(h.summary, policy.ActionAddHeaders, map[string]any{"headers": headers}))
	}
	return inbound, outbound, nil
}

// shortcutRule returns a rule of one action, named after its flags.
func shortcutRule(name, action string, config any) policy.Rule {
	raw, err := json.Marshal(config)
	if err != nil {
		panic(err) // maps and slices of strings
	}
	return policy.Rule{Name: name, Actions: []policy.RuleAction{{Type: action, Config: raw}}}
}

// ordinal says n as "1st", "2nd", ...: which of a repeated flag, since
// its value (a password) is not to be shown.
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix + " one"
}

// parseCIDR parses a -cidr-allow or -cidr-deny value: ADDRESS/BITS or a
// single address, returned as the CIDR the restrict-ips action reads.
func parseCIDR(s string) (string, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.String(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return "", errors.New("want ADDRESS/BITS (10.0.0.0/8, 2001:db8::/32) or an address")
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()).String(), nil
}

// parseHeaderShortcut parses "Name: value": a header name of token
// characters and a value without control characters (it may use the
// policy's ${...} interpolation).
func parseHeaderShortcut(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		return "", "", errors.New(`want "Name: value"`)
	}
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if name == "" || strings.ContainsFunc(name, func(c rune) bool { return !isTokenChar(c) }) {
		return "", "", errors.New("the name must be letters, digits and !#$%&'*+-.^_`|~ only")
	}
	if strings.ContainsFunc(value, func(c rune) bool { return c < ' ' && c != '\t' || c == 0x7f }) {
		return "", "", errors.New("the value must not hold control characters")
	}
	return name, value, nil
}

// isTokenChar says whether c may be in an HTTP header's name (RFC 9110
// tchar).
func isTokenChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}

// hashPassword returns the PBKDF2-SHA256 hash of password that the
// basic-auth action verifies, "$pbkdf2-sha256$ITERATIONS$SALT$KEY", with
// a 16-byte salt from random.
func hashPassword(password string, random io.Reader) (string, error) {
	salt := make([]byte, 16)
	if _, err := io.ReadFull(random, salt); err != nil {
		return "", fmt.Errorf("a salt for -basic-auth: %w", err)
	}
	key, err := pbkdf2.Key(sha256.New, password, salt, agentPBKDF2Iterations, 32)
	if err != nil {
		return "", fmt.Errorf("hashing -basic-auth's password: %w", err)
	}
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$pbkdf2-sha256$%d$%s$%s", agentPBKDF2Iterations, enc.EncodeToString(salt), enc.EncodeToString(key)), nil
}

// tunnelPolicy returns the traffic policy document of a tunnel of proto,
// in JSON: the shortcuts' rules first, then those of doc (JSON, from
// -traffic-policy-file; "" for none); "" when there is neither. The
// shortcuts' inbound rules go in the phase doc names inbound
// (on_http_request, or on_tcp_connect for tcp and tls, when doc has
// none), their outbound ones in on_http_response.
func tunnelPolicy(proto, doc string, s policyShortcuts, random io.Reader) (string, error) {
	inbound, outbound, err := s.rules(random)
	if err != nil {
		return "", err
	}
	if len(inbound)+len(outbound) == 0 {
		return doc, nil
	}
	d := &policy.Document{}
	if doc != "" {
		if d, err = policy.Parse([]byte(doc)); err != nil {
			return "", err
		}
	}
	if len(inbound) > 0 {
		if d.InboundKey == "" {
			d.InboundKey = policy.KeyOnHTTPRequest
			if proto != "http" {
				d.InboundKey = policy.KeyOnTCPConnect
			}
		}
		d.Inbound = append(inbound, d.Inbound...)
	}
	if len(outbound) > 0 {
		if d.OutboundKey == "" {
			d.OutboundKey = policy.KeyOnHTTPResponse
		}
		d.Outbound = append(outbound, d.Outbound...)
	}
	out, err := d.MarshalJSON()
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// readPolicyFile reads -traffic-policy-file: a traffic policy document in
// YAML or JSON, at most maxPolicyFileBytes, whose shape is checked (the
// server compiles it). It returns its JSON.
func readPolicyFile(file string) (string, error) {
	data, err := readBounded(file, maxPolicyFileBytes)
	if err != nil {
		return "", fmt.Errorf("-traffic-policy-file: %w", err)
	}
	doc, err := policyDocument(data)
	if err != nil {
		return "", fmt.Errorf("-traffic-policy-file %s: %w", file, err)
	}
	if _, err := policy.Parse([]byte(doc)); err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) && len(ae.Violations) > 0 {
			reasons := make([]string, len(ae.Violations))
			for i, v := range ae.Violations {
				reasons[i] = v.String()
			}
			return "", fmt.Errorf("-traffic-policy-file %s: %s", file, strings.Join(reasons, "; "))
		}
		return "", fmt.Errorf("-traffic-policy-file %s: %w", file, err)
	}
	return doc, nil
}
