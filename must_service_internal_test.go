package edgeplane

// mustService returns the Service New made, and panics with New's error
// when there is one: the tests' options are valid, so an error is a bug
// of the test.
func mustService(s *Service, err error) *Service {
	if err != nil {
		panic(err)
	}
	return s
}
