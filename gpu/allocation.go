package gpu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// AddUsage returns a copy of devices with allocs recorded against them: each
// allocation takes one slot plus its memory and cores on the device it names.
// It is how a node's usage is built from its registered devices and the pods
// already assigned to it (their decoded hami.io/<x>-devices-allocated). An
// allocation naming a device the node does not have, or of another vendor, is
// an error wrapping ErrInvalidDevice. devices is not modified.
func AddUsage(devices []Device, allocs ...Allocation) ([]Device, error) {
	out := slices.Clone(devices)
	byID := make(map[string]int, len(out))
	for i, d := range out {
		byID[d.ID] = i
	}
	for _, a := range allocs {
		i, ok := byID[a.UUID]
		if !ok {
			return nil, fmt.Errorf("%w: allocation names device %q, which the node does not have", ErrInvalidDevice, a.UUID)
		}
		d := &out[i]
		if a.Type != d.Vendor {
			return nil, fmt.Errorf("%w: allocation on device %s says type %q, the device is %q", ErrInvalidDevice, a.UUID, a.Type, d.Vendor)
		}
		if a.MemoryMiB < 0 || a.Cores < 0 {
			return nil, fmt.Errorf("%w: allocation on device %s has negative memory or cores: %+v", ErrInvalidDevice, a.UUID, a)
		}
		d.Used++
		d.UsedMemoryMiB += a.MemoryMiB
		d.UsedCores += a.Cores
	}
	return out, nil
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
// container. Malformed input is an error wrapping ErrInvalidAllocation, never a
// panic.
func DecodeAllocations(s string) ([][]Allocation, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ";")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	out := make([][]Allocation, 0, len(parts))
	for ci, part := range parts {
		var allocs []Allocation
		for di, item := range strings.Split(part, ":") {
			if item == "" {
				continue
			}
			f := strings.Split(item, ",")
			if len(f) != 4 {
				return nil, fmt.Errorf("%w: container %d device %d %q: want UUID,Type,mem,cores", ErrInvalidAllocation, ci, di, item)
			}
			if f[0] == "" || f[1] == "" {
				return nil, fmt.Errorf("%w: container %d device %d %q: empty UUID or type", ErrInvalidAllocation, ci, di, item)
			}
			mem, err := strconv.ParseInt(f[2], 10, 32)
			if err != nil || mem < 0 {
				return nil, fmt.Errorf("%w: container %d device %d %q: memory %q is not a non-negative int32", ErrInvalidAllocation, ci, di, item, f[2])
			}
			cores, err := strconv.ParseInt(f[3], 10, 32)
			if err != nil || cores < 0 {
				return nil, fmt.Errorf("%w: container %d device %d %q: cores %q is not a non-negative int32", ErrInvalidAllocation, ci, di, item, f[3])
			}
			allocs = append(allocs, Allocation{UUID: f[0], Type: f[1], MemoryMiB: int32(mem), Cores: int32(cores)})
		}
		out = append(out, allocs)
	}
	return out, nil
}
