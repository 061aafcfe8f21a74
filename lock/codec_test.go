package lock

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

var t10 = time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)

func TestDecode(t *testing.T) {
	cst := time.Date(2026, 6, 14, 15, 5, 3, 0, time.FixedZone("", 8*3600))
	cases := []struct {
		raw     string
		want    Record
		format  Format
		wantErr string // substring; "" means no error
	}{
		{raw: "2026-06-14T10:00:00Z", want: Record{Time: t10}, format: FormatLegacy},
		{raw: "2026-06-14T15:05:03+08:00", want: Record{Time: cst.UTC()}, format: FormatLegacy},
		{raw: "lock", format: FormatMalformed, wantErr: `invalid timestamp in "lock"`},
		{raw: "", format: FormatMalformed, wantErr: "invalid timestamp"},
		{raw: "2026-06-14T15:05:03+08:00,default,gang-pod-1", want: Record{Time: cst.UTC(), Namespace: "default", Name: "gang-pod-1"}, format: FormatHAMi},
		{raw: "2026-06-14T10:00:00Z,,", want: Record{Time: t10}, format: FormatHAMi},
		{raw: "2026-06-14T10:00:00.5Z,ns,n", want: Record{Time: t10.Add(500 * time.Millisecond), Namespace: "ns", Name: "n"}, format: FormatHAMi},
		// A bad timestamp in a 3-part value still reports the owner, for the
		// release suffix rule.
		{raw: "yesterday,team-a,abc", want: Record{Namespace: "team-a", Name: "abc"}, format: FormatMalformed, wantErr: "invalid timestamp"},
		{raw: "2026-06-14T10:00:00Z,default,p1,u1,7", want: Record{Time: t10, Namespace: "default", Name: "p1", UID: "u1", Epoch: 7}, format: FormatExtended},
		{raw: "2026-06-14T10:00:00.123456789Z,default,p1,u1,18446744073709551615", want: Record{Time: t10.Add(123456789), Namespace: "default", Name: "p1", UID: "u1", Epoch: 1<<64 - 1}, format: FormatExtended},
		{raw: "2026-06-14T10:00:00Z,default,p1,,7", format: FormatMalformed, wantErr: "without uid"},
		{raw: "2026-06-14T10:00:00Z,default,p1,u1,0", format: FormatMalformed, wantErr: "invalid epoch"},
		{raw: "2026-06-14T10:00:00Z,default,p1,u1,-1", format: FormatMalformed, wantErr: "invalid epoch"},
		{raw: "2026-06-14T10:00:00Z,default,p1,u1,+1", format: FormatMalformed, wantErr: "invalid epoch"},
		{raw: "2026-06-14T10:00:00Z,default,p1,u1,18446744073709551616", format: FormatMalformed, wantErr: "invalid epoch"},
		{raw: "2026-06-14T10:00:00Z,,p1,u1,1", format: FormatMalformed, wantErr: "without namespace or name"},
		{raw: "bad,default,p1,u1,1", format: FormatMalformed, wantErr: "invalid timestamp"},
		// HAMi v2.8+ (#1560): 2, 4 and 6+ parts are malformed, not legacy.
		{raw: "2026-06-14T10:00:00Z,default", format: FormatMalformed, wantErr: "expected 3 parts, got 2 from 2026-06-14T10:00:00Z,default"},
		{raw: "2026-06-14T10:00:00Z,a,b,c", format: FormatMalformed, wantErr: "expected 3 parts, got 4"},
		{raw: "2026-06-14T10:00:00Z,a,b,c,1,x", format: FormatMalformed, wantErr: "expected 3 parts, got 6"},
		{raw: ",,,,,,,", format: FormatMalformed, wantErr: "got 8"},
	}
	for _, tc := range cases {
		t.Run(tc.raw, func(t *testing.T) {
			got, format, err := Decode(tc.raw)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("Decode(%q) error: %v", tc.raw, err)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("Decode(%q) error = %v, want one containing %q and wrapping ErrInvalid", tc.raw, err, tc.wantErr)
				}
			}
			if format != tc.format {
				t.Errorf("format = %v, want %v", format, tc.format)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncode(t *testing.T) {
	r := Record{Time: time.Date(2026, 6, 14, 18, 0, 0, 700_000_000, time.FixedZone("", 8*3600)), Namespace: "default", Name: "p1", UID: "u1", Epoch: 7}
	for _, tc := range []struct {
		format Format
		want   string
	}{
		{FormatLegacy, "2026-06-14T10:00:00Z"},
		{FormatHAMi, "2026-06-14T10:00:00Z,default,p1"},
		{FormatExtended, "2026-06-14T10:00:00.7Z,default,p1,u1,7"},
	} {
		if got := Encode(r, tc.format); got != tc.want {
			t.Errorf("Encode(%v) = %q, want %q", tc.format, got, tc.want)
		}
	}
	main, side := EncodeNode(r)
	if main != "2026-06-14T10:00:00Z,default,p1" || side != "2026-06-14T10:00:00Z,default,p1,u1,7" {
		t.Errorf("EncodeNode = %q, %q", main, side)
	}
	if got := SidecarAnnotation(HAMiLockName); got != "plancore.io/hami.io.mutex.lock.ext" {
		t.Errorf("SidecarAnnotation = %q", got)
	}
}

// genName draws a Kubernetes-like name: no separator, possibly empty when
// allowEmpty.
func genName(allowEmpty bool) *rapid.Generator[string] {
	min := 1
	if allowEmpty {
		min = 0
	}
	return rapid.StringOfN(rapid.SampledFrom([]rune("abcxyz-019.")), min, 12, -1)
}

func genTime() *rapid.Generator[time.Time] {
	return rapid.Custom(func(t *rapid.T) time.Time {
		sec := rapid.Int64Range(0, 200*365*24*3600).Draw(t, "sec")
		nsec := rapid.Int64Range(0, 999_999_999).Draw(t, "nsec")
		return time.Unix(sec, nsec).UTC()
	})
}

// TestRoundTrip checks Decode(Encode(r)) == r for every valid record in each
// format (invariant 5).
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tm := genTime().Draw(t, "time")
		whole := tm.Truncate(time.Second)
		legacy := Record{Time: whole}
		hami := Record{Time: whole, Namespace: genName(true).Draw(t, "ns"), Name: genName(true).Draw(t, "name")}
		ext := Record{Time: tm, Namespace: genName(false).Draw(t, "ens"), Name: genName(false).Draw(t, "ename"),
			UID: genName(false).Draw(t, "uid"), Epoch: rapid.Uint64Min(1).Draw(t, "epoch")}
		for _, c := range []struct {
			r Record
			f Format
		}{{legacy, FormatLegacy}, {hami, FormatHAMi}, {ext, FormatExtended}} {
			raw := Encode(c.r, c.f)
			got, f, err := Decode(raw)
			if err != nil || f != c.f || !got.Equal(c.r) {
				t.Fatalf("Decode(Encode(%+v, %v) = %q) = %+v, %v, %v", c.r, c.f, raw, got, f, err)
			}
		}
		// The node pair's sidecar belongs to its main value.
		main, side := EncodeNode(ext)
		uid, epoch, ok := sidecarFor(main, side)
		if !ok || uid != ext.UID || epoch != ext.Epoch {
			t.Fatalf("sidecarFor(%q, %q) = %q, %d, %v", main, side, uid, epoch, ok)
		}
	})
}

