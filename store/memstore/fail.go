package memstore

// Failure injection: tests of a caller's storage_error path make the store fail
// where a disk or bbolt could. An injected failure is returned wrapped
// ("memstore.Update: <err>", so errors.Is finds err) before fn is called, like a
// transaction that could not begin; nothing is read or written.

// FailNext makes the next transaction (View, Update or Batch) fail with err.
// Calls queue up: FailNext(a); FailNext(b) fails the next two transactions, with
// a then b. Failures queued by FailNext take precedence over FailWith.
func (s *Store) FailNext(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = append(s.failNext, err)
}

// FailWith installs f, which is called at the start of every later transaction
// with the operation ("View", "Update" or "Batch"); a non-nil result fails that
// transaction. FailWith(nil) removes it. f is called with the store's lock
// held: calls never overlap, and f must not call the store.
//
// To fail writes but not reads:
//
//	s.FailWith(func(op string) error {
//		if op == "View" {
//			return nil
//		}
//		return errDisk
//	})
func (s *Store) FailWith(f func(op string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failWith = f
}

// injected returns the failure to inject into the transaction op, if any. The
// caller holds s.mu.
func (s *Store) injected(op string) error {
	if len(s.failNext) > 0 {
		err := s.failNext[0]
		s.failNext = s.failNext[1:]
		return err
	}
	if s.failWith != nil {
		return s.failWith(op)
	}
	return nil
}
