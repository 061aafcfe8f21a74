package redis

import (
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
)

// ErrIgnoresDeadlines is wrapped by a constructor's error when its go-redis
// client would ignore its callers' deadlines (ContextTimeoutEnabled false).
var ErrIgnoresDeadlines = errors.New("redis: the client ignores context deadlines; set ContextTimeoutEnabled in its options")

// CheckDeadlines returns an error wrapping ErrIgnoresDeadlines when c is a
// *goredis.Client, *goredis.ClusterClient or *goredis.Ring whose options do
// not set ContextTimeoutEnabled. Without it go-redis runs a command under
// its own ReadTimeout and WriteTimeout (3 s by default), not the caller's
// context: while Redis stalls, a reserve with a 100 ms deadline waits
// seconds, and a scheduler that bounded its dispatch by that deadline
// overruns it. With it, the command returns when the context is done and the
// store answers with an error wrapping its ErrStoreUnavailable (closed).
// Any other client type (a wrapper, a proxy's client) cannot be inspected
// and is accepted as it is.
func CheckDeadlines(c any) error {
	var on bool
	switch c := c.(type) {
	case *goredis.Client:
		on = c.Options().ContextTimeoutEnabled
	case *goredis.ClusterClient:
		on = c.Options().ContextTimeoutEnabled
	case *goredis.Ring:
		on = c.Options().ContextTimeoutEnabled
	default:
		return nil
	}
	if !on {
		return fmt.Errorf("%w (client %T)", ErrIgnoresDeadlines, c)
	}
	return nil
}
