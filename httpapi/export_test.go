package httpapi

import "strings"

// FilteredLists returns, for every route of h's table that takes the
// filter query parameter, its pattern (without the method) and the field
// of its answer that holds the items.
func FilteredLists(h *Handler) map[string]string {
	out := map[string]string{}
	for _, rt := range h.table() {
		if !rt.filter {
			continue
		}
		field := rt.list
		if field == "" && strings.HasSuffix(rt.pattern, "/sources") {
			field = "sources"
		}
		out[rt.pattern] = field
	}
	return out
}

// OpenAPIProblems returns what the OpenAPI document of h could not say (a
// rule it cannot express, a missing doc comment).
func OpenAPIProblems(h *Handler) []string { return h.docProblems }