// FuzzParse checks that Decode never panics, that every error wraps
// ErrInvalid, and that whatever decodes re-encodes to a value that decodes
// to the same record.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "lock", ",", ",,", ",,,,", "2026-06-14T10:00:00Z", "2026-06-14T15:05:03+08:00,default,gang-pod-1",
		"2026-06-14T10:00:00Z,,", "2026-06-14T10:00:00.5Z,default,p1,u1,7", "2026-06-14T10:00:00.5Z", "x,team-a,abc",
		"2026-06-14T10:00:00Z,a,b,c", "9999-12-31T23:59:59Z,a,b,c,18446744073709551615",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r, format, err := Decode(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || format != FormatMalformed {
				t.Fatalf("Decode(%q) = %v, %v: errors must wrap ErrInvalid with FormatMalformed", raw, format, err)
			}
			return
		}
		if format == FormatMalformed {
			t.Fatalf("Decode(%q) = FormatMalformed without an error", raw)
		}
		if r.Time.Year() < 0 || r.Time.Year() > 9999 {
			return // RFC3339 cannot render it; nothing to round-trip
		}
		want := r
		if format != FormatExtended {
			// The legacy and HAMi encodings keep whole seconds, like HAMi.
			want.Time = r.Time.Truncate(time.Second)
		}
		again, f2, err := Decode(Encode(r, format))
		if err != nil || f2 != format || !again.Equal(want) {
			t.Fatalf("Decode(%q) = %+v (%v), but its encoding %q decodes to %+v, %v, %v", raw, r, format, Encode(r, format), again, f2, err)
		}
	})
}

func TestNodeObservation(t *testing.T) {
	key := NodeKey("n1")
	side := SidecarAnnotation(HAMiLockName)
	cases := []struct {
		name string
		ann  map[string]string
		want Observation
	}{
		{"no annotations", nil, Observation{Key: key, Version: "42"}},
		{"held with sidecar", map[string]string{HAMiLockName: "2026-06-14T10:00:00Z,default,p1", side: "2026-06-14T10:00:00Z,default,p1,u1,7", "other": "x"},
			Observation{Key: key, Version: "42", Present: true, Raw: "2026-06-14T10:00:00Z,default,p1", Sidecar: "2026-06-14T10:00:00Z,default,p1,u1,7", EpochHigh: 7}},
		{"released: the sidecar keeps the epoch", map[string]string{side: "2026-06-14T10:00:00Z,default,p1,u1,7"},
			Observation{Key: key, Version: "42", Sidecar: "2026-06-14T10:00:00Z,default,p1,u1,7", EpochHigh: 7}},
		{"corrupt sidecar", map[string]string{HAMiLockName: "", side: "junk"},
			Observation{Key: key, Version: "42", Present: true, Sidecar: "junk"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, NodeObservation(key, tc.ann, "42")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// The sidecar's UID reaches the decision: a same-name pod with another
	// UID is not the owner.
	obs := NodeObservation(key, map[string]string{HAMiLockName: "2026-06-14T10:00:00Z,default,p1", side: "2026-06-14T10:00:00Z,default,p1,u0,7"}, "42")
	d, _ := decide(obs, Requester{Namespace: "default", Name: "p1", UID: "u1"}, t10, Options{}, Holder{State: HolderNotFound, Replaced: true})
	if d.Kind != StealDangling || d.Record.Epoch != 8 {
		t.Errorf("PlanAcquire on a node observation = %v", d)
	}
}
