package pgstore

// Batches returns how many batches s committed on the fast path and on
// the careful one.
func (s *Store) Batches() (fast, careful int64) { return s.fast.Load(), s.careful.Load() }
