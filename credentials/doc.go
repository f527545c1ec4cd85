// Package credentials holds edgeplane's tunnel credentials: the
// [Credential] model, its create and update parameters with their
// validation, the bind-rule [ACL] that restricts what a credential's
// authtoken may bind, and the authtoken itself ([NewToken], [HashToken],
// [TokenCredentialID]).
//
// The package is a leaf: it holds models and pure logic. Storage,
// identifiers, URIs, timestamps and ownership checks belong to the
// edgeplane Service.
//
// # Credentials
//
// A [Credential] is stored with an empty URI and a nil Token; the Service
// fills URI when it returns one and sets Token only in the response to
// creation. ACL is never nil in a response: no rules is the empty list.
// [Credential.AppendJSON] writes the JSON encoding/json makes of one,
// without reflection.
//
// [CreateParams.Validate] and [UpdateParams.Validate] report every broken
// rule at once as an InvalidArgument [apierr.Error] whose violations name
// fields by JSON path: description, metadata, acl[2], owner_id.
// Description is limited to 255 bytes and metadata to 4096 bytes; the limits
// count bytes, not characters. owner_id, when given on creation, must look
// like a user (usr_) or bot (bot_) identifier; it can never be changed by an
// update.
//
// # ACL rules
//
// An ACL is a list of rules. Each rule is either "*", which permits
// everything, or a bind rule "bind:<target>". The target's shape decides the
// rule's [BindKind]:
//
//	Rule                          Kind        Chosen because the target
//	"*" or "bind:*"               BindAll     is "*"
//	bind:key=value                BindLabel   contains "="
//	bind:*=value, bind:key=*      BindLabel   contains "=" (wildcard key or value)
//	bind:1.tcp.example.com:20002  BindAddr    contains ":" and no "="
//	bind:example.com              BindDomain  is anything else
//	bind:*.example.com            BindDomain  starts with "*." (Wildcard set)
//
// Parsing is strict. The prefix "bind:" is lowercase. Domains, including
// address hosts, are host names of at least two dot-separated labels of
// letters, digits and inner hyphens, each at most 63 bytes, at most 253
// bytes in all, whose last label is not all digits (so IP addresses are
// refused); one trailing dot is ignored. A wildcard is allowed only as the
// whole first label of a domain rule ("*.example.com"), never inside a
// label, deeper in the name or in an address host. A port is a decimal
// number from 1 to 65535 without a sign or leading zeros. Label keys and
// values are non-empty and made of letters, digits and the characters
// "." "_" "-" "/" ":", or are exactly "*".
//
// An ACL holds at most [MaxACLRules] rules of at most [MaxRuleBytes] bytes
// each. A list over the limit fails with a single violation of "acl"
// without its rules being examined. Rules that mean the same thing after
// normalisation (for example "bind:Example.com" and "bind:example.com.")
// are duplicates and are refused: the later one is reported. A "*" rule
// next to other rules is allowed; the other rules are still validated.
//
// # Matching
//
// An ACL with no rules, or with a "*" rule, allows everything
// ([ACL.AllowsAll]). Otherwise each kind of request is answered only by the
// rules of its own kind:
//
//   - [ACL.AllowsDomain]: an exact domain rule matches that domain; a
//     wildcard rule *.example.com matches every subdomain of example.com at
//     any depth (a.example.com, a.b.example.com) and the wildcard forms
//     themselves (*.example.com, *.a.example.com), but not example.com.
//     Domains compare case-insensitively and one trailing dot is ignored.
//   - [ACL.AllowsAddr]: an address rule matches the same host (compared as
//     a domain) and port. Domain rules do not permit addresses.
//   - [ACL.AllowsLabels]: every label of the set must be permitted by some
//     label rule; key=value matches that exact pair, key=* any value of key,
//     *=value that value under any key, and *=* any label. Keys and values
//     compare case-sensitively. An empty label set is allowed (there is
//     nothing to forbid).
//
// Malformed input (a domain or address that would not parse as a rule's
// target, a label with an empty or ill-formed key or value) is never
// allowed, even by an ACL that allows everything.
//
// # Tokens
//
// An authtoken is [TokenPrefix], the 27 characters of its credential's
// ID after [IDPrefix], '_', and the unpadded URL-safe base64 encoding
// (RFC 4648 section 5) of 32 bytes from crypto/rand: 256 bits of entropy
// in 75 characters. The Service stores only [HashToken] of it, in a
// lookup key that starts with the ID ([TokenCredentialID]): IDs are made
// in time order, so the keys of new credentials are appended to the
// store's index, not scattered over it. Tokens made before the ID was
// part of them ([LegacyTokenLen]: the prefix and the secret) still
// authenticate; their keys are the hash alone.
package credentials
