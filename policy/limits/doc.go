// Package limits holds the size and cost bounds of edgeplane's traffic
// policy engine (package policy) that other packages read too: the HTTP
// servers of package httpserver and the edge proxy refuse requests beyond
// the request bounds, and package filter compiles list filters under the
// same expression limits. It is a leaf of constants: it imports nothing,
// so that reading a bound does not pull in the policy engine or cel-go.
//
// # Documents and expressions
//
// [MaxDocumentBytes], [MaxRulesPerPhase], [MaxExpressionsPerRule],
// [MaxActionsPerRule] and the document budget ([MaxDocumentNodes],
// [ExpressionOverheadNodes], [MaxDocumentRegexProgramSize],
// [MaxDocumentCost]) bound what compiling a policy document may cost;
// [MaxExpressionLength], [MaxExpressionNodes], [MaxRecursionDepth],
// [MaxComprehensionNesting], [MaxRegexProgramSize] and [MaxExpressionCost]
// bound one CEL expression. A document or expression over one of them is
// refused when it is compiled.
//
// # Evaluation
//
// [MaxEvaluationCost] is the cost budget of one evaluation, in CEL's cost
// units; [MaxTemplateOutput], [MaxTemplateExpressions],
// [MaxBucketKeyBytes], [MaxListRange], [MaxVars], [MaxVarBytes] and
// [MaxVarNameLength] bound what an evaluation produces.
//
// # Request sizes
//
// [MaxURLBytes] and [MaxRequestHeaderBytes] are the request bounds servers
// built by this library enforce and the compile-time cost estimate
// assumes; [MaxOIDCClaimBytes] and [MaxOIDCIssuerBytes] are the sizes of
// the OIDC identity it assumes. Package policy's doc (section Limits) says
// how they enter the cost model.
package limits
