package kube

// QueuedReads reports how many Get calls on node's locks wait for the shared
// read queued behind the one in flight, for tests of the coalescing.
func QueuedReads(s *NodeLockStore, node string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.reads[node]; g != nil && g.next != nil {
		return g.next.waiters
	}
	return 0
}
