package lock

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Lock names in use by HAMi and its vendors.
const (
	// HAMiLockName is the Node annotation every HAMi vendor locks on since v2.4.
	// HAMi's LockNode ignores its lockname argument, so in practice there is one
	// lock per node shared by every locking vendor.
	HAMiLockName = "hami.io/mutex.lock"
	// LegacyLockName is the key HAMi used up to v2.3.
	LegacyLockName = "4pd.io/mutex.lock"
	// CambriconLockName is the Cambricon vendor's separate lock, which HAMi
	// writes as a bare timestamp with a fixed 2 minute timeout.
	CambriconLockName = "cambricon.com/dsmlu.lock"
)

// Separator splits the fields of a lock value. Kubernetes names and namespaces
// cannot contain it, so splitting is unambiguous.
const Separator = ","

// Format names the wire format of a lock value.
type Format string

const (
	// FormatMalformed is a value Decode could not read.
	FormatMalformed Format = "Malformed"
	// FormatLegacy is a bare RFC3339 timestamp, written by HAMi up to v2.3 and
	// still written by HAMi for a nil pod. It names no owner.
	FormatLegacy Format = "Legacy"
	// FormatHAMi is HAMi's `<RFC3339>,<namespace>,<name>` (v2.4+, HAMi #451).
	FormatHAMi Format = "HAMi"
	// FormatExtended is plancore's `<RFC3339>,<namespace>,<name>,<uid>,<epoch>`.
	// HAMi reads it as malformed, so stores that share a key with HAMi keep the
	// HAMi format and carry the extended record elsewhere (a sidecar).
	FormatExtended Format = "Extended"
)

// String returns the format's name.
func (f Format) String() string { return string(f) }

// Record is one lock value, decoded. Time is the writer's clock when it took the
// lock; Namespace and Name identify the holder pod; UID and Epoch are plancore's
// additions (zero when the value came from HAMi).
type Record struct {
	// Time is when the writer took the lock, in UTC. plancore writes whole
	// seconds, as HAMi does, so every format round-trips.
	Time time.Time
	// Namespace and Name name the holder pod. Both empty for a legacy value;
	// HAMi also accepts "T,," (an unnamed owner that can only expire).
	Namespace, Name string
	// UID is the holder pod's UID, empty when unknown.
	UID string
	// Epoch is the fencing token of this grant: strictly greater than every
	// earlier grant's epoch for the same key. Zero when unknown.
	Epoch uint64
}

// Named reports whether the record names its owner (both namespace and name).
// An unnamed lock cannot be checked for a dangling holder; only expiry frees it.
func (r Record) Named() bool { return r.Namespace != "" && r.Name != "" }

// Equal reports whether r and o are the same grant: equal instants and fields.
func (r Record) Equal(o Record) bool {
	return r.Time.Equal(o.Time) && r.Namespace == o.Namespace && r.Name == o.Name &&
		r.UID == o.UID && r.Epoch == o.Epoch
}

// Encode renders r in format f. FormatLegacy and FormatHAMi drop the UID and
// epoch; every format writes UTC at whole-second precision (the extended format
// keeps any fraction r.Time has). FormatMalformed renders as FormatExtended.
//
// HAMi writes its timestamps in the writer's local zone; plancore writes UTC
// "Z" and reads any offset.
func Encode(r Record, f Format) string {
	var b strings.Builder
	b.Grow(64)
	switch f {
	case FormatLegacy:
		b.WriteString(r.Time.UTC().Truncate(time.Second).Format(time.RFC3339))
	case FormatHAMi:
		b.WriteString(r.Time.UTC().Truncate(time.Second).Format(time.RFC3339))
		b.WriteString(Separator)
		b.WriteString(r.Namespace)
		b.WriteString(Separator)
		b.WriteString(r.Name)
	default:
		b.WriteString(r.Time.UTC().Format(time.RFC3339Nano))
		b.WriteString(Separator)
		b.WriteString(r.Namespace)
		b.WriteString(Separator)
		b.WriteString(r.Name)
		b.WriteString(Separator)
		b.WriteString(r.UID)
		b.WriteString(Separator)
		b.WriteString(strconv.FormatUint(r.Epoch, 10))
	}
	return b.String()
}

