// Package filter compiles and evaluates the filter expressions of list
// requests (the filter query parameter of every list endpoint): CEL
// expressions over one variable, obj, the listed resource as the API shows
// it.
//
//	obj.description == "prod" && obj.created_at > timestamp("2024-01-01T00:00:00Z")
//	obj.ip_policy.id == "ipp_..." || obj.metadata.startsWith("team=")
//	"api" in obj.acl
//
// A [Compiler] turns an expression into a [Filter] for a resource type T
// with [Compile]; [Filter.Match] tells whether one resource matches. The
// package is a leaf: it knows nothing of storage or HTTP.
//
// # The obj variable
//
// obj has the type of the resource as the API shows it: its fields are
// named by their JSON names (obj.created_at, obj.ip_policy.id, never
// obj.CreatedAt; a field without a json tag is not seen, and an embedded
// struct's fields are seen as encoding/json promotes them), and an
// expression is type-checked at compile time, so a
// misspelled field (obj.descripton) or a comparison between different
// types (obj.created_at > 5) is refused before anything is listed. Field
// types map to CEL as follows: strings to string, booleans to bool,
// integers to int or uint, time fields (created_at, not_after, ...) to
// timestamp (compare them with timestamp("2024-01-01T00:00:00Z")),
// nested objects and references (obj.ip_policy, obj.backend.backend) to
// objects whose fields are selected the same way, lists to lists (use in,
// exists, all) and maps (labels) to maps. A field the API shows as null
// can be compared with null: obj.cname_target == null,
// obj.certificate != null && obj.certificate.id == "cert_...".
//
// The language is CEL's standard library: comparisons, &&, ||, !, in,
// startsWith, endsWith, contains, matches (RE2), size, the macros has,
// all, exists, exists_one, map and filter, and the conversions
// timestamp(), duration(), string(), int().
//
// # Evaluation
//
// An expression must yield a bool. A resource on which evaluation fails
// (a method called on a null field, a map key that is absent, the
// evaluation cost budget exhausted) does not match: write
// "k" in obj.labels && obj.labels["k"] == "v" to test a key that may be
// absent. A [Filter] is immutable and safe for concurrent use.
// [Filter.Reads] tells which fields of obj a filter selects, so that a
// caller may compute a costly field only when the filter needs it.
//
// # Limits
//
// A filter is at most [MaxBytes] (4096) bytes of UTF-8. It is compiled
// with the limits of the traffic policy engine (package policy/limits):
// [limits.MaxRecursionDepth] parser nesting, [limits.MaxExpressionNodes] AST
// nodes, [limits.MaxComprehensionNesting] nested comprehensions, and a
// worst-case cost, estimated at compile time, of at most
// [limits.MaxExpressionCost]. The estimate assumes every string field (and
// every object, for comparing two) is at most [EstimatedStringBytes]
// (64 KiB) long and every list or map holds at most [EstimatedEntries]
// (128) entries: so a filter such as
// obj.metadata.contains(obj.description) or two nested comprehensions over
// lists is refused as too costly. Each evaluation is bounded at run time
// by [limits.MaxEvaluationCost]; one that would exceed it stops and the
// resource does not match. A [Compiler] keeps up to [MaxCached] compiled
// filters, the least recently used evicted first.
//
// # Errors
//
// [Compile] returns an InvalidArgument [apierr.Error] whose violations all
// name the field "filter"; each reason of a problem in the expression
// starts with its location as line:column (1-based), as in
// "1:5: undefined field 'descripton'".
package filter
