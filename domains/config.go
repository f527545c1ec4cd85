package domains

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"slices"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
)

// Defaults of [Config].
const (
	// DefaultOwnedDomain is the service-owned base domain when
	// [Config.OwnedDomains] is nil.
	DefaultOwnedDomain = "edgeplane.app"
	// DefaultCNAMEBase is the domain under which CNAME targets are made
	// when [Config.CNAMEBase] is empty.
	DefaultCNAMEBase = "edgeplane-cname.com"
)

// ACMELabel is the label between a domain's CNAME target label and the
// CNAME base in its ACME challenge CNAME target:
// "<label>.acme.<CNAME base>".
const ACMELabel = "acme"

// Config is the service's domain configuration. The zero value means the
// documented defaults.
type Config struct {
	// OwnedDomains are the base domains the service owns, such as
	// "edgeplane.app". A reserved subdomain of one ("demo.edgeplane.app")
	// needs no CNAME record: its cname_target is null. The bases
	// themselves, and wildcards directly on them ("*.edgeplane.app"),
	// cannot be reserved. Nil means [DefaultOwnedDomain]; an empty non-nil
	// slice means the service owns none.
	OwnedDomains []string
	// CNAMEBase is the domain under which the service publishes CNAME
	// targets for other domains ("<label>.<CNAMEBase>") and ACME challenge
	// targets ("<label>.acme.<CNAMEBase>"). Names at or below it cannot be
	// reserved. Empty means [DefaultCNAMEBase].
	CNAMEBase string
}

// WithDefaults returns c with defaults filled in and every name in
// canonical form (lower case, no trailing dot). Names that do not parse
// are kept as given, lower-cased; [Config.Validate] reports them.
func (c Config) WithDefaults() Config {
	out := Config{CNAMEBase: canonical(c.CNAMEBase)}
	if out.CNAMEBase == "" {
		out.CNAMEBase = DefaultCNAMEBase
	}
	if c.OwnedDomains == nil {
		out.OwnedDomains = []string{DefaultOwnedDomain}
	} else {
		out.OwnedDomains = make([]string, len(c.OwnedDomains))
		for i, d := range c.OwnedDomains {
			out.OwnedDomains[i] = canonical(d)
		}
	}
	return out
}

func canonical(s string) string {
	if n, err := ParseName(s); err == nil {
		return n
	}
	return strings.ToLower(s)
}

// Validate reports whether c (after [Config.WithDefaults]) names valid,
// non-wildcard domains. It returns nil or an InvalidArgument
// [*apierr.Error] whose violations name the fields (owned_domains[1],
// cname_base).
func (c Config) Validate() error {
	c = c.WithDefaults()
	var vs apierr.Violations
	for i, d := range c.OwnedDomains {
		checkBase(&vs, fmt.Sprintf("owned_domains[%d]", i), d)
	}
	checkBase(&vs, "cname_base", c.CNAMEBase)
	return vs.Err()
}

func checkBase(vs *apierr.Violations, field, name string) {
	if _, err := ParseName(name); err != nil {
		vs.Add(field, "%s", err)
	} else if IsWildcard(name) {
		vs.Add(field, "must not be a wildcard")
	}
}

// Owned reports whether the canonical name is a subdomain of one of the
// service-owned base domains (see [IsSubdomain]).
func (c Config) Owned(name string) bool {
	return slices.ContainsFunc(c.OwnedDomains, func(base string) bool { return IsSubdomain(name, base) })
}

// checkReservable adds a violation of field when the canonical name may not
// be reserved under c: a service-owned base, a wildcard directly on one, or
// a name at or below the CNAME base.
func (c Config) checkReservable(vs *apierr.Violations, field, name string) {
	for _, base := range c.OwnedDomains {
		if IsAtOrBelow(name, base) && !IsSubdomain(name, base) {
			vs.Add(field, "%s is owned by the service; reserve a subdomain such as name.%s", base, base)
			return
		}
	}
	if IsAtOrBelow(name, c.CNAMEBase) {
		vs.Add(field, "names at or below %s are reserved for the service's CNAME targets", c.CNAMEBase)
	}
}

// CNAMETarget returns a new CNAME target for the canonical name: nil for a
// subdomain of a service-owned base, else "<label>.<CNAMEBase>" with a
// fresh label of 26 lowercase base32 characters (128 random bits from
// crypto/rand).
func (c Config) CNAMETarget(name string) *string {
	if c.Owned(name) {
		return nil
	}
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics on an unusable source)
	label := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	t := label + "." + c.CNAMEBase
	return &t
}

// ACMEChallengeTarget returns the ACME challenge CNAME target that belongs
// with a CNAME target: "<label>.acme.<rest>" for "<label>.<rest>". It is
// derived, not random, so it is as stable as the CNAME target.
func ACMEChallengeTarget(cnameTarget string) string {
	label, rest, _ := strings.Cut(cnameTarget, ".")
	return label + "." + ACMELabel + "." + rest
}
