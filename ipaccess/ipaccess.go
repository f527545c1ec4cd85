package ipaccess

import (
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/validate"
	"github.com/edgeplane/edgeplane/resource"
)

// Identifier prefixes.
const (
	// PolicyPrefix starts every IP policy identifier.
	PolicyPrefix = "ipp_"
	// RulePrefix starts every IP policy rule identifier.
	RulePrefix = "ipr_"
	// RestrictionPrefix starts every IP restriction identifier.
	RestrictionPrefix = "ipx_"
)

// Rule actions.
const (
	// ActionAllow allows the addresses of a rule's CIDR.
	ActionAllow = "allow"
	// ActionDeny denies the addresses of a rule's CIDR; deny wins over allow.
	ActionDeny = "deny"
)

// Restriction types: what traffic a restriction applies to.
const (
	TypeDashboard = "dashboard"
	TypeAPI       = "api"
	TypeAgent     = "agent"
	TypeEndpoints = "endpoints"
)

// MaxIPPolicies is the largest number of IP policies one restriction may
// reference.
const MaxIPPolicies = 100

// MaxRulesPerPolicy is the largest number of rules one IP policy may hold.
// Creating a rule in a full policy is refused, and a policy found with more
// rules (a store written by other code) makes every check that uses it
// fail with an error rather than evaluate part of it: a set is evaluated
// over all its rules or not at all. With [MaxIPPolicies] policies per
// restriction, one set holds at most 100,000 rules.
const MaxRulesPerPolicy = 1000

// Policy is an IP policy: a named group of [Rule]s.
type Policy struct {
	// ID is the policy's identifier, PolicyPrefix followed by an opaque string.
	ID string `json:"id"`
	// URI locates the policy; filled by the Service.
	URI string `json:"uri"`
	// CreatedAt is when the policy was created.
	CreatedAt time.Time `json:"created_at"`
	// Description says what the policy is for.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
}

// CreatePolicyParams are the parameters of creating an IP policy. Every
// field is optional.
type CreatePolicyParams struct {
	// Description is at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p CreatePolicyParams) Validate() error { return validate.Struct(p) }

// Policy returns the policy p describes, without the fields the Service
// assigns (ID, URI, CreatedAt).
func (p CreatePolicyParams) Policy() Policy {
	return Policy{Description: p.Description, Metadata: p.Metadata}
}

// UpdatePolicyParams are the parameters of updating an IP policy; nil
// fields are left unchanged.
type UpdatePolicyParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdatePolicyParams) Validate() error { return validate.Struct(p) }

// Apply sets the fields of pol that p carries.
func (p UpdatePolicyParams) Apply(pol *Policy) {
	setString(&pol.Description, p.Description)
	setString(&pol.Metadata, p.Metadata)
}

// Rule is an IP policy rule: one CIDR that an IP policy allows or denies.
type Rule struct {
	// ID is the rule's identifier, RulePrefix followed by an opaque string.
	ID string `json:"id"`
	// URI locates the rule; filled by the Service.
	URI string `json:"uri"`
	// CreatedAt is when the rule was created.
	CreatedAt time.Time `json:"created_at"`
	// Description says what the rule is for.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
	// CIDR is the rule's prefix, normalised (see [NormalizeCIDR]).
	CIDR string `json:"cidr"`
	// IPPolicy is the policy the rule belongs to; its URI is filled by the
	// Service.
	IPPolicy resource.Ref `json:"ip_policy"`
	// Action is [ActionAllow] or [ActionDeny].
	Action string `json:"action" openapi:"oneof=allow deny"`
}

// CreateRuleParams are the parameters of creating an IP policy rule.
type CreateRuleParams struct {
	// Description is optional, at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is optional, at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
	// CIDR is required: an IPv4 or IPv6 prefix or address.
	CIDR string `json:"cidr" openapi:"required"`
	// IPPolicyID is required: the policy the rule belongs to.
	IPPolicyID string `json:"ip_policy_id" openapi:"required,id=ipp_"`
	// Action is required: [ActionAllow] or [ActionDeny].
	Action string `json:"action" openapi:"required,oneof=allow deny"`
}

