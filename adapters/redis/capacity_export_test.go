package redis

// NodeSlot exposes nodeSlot to the external tests, which check it against
// the server's CLUSTER KEYSLOT.
var NodeSlot = nodeSlot