// Decode reads a lock value in any format (see the package documentation for
// the table of rules). It never panics. On error the format is
// FormatMalformed and the error wraps ErrInvalid; for a 3-part value with a bad
// timestamp the namespace and name are still returned, because HAMi's release
// suffix rule still applies to it.
//
// Unlike HAMi before v2.8 (#1560), values with 2, 4, 6 or more parts are
// malformed, not legacy.
func Decode(raw string) (Record, Format, error) {
	var r Record
	n := strings.Count(raw, Separator) + 1
	first, rest, _ := strings.Cut(raw, Separator)
	switch n {
	case 1:
		t, err := time.Parse(time.RFC3339, raw)
		if err != nil {
			return Record{}, FormatMalformed, malformed(raw, "invalid timestamp")
		}
		r.Time = t.UTC()
		return r, FormatLegacy, nil
	case 3:
		r.Namespace, r.Name, _ = strings.Cut(rest, Separator)
		t, err := time.Parse(time.RFC3339, first)
		if err != nil {
			return r, FormatMalformed, malformed(raw, "invalid timestamp")
		}
		r.Time = t.UTC()
		return r, FormatHAMi, nil
	case 5:
		ns, rest, _ := strings.Cut(rest, Separator)
		name, rest, _ := strings.Cut(rest, Separator)
		uid, epoch, _ := strings.Cut(rest, Separator)
		t, err := time.Parse(time.RFC3339, first)
		if err != nil {
			return Record{}, FormatMalformed, malformed(raw, "invalid timestamp")
		}
		if ns == "" || name == "" {
			return Record{}, FormatMalformed, malformed(raw, "extended value without namespace or name")
		}
		if uid == "" {
			return Record{}, FormatMalformed, malformed(raw, "extended value without uid")
		}
		e, err := strconv.ParseUint(epoch, 10, 64)
		if err != nil || e == 0 {
			return Record{}, FormatMalformed, malformed(raw, "extended value with an invalid epoch")
		}
		return Record{Time: t.UTC(), Namespace: ns, Name: name, UID: uid, Epoch: e}, FormatExtended, nil
	default:
		return Record{}, FormatMalformed, fmt.Errorf("%w: expected 3 parts, got %d from %s", ErrInvalid, n, raw)
	}
}

func malformed(raw, why string) error {
	return fmt.Errorf("%w: %s in %q", ErrInvalid, why, raw)
}

// SidecarAnnotation returns the Node annotation that carries the extended record
// next to a HAMi-format lock named name: "plancore.io/" followed by the lock
// name with "/" replaced by "." and the suffix ".ext", for example
// plancore.io/hami.io.mutex.lock.ext.
func SidecarAnnotation(name string) string {
	return "plancore.io/" + strings.ReplaceAll(name, "/", ".") + ".ext"
}

// EncodeNode renders r for a store that shares its key with HAMi: the main
// value in HAMi's 3-part format, which HAMi device plugins read, and the sidecar
// value in the extended format. Because plancore writes whole seconds, the
// sidecar's first three fields equal the main value, which is how a reader
// knows the sidecar belongs to it.
func EncodeNode(r Record) (main, sidecar string) {
	r.Time = r.Time.UTC().Truncate(time.Second)
	return Encode(r, FormatHAMi), Encode(r, FormatExtended)
}

// Record decodes the lock value obs holds the way PlanAcquire reads it: the main
// value (Raw), and, when that is in HAMi's 3-part format and Sidecar is an
// extended record whose first three fields are exactly the main value, the
// sidecar's UID and epoch. A sidecar that does not match (a HAMi scheduler
// replaced the main value) is ignored, so the record names no UID and no
// epoch. The format returned is the main value's. Stores, fakes and fenced
// allocators use it to read back what a grant wrote.
func (obs Observation) Record() (Record, Format, error) {
	rec, format, err := Decode(obs.Raw)
	if err == nil && format == FormatHAMi {
		if uid, epoch, ok := sidecarFor(obs.Raw, obs.Sidecar); ok {
			rec.UID, rec.Epoch = uid, epoch
		}
	}
	return rec, format, err
}

// sidecarFor returns the UID and epoch of sidecar when it describes main: it
// decodes as extended and its first three fields are exactly main.
func sidecarFor(main, sidecar string) (uid string, epoch uint64, ok bool) {
	if sidecar == "" || len(sidecar) <= len(main) || sidecar[:len(main)] != main || sidecar[len(main)] != ',' {
		return "", 0, false
	}
	r, f, err := Decode(sidecar)
	if err != nil || f != FormatExtended {
		return "", 0, false
	}
	return r.UID, r.Epoch, true
}

// NodeObservation builds the Observation of lock key.Name from a Node's
// annotations and resourceVersion, for a Node-annotation store: the main
// value, the sidecar (SidecarAnnotation), and the epoch high-water mark the
// sidecar records, which survives a release (the release keeps the sidecar)
// and a HAMi steal (which only replaces the main value). It only reads
// annotations.
func NodeObservation(key Key, annotations map[string]string, resourceVersion string) Observation {
	obs := Observation{Key: key, Version: resourceVersion}
	obs.Raw, obs.Present = annotations[key.Name]
	obs.Sidecar = annotations[SidecarAnnotation(key.Name)]
	if r, f, err := Decode(obs.Sidecar); err == nil && f == FormatExtended {
		obs.EpochHigh = r.Epoch
	}
	return obs
}
