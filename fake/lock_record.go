package fake

import (
	"strings"

	"github.com/plancore/plancore/lock"
)

// ObservedRecord decodes the lock value of obs the way lock.Decide reads it:
// the main value (Observation.Raw), and, when that is in HAMi's 3-part format
// and the sidecar (Observation.Sidecar, lock.SidecarAnnotation) is an extended
// record whose first three fields are exactly the main value, the sidecar's
// UID and epoch. A sidecar that does not match (a HAMi scheduler replaced the
// main value) is ignored, so the record names no UID and no epoch. The format
// is the main value's.
func ObservedRecord(obs lock.Observation) (lock.Record, lock.Format, error) {
	rec, format, err := lock.Decode(obs.Raw)
	if err != nil || format != lock.FormatHAMi || !strings.HasPrefix(obs.Sidecar, obs.Raw+lock.Separator) {
		return rec, format, err
	}
	if sc, scFormat, scErr := lock.Decode(obs.Sidecar); scErr == nil && scFormat == lock.FormatExtended {
		rec.UID, rec.Epoch = sc.UID, sc.Epoch
	}
	return rec, format, nil
}
