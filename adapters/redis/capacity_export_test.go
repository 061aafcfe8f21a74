package redis

import "github.com/plancore/plancore/capacity"

// NodeSlot exposes nodeSlot to the external tests, which check it against
// the server's CLUSTER KEYSLOT.
var NodeSlot = nodeSlot

// BatchForm is the form ("each", "same" or "full") in which ReserveBatch
// sends items to the script, so that the tests know they cover all three.
func BatchForm(s *CapacityStore, items []capacity.Reservation) string {
	_, args := s.batchCall(items, capacity.Partial)
	return args[5].(string)
}
