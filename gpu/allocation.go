package gpu

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// AddUsage returns a copy of devices with allocs recorded against them: each
// allocation takes one slot plus its memory and cores on the device it names.
// It is how a node's usage is built from its registered devices and the pods
// already assigned to it (their decoded hami.io/<x>-devices-allocated).
//
// An allocation naming a device the node does not have, of another vendor,
// with negative memory or cores, or with more memory or cores than the whole
// device has, is refused: the error wraps ErrInvalidDevice (and so
// ErrInvalidInput) and names every bad allocation by its index
// (allocs[1].memoryMiB). Such an annotation is a lie about the device; a
// caller building a node's usage pod by pod should drop the pod that carries
// it rather than the node. Sums saturate at the int32 maximum instead of
// wrapping, so even legal allocations piled on one device can never turn its
// usage negative. devices is not modified.
func AddUsage(devices []Device, allocs ...Allocation) ([]Device, error) {
	out := slices.Clone(devices)
	byID := make(map[string]int, len(out))
	for i, d := range out {
		byID[d.ID] = i
	}
	var errs field.ErrorList
	for k, a := range allocs {
		p := field.NewPath("allocs").Index(k)
		i, ok := byID[a.UUID]
		if !ok {
			errs = append(errs, field.NotFound(p.Child("uuid"), a.UUID))
			continue
		}
		errs = append(errs, addOne(&out[i], a, p)...)
	}
	if err := invalid(ErrInvalidDevice, errs); err != nil {
		return nil, err
	}
	return out, nil
}

// addOne records one allocation, named p, on d, or says why it cannot.
func addOne(d *Device, a Allocation, p *field.Path) field.ErrorList {
	if bad := checkAllocation(*d, a, p); len(bad) > 0 {
		return bad
	}
	d.Used = addSat32(d.Used, max(a.Slots, 1))
	d.UsedMemoryMiB = addSat32(d.UsedMemoryMiB, a.MemoryMiB)
	d.UsedCores = addSat32(d.UsedCores, a.Cores)
	d.CoresInUse |= a.CoreMask
	return nil
}

// checkAllocation reports what makes an allocation impossible on its device.
func checkAllocation(d Device, a Allocation, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a.Type != d.Vendor {
		errs = append(errs, field.Invalid(p.Child("type"), a.Type, fmt.Sprintf("device %s is %q", d.ID, d.Vendor)))
	}
	switch {
	case a.MemoryMiB < 0:
		errs = append(errs, field.Invalid(p.Child("memoryMiB"), a.MemoryMiB, "must not be negative"))
	case a.MemoryMiB > d.MemoryMiB:
		errs = append(errs, field.Invalid(p.Child("memoryMiB"), a.MemoryMiB, fmt.Sprintf("device %s has %d MiB in all", d.ID, d.MemoryMiB)))
	}
	if a.Slots < 0 {
		errs = append(errs, field.Invalid(p.Child("slots"), a.Slots, "must not be negative"))
	}
	switch {
	case a.Cores < 0:
		errs = append(errs, field.Invalid(p.Child("cores"), a.Cores, "must not be negative"))
	case a.Cores > d.Cores:
		errs = append(errs, field.Invalid(p.Child("cores"), a.Cores, fmt.Sprintf("device %s has %d cores in all", d.ID, d.Cores)))
	case d.Cores < 64 && a.CoreMask>>uint(max(d.Cores, 0)) != 0:
		errs = append(errs, field.Invalid(p.Child("coreMask"), a.CoreMask, fmt.Sprintf("device %s has cores 0..%d only", d.ID, d.Cores-1)))
	}
	return errs
}

// addSat32 adds two non-negative int32s, saturating at math.MaxInt32.
func addSat32(a, b int32) int32 {
	if s := int64(a) + int64(b); s < math.MaxInt32 {
		return int32(s)
	}
	return math.MaxInt32
}

// EncodeAllocations renders the allocations of one vendor in HAMi's
// hami.io/<x>-devices-to-allocate format: "UUID,Type,<mem MiB>,<cores>:" per
// device, each container terminated by ";". Every container of the list gets an
// entry, empty when it has no device of the vendor, so the device plugin can
// match entries to containers by position. HAMi lists app containers only;
// plancore's assignments put init containers first (#2640), so a device plugin
// must be told to expect them.
func EncodeAllocations(containers []ContainerAllocation, vendor string) string {
	var b strings.Builder
	for _, c := range containers {
		for _, a := range c.Devices {
			if a.Type != vendor {
				continue
			}
			fmt.Fprintf(&b, "%s,%s,%d,%d:", a.UUID, a.Type, a.MemoryMiB, a.Cores)
		}
		b.WriteByte(';')
	}
	return b.String()
}

// DecodeAllocations parses HAMi's devices-to-allocate encoding into one list of
// allocations per container. A trailing ";" is optional; an empty string is no
// container. Malformed input is never a panic: every malformed entry is
// reported at once in a *plancore.InvalidError wrapping ErrInvalidAllocation
// (and so ErrInvalidInput), named by the position of its container (the
// ";"-separated part) and device (the ":"-separated item in it), as in
// containers[1].devices[0].memoryMiB, with the bad text as the value.
func DecodeAllocations(s string) ([][]Allocation, error) {
	out, errs := decodeContainers(s, field.NewPath("containers"))
	if err := invalid(ErrInvalidAllocation, errs); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeContainers parses the encoding, naming container i p[i].
func decodeContainers(s string, p *field.Path) ([][]Allocation, field.ErrorList) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ";")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	out := make([][]Allocation, 0, len(parts))
	var errs field.ErrorList
	for ci, part := range parts {
		var allocs []Allocation
		for di, item := range strings.Split(part, ":") {
			if item == "" {
				continue
			}
			a, bad := decodeAllocation(item, p.Index(ci).Child("devices").Index(di))
			errs = append(errs, bad...)
			allocs = append(allocs, a)
		}
		out = append(out, allocs)
	}
	return out, errs
}

// decodeAllocation parses one "UUID,Type,mem,cores" item named by p. Fields
// after the fourth are ignored, as HAMi's DecodeContainerDevices ignores
// them.
func decodeAllocation(item string, p *field.Path) (Allocation, field.ErrorList) {
	f := strings.Split(item, ",")
	if len(f) < 4 {
		return Allocation{}, field.ErrorList{field.Invalid(p, item, "want UUID,Type,mem,cores")}
	}
	var errs field.ErrorList
	if f[0] == "" {
		errs = append(errs, field.Required(p.Child("uuid"), "empty UUID in "+strconv.Quote(item)))
	}
	if f[1] == "" {
		errs = append(errs, field.Required(p.Child("type"), "empty type in "+strconv.Quote(item)))
	}
	mem, err := strconv.ParseInt(f[2], 10, 32)
	if err != nil || mem < 0 {
		errs = append(errs, field.Invalid(p.Child("memoryMiB"), f[2], "must be a non-negative int32"))
	}
	cores, err := strconv.ParseInt(f[3], 10, 32)
	if err != nil || cores < 0 {
		errs = append(errs, field.Invalid(p.Child("cores"), f[3], "must be a non-negative int32"))
	}
	return Allocation{UUID: f[0], Type: f[1], MemoryMiB: int32(mem), Cores: int32(cores)}, errs
}
