package limits

// Limits applied when a policy document is parsed and compiled. They bound the work
// and memory a hostile document can make a proxy spend; a document that
// breaks one is refused with a violation naming the offending location.
const (
	// MaxDocumentBytes is the largest document policy.Parse accepts, in bytes.
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
	// (section Limits), which follow from MaxURLBytes and
	// MaxRequestHeaderBytes. CEL's model is pessimistic for string
	// functions (a contains() between two 8 KiB strings is estimated at
	// about 670,000), so the limit mostly refuses nested comprehensions over
	// large inputs and regexes built from request data.
	MaxExpressionCost = 1_000_000

	// MaxDocumentCost is the largest sum of the worst-case costs estimated
	// for a document: every expression, every ${...} template expression
	// and every from regex of every rule of both phases. It equals
	// MaxEvaluationCost, so that no evaluation of an accepted document on a
	// request within the assumed sizes reaches the evaluation budget.
	MaxDocumentCost = MaxEvaluationCost

	// MaxDocumentNodes is the largest total number of AST nodes (after
	// macro expansion) of all the expressions and ${...} template
	// expressions of a document, each expression counting
	// ExpressionOverheadNodes more than it has: so it also bounds the
	// number of expressions (to 500), whose fixed cost dominates compiling
	// small ones.
	MaxDocumentNodes = 5_000

	// ExpressionOverheadNodes is what each expression adds to a
	// document's node count besides its own nodes (see MaxDocumentNodes).
	ExpressionOverheadNodes = 10

	// MaxDocumentRegexProgramSize is the largest total compiled size (RE2
	// instructions) of the distinct regular expressions of a document:
	// matches() patterns, from fields and those host actions compile with
	// policy.CompileContext.Regexp. A pattern used several times is compiled once
	// and counted once.
	MaxDocumentRegexProgramSize = 10_000

	// MaxEvaluationCost is the cost budget of one evaluation: of all the
	// expressions, ${...} templates and from regexes one call of Inbound,
	// Outbound or Connect evaluates, on both the native and the cel-go
	// path, in CEL's cost units (a regular expression costs one unit per
	// ten input characters per RE2 instruction). An evaluation that would
	// exceed it stops before doing the work: the expression or template is
	// a runtime error (policy.ErrCostLimit) and evaluation ends fail closed (see
	// the package doc, section Runtime errors).
	MaxEvaluationCost = 1_000_000

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

	// MaxListRange is the largest list lists.range() makes (cel-go's
	// Lists extension); a larger one is a runtime error.
	MaxListRange = 1000

	// MaxVars is the largest number of distinct variables (vars.<name>)
	// the set-vars actions of a document may set.
	MaxVars = 64

	// MaxVarBytes is the longest value of a variable set by set-vars, in
	// bytes; a longer rendering is truncated (at a UTF-8 boundary) and
	// reported to the Sink. The cost model assumes it.
	MaxVarBytes = 8 << 10

	// MaxVarNameLength is the longest variable name, in bytes (names are
	// ASCII identifiers).
	MaxVarNameLength = 64
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

// Sizes of the OIDC identity (policy.OIDCIdentity, the oidc.* variables) that
// the compile-time cost estimate assumes. They are those of the edge
// proxy's OIDC module: package proxy/oidcauth refuses or drops a claim
// longer than its MaxClaimBytes, and package edges refuses an issuer
// longer than its MaxURLBytes (package proxy's tests check that the
// values agree). A host passing longer strings gets them evaluated at
// their cost, which MaxEvaluationCost bounds.
const (
	// MaxOIDCClaimBytes bounds OIDCIdentity.Subject, Email, Name and
	// PreferredUsername, in bytes (oidcauth.MaxClaimBytes).
	MaxOIDCClaimBytes = 255
	// MaxOIDCIssuerBytes bounds OIDCIdentity.Issuer, in bytes
	// (edges.MaxURLBytes).
	MaxOIDCIssuerBytes = 2048
)
