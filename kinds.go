package edgeplane

import "github.com/edgeplane/edgeplane/store"

// The kinds of record the Service stores.
const (
	KindAccount       store.Kind = "account"
	KindUser          store.Kind = "user"
	KindBot           store.Kind = "bot"
	KindAPIKey        store.Kind = "api_key"
	KindCredential    store.Kind = "credential"
	KindIPPolicy      store.Kind = "ip_policy"
	KindIPPolicyRule  store.Kind = "ip_policy_rule"
	KindIPRestriction store.Kind = "ip_restriction"
)