// Validate reports every broken rule of p: byte limits, a required valid
// CIDR, a required IP policy identifier and a required action. It returns
// nil or an InvalidArgument [*apierr.Error].
func (p CreateRuleParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	checkCIDR(&vs, "cidr", p.CIDR)
	switch {
	case p.IPPolicyID == "":
		vs.Add("ip_policy_id", "is required")
	case !ids.Valid(p.IPPolicyID, PolicyPrefix):
		vs.Add("ip_policy_id", "%s", policyIDReason)
	}
	if p.Action == "" {
		vs.Add("action", "is required")
	} else {
		checkAction(&vs, p.Action)
	}
	return vs.Err()
}

// Rule returns the rule p describes, its CIDR normalised and its IPPolicy a
// Ref with the ID only, without the fields the Service assigns (ID, URI,
// CreatedAt). Call it after [CreateRuleParams.Validate].
func (p CreateRuleParams) Rule() Rule {
	return Rule{
		Description: p.Description,
		Metadata:    p.Metadata,
		CIDR:        normalizedOrRaw(p.CIDR),
		IPPolicy:    resource.Ref{ID: p.IPPolicyID},
		Action:      p.Action,
	}
}

// UpdateRuleParams are the parameters of updating an IP policy rule; nil
// fields are left unchanged. A rule cannot move to another policy.
type UpdateRuleParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
	// CIDR replaces the prefix.
	CIDR *string `json:"cidr"`
	// Action replaces the action: [ActionAllow] or [ActionDeny].
	Action *string `json:"action" openapi:"oneof=allow deny"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateRuleParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.CIDR != nil {
		checkCIDR(&vs, "cidr", *p.CIDR)
	}
	if p.Action != nil {
		checkAction(&vs, *p.Action)
	}
	return vs.Err()
}

// Apply sets the fields of r that p carries, storing the CIDR normalised.
// Call it after [UpdateRuleParams.Validate]; a CIDR that does not
// normalise is stored as given.
func (p UpdateRuleParams) Apply(r *Rule) {
	setString(&r.Description, p.Description)
	setString(&r.Metadata, p.Metadata)
	setString(&r.Action, p.Action)
	if p.CIDR != nil {
		r.CIDR = normalizedOrRaw(*p.CIDR)
	}
}

// Restriction is an IP restriction: IP policies applied to one type of
// traffic.
type Restriction struct {
	// ID is the restriction's identifier, RestrictionPrefix followed by an
	// opaque string.
	ID string `json:"id"`
	// URI locates the restriction; filled by the Service.
	URI string `json:"uri"`
	// CreatedAt is when the restriction was created.
	CreatedAt time.Time `json:"created_at"`
	// Description says what the restriction is for.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
	// Enforced is true when the restriction blocks traffic; false when it
	// only issues warnings.
	Enforced bool `json:"enforced"`
	// Type is the traffic restricted. It cannot be changed by an update.
	// [TypeAPI]: every authenticated request to the management API, by
	// the client's address (403 when refused). [TypeAgent]: the address
	// an agent connects from, when its session opens and again, on every
	// tunnel server, whenever the account's restrictions or IP policies
	// change (a refused session is closed). [TypeEndpoints]: every HTTP
	// request and TLS or TCP connection to the account's edges and
	// endpoints. [TypeDashboard]: every page of the web console
	// (/console/), a refused address getting a page that says so.
	Type string `json:"type" openapi:"oneof=dashboard api agent endpoints"`
	// IPPolicies are the policies enforced, in the order given; their URIs
	// are filled by the Service.
	IPPolicies []resource.Ref `json:"ip_policies"`
}

// Clone returns a deep copy of r; IPPolicies of the copy is never nil.
func (r Restriction) Clone() Restriction {
	r.IPPolicies = append([]resource.Ref{}, r.IPPolicies...)
	return r
}

// CreateRestrictionParams are the parameters of creating an IP restriction.
type CreateRestrictionParams struct {
	// Description is optional, at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is optional, at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
	// Enforced is true to block traffic, false to only warn.
	Enforced bool `json:"enforced"`
	// Type is required: dashboard, api, agent or endpoints.
	Type string `json:"type" validate:"required,oneof=dashboard api agent endpoints"`
	// IPPolicyIDs is required: 1 to [MaxIPPolicies] distinct IP policy
	// identifiers.
	IPPolicyIDs []string `json:"ip_policy_ids" openapi:"required,min=1,max=100,unique,dive,id=ipp_"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p CreateRestrictionParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	checkPolicyIDs(&vs, p.IPPolicyIDs)
	return vs.Err()
}

