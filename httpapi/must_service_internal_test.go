package httpapi

import "github.com/edgeplane/edgeplane"

// mustService returns the Service New made, and panics with New's error
// when there is one: the tests' options are valid, so an error is a bug
// of the test.
func mustService(s *edgeplane.Service, err error) *edgeplane.Service {
	if err != nil {
		panic(err)
	}
	return s
}
