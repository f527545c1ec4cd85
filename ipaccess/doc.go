// Package ipaccess holds edgeplane's IP access control: IP policies
// ([Policy]), the CIDR rules that belong to them ([Rule]), the IP
// restrictions that attach policies to a kind of traffic ([Restriction]),
// their create and update parameters with validation, and [Set], which
// decides whether an address is allowed by a group of rules.
//
// The package is a leaf: it holds models and pure logic. Storage,
// identifiers, URIs, timestamps and checks that referenced policies exist
// belong to the edgeplane Service. URI fields, including those of Refs, are
// stored empty and filled by the Service when it returns a resource.
//
// # Validation
//
// Every Validate method reports all broken rules at once as an
// InvalidArgument [apierr.Error] whose violations name fields by JSON path
// (description, cidr, ip_policy_ids[1]). Descriptions are limited to 255
// bytes and metadata to 4096 bytes; the limits count bytes, not characters.
// In update parameters a nil field is absent and leaves the value
// unchanged; a JSON null is the same as absent.
//
// # CIDRs
//
// A rule holds exactly one CIDR, normalised by [NormalizeCIDR]: an IPv4 or
// IPv6 prefix masked to its network ("10.1.2.3/8" becomes "10.0.0.0/8"), a
// bare address taken as a host prefix (/32 or /128), and an IPv4-mapped
// IPv6 prefix of length 96 or more rewritten as IPv4 ("::ffff:10.0.0.0/104"
// becomes "10.0.0.0/8"). Zones are refused. The whole-space prefixes
// 0.0.0.0/0 and ::/0 are allowed. This package limits neither the number of
// rules of a policy nor the number of rules in a Set.
//
// # Decisions
//
// A [Set] is built once from rules and answers [Set.Allowed] with a binary
// search over precomputed address ranges, without allocating. Deny rules
// win over allow rules. An address that no rule matches is denied when the
// set holds any allow rule (of either address family) and allowed
// otherwise: a set of deny rules is a block list, a set with allow rules an
// allow list. IPv4-mapped IPv6 addresses are matched as IPv4; an IPv6 rule
// never matches an IPv4 address, so ::/0 covers IPv6 only and allowing
// every address takes both 0.0.0.0/0 and ::/0.
//
// An IP restriction of type endpoints applies to the traffic of every
// edge of its account (package proxy checks it on each HTTP request and
// each TLS or TCP connection, before the edge's own modules), through an
// [Enforcer]: each restriction is checked on its own (its policies'
// rules combined as a Set); an enforced restriction that refuses the
// address refuses the traffic (HTTP 403, or the connection closed), and
// one that is not enforced ("only warnings are issued") lets it through
// and the proxy logs a warning naming the restriction.
//
// The other types are applied by the edgeplane Service for its own
// surfaces, from the same policies and the same evaluation: api to every
// authenticated request of the management API (by the client's address:
// the connection's peer, or the client a trusted proxy's X-Forwarded-For
// names), agent to the address an agent connects from, when its session
// opens and whenever the account's restrictions or IP policies change
// (held sessions now refused are closed, on every tunnel server), and
// dashboard to every page of the web console (package console), a refused
// address getting a page that says so and nothing else. A restriction that is
// not enforced lets the traffic through and warns: the warnings of every
// type are counted by a [Tally], which lets one log line through per
// restriction and address per [WarnInterval]. Reading the restrictions
// fails closed: a check that cannot read them refuses the traffic.
//
// An account has at most
// [MaxRestrictionsPerAccount] restrictions (a decision: the spec states no
// bound, and every endpoints restriction costs a check per connection;
// 100 restrictions of 100,000 rules each check in about 0.6 µs).
package ipaccess