// Restriction returns the restriction p describes, its IPPolicies Refs
// with the ID only, without the fields the Service assigns (ID, URI,
// CreatedAt).
func (p CreateRestrictionParams) Restriction() Restriction {
	return Restriction{
		Description: p.Description,
		Metadata:    p.Metadata,
		Enforced:    p.Enforced,
		Type:        p.Type,
		IPPolicies:  policyRefs(p.IPPolicyIDs),
	}
}

// UpdateRestrictionParams are the parameters of updating an IP restriction;
// nil fields are left unchanged.
type UpdateRestrictionParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
	// Enforced replaces the enforcement flag.
	Enforced *bool `json:"enforced"`
	// IPPolicyIDs replaces the whole list of policies, by the rules of
	// creation.
	IPPolicyIDs *[]string `json:"ip_policy_ids" openapi:"min=1,max=100,unique,dive,id=ipp_"`
	// Type is never allowed: a restriction's type cannot be changed. It
	// exists so that a request naming it is refused rather than silently
	// ignored.
	Type *string `json:"type" openapi:"absent"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateRestrictionParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.IPPolicyIDs != nil {
		checkPolicyIDs(&vs, *p.IPPolicyIDs)
	}
	if p.Type != nil {
		vs.Add("type", "cannot be changed by update")
	}
	return vs.Err()
}

// Apply sets the fields of r that p carries; IPPolicies becomes Refs with
// the ID only. Type is never applied.
func (p UpdateRestrictionParams) Apply(r *Restriction) {
	setString(&r.Description, p.Description)
	setString(&r.Metadata, p.Metadata)
	if p.Enforced != nil {
		r.Enforced = *p.Enforced
	}
	if p.IPPolicyIDs != nil {
		r.IPPolicies = policyRefs(*p.IPPolicyIDs)
	}
}

const policyIDReason = "must be an IP policy ID (ipp_ followed by 27 base62 characters)"

// checkPolicyIDs adds the violations of a restriction's ip_policy_ids.
func checkPolicyIDs(vs *apierr.Violations, idList []string) {
	switch {
	case len(idList) == 0:
		vs.Add("ip_policy_ids", "must list at least one IP policy ID")
		return
	case len(idList) > MaxIPPolicies:
		vs.Add("ip_policy_ids", "must list at most %d IP policy IDs, got %d", MaxIPPolicies, len(idList))
		return
	}
	for i, id := range idList {
		field := "ip_policy_ids[" + strconv.Itoa(i) + "]"
		if !ids.Valid(id, PolicyPrefix) {
			vs.Add(field, "%s", policyIDReason)
			continue
		}
		if j := slices.Index(idList[:i], id); j >= 0 {
			vs.Add(field, "duplicates ip_policy_ids[%d]; each policy may be listed once", j)
		}
	}
}

// checkCIDR adds a violation of field when s is not a valid CIDR.
func checkCIDR(vs *apierr.Violations, field, s string) {
	if _, reason := normalizeCIDR(s); reason != "" {
		vs.Add(field, "%s", reason)
	}
}

// checkAction adds a violation of action when s is not a rule action.
func checkAction(vs *apierr.Violations, s string) {
	if s != ActionAllow && s != ActionDeny {
		vs.Add("action", "must be one of: allow, deny")
	}
}

func normalizedOrRaw(s string) string {
	if n, reason := normalizeCIDR(s); reason == "" {
		return n
	}
	return s
}

func policyRefs(idList []string) []resource.Ref {
	refs := make([]resource.Ref, len(idList))
	for i, id := range idList {
		refs[i] = resource.Ref{ID: id}
	}
	return refs
}

func setString(dst *string, src *string) {
	if src != nil {
		*dst = *src
	}
}

// AddrString returns a's text form, "" for the zero Addr (an address
// that is not known, which a log line or a message leaves out).
func AddrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
