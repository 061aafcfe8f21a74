package lock_test

import (
	"testing"
	"time"

	"github.com/plancore/plancore/lock"
)

// TestObservationRecord reads lock values with and without their sidecar:
// the sidecar lends its UID and epoch only to the exact grant it describes.
func TestObservationRecord(t *testing.T) {
	t0 := time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)
	rec := lock.Record{Time: t0, Namespace: "ns", Name: "p", UID: "u1", Epoch: 7}
	main, side := lock.EncodeNode(rec)
	hami := lock.Record{Time: t0, Namespace: "ns", Name: "p"}
	later, _ := lock.EncodeNode(lock.Record{Time: t0.Add(time.Second), Namespace: "ns", Name: "p"})
	for _, tc := range []struct {
		name      string
		raw, side string
		want      lock.Record
		format    lock.Format
		bad       bool
	}{
		{"HAMi value with its sidecar", main, side, rec, lock.FormatHAMi, false},
		{"HAMi value alone", main, "", hami, lock.FormatHAMi, false},
		// A HAMi scheduler stole the lock: same pod, new time; the sidecar
		// describes the previous grant and must not lend it its epoch.
		{"HAMi value with another grant's sidecar", later, side, lock.Record{Time: t0.Add(time.Second), Namespace: "ns", Name: "p"}, lock.FormatHAMi, false},
		{"HAMi value with a malformed sidecar", main, main + ",u1,zero", hami, lock.FormatHAMi, false},
		{"extended value", side, side, rec, lock.FormatExtended, false},
		{"malformed value", "garbage", side, lock.Record{}, lock.FormatMalformed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, f, err := lock.Observation{Present: true, Raw: tc.raw, Sidecar: tc.side}.Record()
			if (err != nil) != tc.bad || f != tc.format {
				t.Fatalf("format %v, error %v; want %v, error %v", f, err, tc.format, tc.bad)
			}
			if !got.Equal(tc.want) {
				t.Fatalf("record %+v, want %+v", got, tc.want)
			}
		})
	}
}
