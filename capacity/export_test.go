package capacity

// SumReleaseOnAck exposes the known-bad accounting "sum, but release on ACK"
// to the external tests that must catch it overselling.
const SumReleaseOnAck = sumReleaseOnAck
