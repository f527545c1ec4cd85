package tunnel

// Conns returns the connections s holds, authenticated or not.
func Conns(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Sessions returns the authenticated sessions s holds.
func Sessions(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}
