package console

import "slices"

// Patterns returns the routes h registered, for the tests that reach
// every page and form.
func Patterns(h *Handler) []string { return slices.Clone(h.patterns) }
