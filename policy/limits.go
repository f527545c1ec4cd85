package policy

// Limits applied when a document is parsed and compiled. They bound the work
// and memory a hostile document can make a proxy spend; a document that
// breaks one is refused with a violation naming the offending location.
const (
	// MaxDocumentBytes is the largest document Parse accepts, in bytes.
	MaxDocumentBytes = 1 << 20

	// MaxRulesPerPhase is the largest number of rules in one phase.
	MaxRulesPerPhase = 100

	// MaxExpressionsPerRule is the largest number of expressions in a rule.
	MaxExpressionsPerRule = 32

	// MaxActionsPerRule is the largest number of actions in a rule.
	MaxActionsPerRule = 32

	// MaxExpressionLength is the longest CEL expression (including one
	// inside a ${...} template), in Unicode code points.
	MaxExpressionLength = 4096

	// MaxExpressionNodes is the largest number of AST nodes an expression
	// may have after macro expansion.
	MaxExpressionNodes = 2000

	// MaxRecursionDepth bounds the nesting of an expression as the CEL
	// parser sees it (parentheses, calls, selections, operators).
	MaxRecursionDepth = 50

	// MaxComprehensionNesting bounds how deeply the macros all, exists,
	// exists_one, map and filter may nest.
	MaxComprehensionNesting = 2

	// MaxRegexProgramSize bounds the compiled size (RE2 instructions) of
	// every regular expression: matches() patterns and the from field of
	// redirect and url-rewrite.
	MaxRegexProgramSize = 1000

	// MaxExpressionCost is the largest worst-case cost, as estimated by
	// CEL's cost model at compile time, that one expression may have. The
	// estimate assumes the input sizes documented in the package doc
	// (section Limits). Expressions estimated above 10,000, whose cost grows
	// faster than their input (nested comprehensions, functions of two
	// request strings), are also tracked at run time and stopped once their
	// actual cost exceeds MaxRuntimeCost; such a stop is a runtime error. CEL's model is
	// pessimistic for string functions (a contains() between two 8 KiB
	// strings is estimated at about 670,000), so the limit mostly refuses
	// nested comprehensions over large inputs and dynamic regexes.
	MaxExpressionCost = 1_000_000

	// MaxRuntimeCost is the runtime cost at which evaluation of a tracked
	// expression (see MaxExpressionCost) is cancelled, a runtime error, for
	// inputs larger than the compile-time estimate assumed.
	MaxRuntimeCost = 10_000_000

	// MaxTemplateOutput is the largest string, in bytes, a templated config
	// value renders to. A literal config string longer than this is refused
	// at compile time; a rendering that would exceed it is truncated (at a
	// UTF-8 boundary) and reported to the Sink as a runtime error.
	MaxTemplateOutput = 64 << 10

	// MaxTemplateExpressions is the largest number of ${...} expressions in
	// one config string.
	MaxTemplateExpressions = 32

	// MaxBucketKeyBytes is the longest rate-limit bucket key, in bytes. A
	// longer key is truncated and the truncation reported through
	// actions.service.rate_limit.error.code.
	MaxBucketKeyBytes = 4096
)

// Request size bounds. Servers built with this library (the examples, the
// edge proxy) refuse requests beyond them before any policy runs, and the
// compile-time cost estimate assumes them, so that what a server accepts
// and what the cost model assumes agree. Embedders that run their own
// servers should set the same bounds (http.Server.MaxHeaderBytes =
// MaxRequestHeaderBytes; 414 for a request target over MaxURLBytes).
const (
	// MaxURLBytes is the longest request target (path and query), in
	// bytes, a server built by this library accepts; a longer one is
	// answered 414 URI Too Long.
	MaxURLBytes = 8 << 10

	// MaxRequestHeaderBytes is the value servers built by this library
	// give http.Server.MaxHeaderBytes: it bounds the request line and all
	// header lines together (net/http allows 4096 bytes of slack on top),
	// so it also bounds any one header value.
	MaxRequestHeaderBytes = 32 << 10
)

// Input sizes the compile-time cost estimate assumes. They are not enforced
// on requests; MaxRuntimeCost catches inputs that exceed them.
const (
	estStringMax   = 8 << 10 // any request string
	estMapEntries  = 128     // headers, query parameters
	estListEntries = 16      // values of one header or parameter
)
