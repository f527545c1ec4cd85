package httpapi

// OpenAPIProblems returns what the OpenAPI document of h could not say (a
// rule it cannot express, a missing doc comment).
func OpenAPIProblems(h *Handler) []string { return h.docProblems }
