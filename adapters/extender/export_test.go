package extender

// HoldLock takes the scheduler's mutex until the returned function is
// called: a test proves with it that a request is answered without waiting
// for the mutex.
func HoldLock(s *Scheduler) (release func()) {
	s.mu.Lock()
	return s.mu.Unlock
}

// DecodeWaiters is the number of requests waiting for a turn to decode.
func DecodeWaiters(s *Scheduler) int64 { return s.decodeWaiters.Load() }

// CountValues is countValues, for its table test.
var CountValues = countValues
