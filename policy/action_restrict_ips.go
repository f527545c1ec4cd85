package policy

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
)

// ActionRestrictIPs is the restrict-ips action: it refuses client
// addresses by CIDR lists and IP policies.
const ActionRestrictIPs = "restrict-ips"

// Limits of the restrict-ips config.
const (
	maxCIDRs      = 1024 // allow and deny, each
	maxIPPolicies = 100
)

// Result fields of restrict-ips (extensions of the SPEC, issue 19).
const (
	resAction      = "action"       // "allow" or "deny", what it decided
	resMatchedCIDR = "matched_cidr" // the allow or deny entry that decided, or ""
)

// restrictIPsType is the restrict-ips action's registry entry.
var restrictIPsType = builtinType{name: ActionRestrictIPs, compile: compileRestrictIPs,
	results: []ResultField{{Name: resAction, Type: ResultString}, {Name: resMatchedCIDR, Type: ResultString}}}

type restrictIPsConfig struct {
	Allow      []string `json:"allow"`
	Deny       []string `json:"deny"`
	IPPolicies []string `json:"ip_policies"`
	Enforce    *bool    `json:"enforce"`
}

type restrictIPsAction struct {
	allow, deny []netip.Prefix
	checker     IPChecker
	enforce     bool
	action      ResultSlot
	matched     ResultSlot
}

func parsePrefixes(vs *apierr.Violations, field string, list []string) []netip.Prefix {
	if len(list) > maxCIDRs {
		vs.Add(field, "has %d entries; at most %d are allowed", len(list), maxCIDRs)
		return nil
	}
	out := make([]netip.Prefix, 0, len(list))
	for i, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil || a.Zone() != "" {
				vs.Add(field+"["+strconv.Itoa(i)+"]", "invalid CIDR %s: write address/bits (10.0.0.0/8) or a single address", quoteTrunc(s))
				continue
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out
}

func compileRestrictIPs(c *CompileContext, config []byte) (Action, error) {
	var cfg restrictIPsConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if c.Phase() != Inbound {
		vs.Add("type", "restrict-ips is only available in inbound rules")
	}
	if len(cfg.Allow)+len(cfg.Deny)+len(cfg.IPPolicies) == 0 {
		vs.Add("config", "needs at least one of allow, deny or ip_policies")
	}
	a := &restrictIPsAction{
		allow:   parsePrefixes(&vs, "config.allow", cfg.Allow),
		deny:    parsePrefixes(&vs, "config.deny", cfg.Deny),
		enforce: cfg.Enforce == nil || *cfg.Enforce,
	}
	if err := resultSlots(c, map[string]*ResultSlot{resAction: &a.action, resMatchedCIDR: &a.matched}); err != nil {
		return nil, err
	}
	if len(cfg.IPPolicies) > 0 {
		ok := true
		if len(cfg.IPPolicies) > maxIPPolicies {
			vs.Add("config.ip_policies", "has %d entries; at most %d are allowed", len(cfg.IPPolicies), maxIPPolicies)
			ok = false
		}
		for i, id := range cfg.IPPolicies {
			if strings.TrimSpace(id) == "" {
				vs.Add("config.ip_policies["+strconv.Itoa(i)+"]", "an IP policy ID may not be empty")
				ok = false
			}
		}
		res := c.c.o.IPPolicies
		switch {
		case res == nil:
			vs.Add("config.ip_policies", "IP policies cannot be resolved here: this policy does not belong to an edge whose service provides IP policies; use allow and deny CIDRs")
		case ok:
			chk, err := res(append([]string(nil), cfg.IPPolicies...))
			switch {
			case err != nil:
				msg := err.Error()
				var ae *apierr.Error
				if asAPIErr(err, &ae) {
					msg = ae.Msg
				}
				vs.Add("config.ip_policies", "%s", msg)
			case chk == nil:
				vs.Add("config.ip_policies", "the IP policies resolved to nothing")
			default:
				a.checker = chk
			}
		}
	}
	return a, vs.Err()
}

// indexAddr returns the index of the first prefix of ps containing a, or
// -1.
func indexAddr(ps []netip.Prefix, a netip.Addr) int {
	for i, p := range ps {
		if p.Contains(a) {
			return i
		}
	}
	return -1
}

// Run refuses the connection's client address (never a forwarded one)
// when it is unknown, in a deny prefix, outside the allow prefixes (when
// there are some) or refused by the IP policies (when there are some). It
// sets the action and matched_cidr result variables; with enforce off
// (shadow mode) it refuses nothing.
func (a *restrictIPsAction) Run(r *RunContext) {
	addr := r.ClientIP()
	di, ai := -1, -1
	refused := !addr.IsValid()
	if !refused {
		di = indexAddr(a.deny, addr)
		refused = di >= 0
	}
	if !refused && len(a.allow) > 0 {
		ai = indexAddr(a.allow, addr)
		refused = ai < 0
	}
	if !refused && a.checker != nil && !a.checker.AllowedIP(addr) {
		refused, ai = true, -1 // the IP policies decided
	}
	if refused {
		r.SetString(a.action, "deny")
	} else {
		r.SetString(a.action, "allow")
	}
	if r.st.pol.readsResult(a.matched.slot) { // formatting the prefix allocates
		switch {
		case di >= 0:
			r.SetString(a.matched, a.deny[di].String())
		case ai >= 0:
			r.SetString(a.matched, a.allow[ai].String())
		default:
			r.SetString(a.matched, "")
		}
	}
	if refused && a.enforce {
		r.Respond(http.StatusForbidden, nil, "")
	}
}
