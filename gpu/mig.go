package gpu

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds the MIG capability (Capabilities.MIG, NVIDIA's in HAMi):
// a device's MIG geometry as its plugin registers it, the choice of an
// instance's profile and placement, and hami.io/vgpu-mig-allocations.

// MIGProfile is one MIG instance shape a MIG-mode NVIDIA device offers, as
// its device plugin registers it (HAMi pkg/device/devices.go, MigProfile):
// the instance's memory and cores and the slice ranges it may start at.
type MIGProfile struct {
	Name       string         `json:"name"`
	MemoryMiB  int32          `json:"memoryMB"`
	Cores      int32          `json:"core"`
	SliceCount uint32         `json:"sliceCount"`
	Placements []MIGPlacement `json:"placements"`
}

// MIGPlacement is a range of memory slices of a MIG-mode device: Size
// slices from Start. A zero Size is no placement.
type MIGPlacement struct {
	Start uint32 `json:"start"`
	Size  uint32 `json:"size"`
}

// overlaps reports whether two placements share a slice.
func (a MIGPlacement) overlaps(b MIGPlacement) bool {
	return a.Start < b.Start+b.Size && b.Start < a.Start+a.Size
}

// ModeMIG is the Mode of an NVIDIA device split into MIG instances.
const ModeMIG = "mig"

// validateMIG checks a device's MIG geometry and instances in use.
func validateMIG(d Device, p pathFn) field.ErrorList {
	var errs field.ErrorList
	for k, m := range d.MIGProfiles {
		mp := func() *field.Path { return p().Child("migProfiles").Index(k) }
		if m.Name == "" || m.MemoryMiB < 0 || m.Cores < 0 {
			errs = append(errs, field.Invalid(mp(), m.Name, "a MIG profile needs a name and non-negative memory and cores"))
		}
		for j, pl := range m.Placements {
			if pl.Size == 0 {
				errs = append(errs, field.Invalid(mp().Child("placements").Index(j).Child("size"), pl.Size, "must be positive"))
			}
		}
	}
	for k, pl := range d.MIGInUse {
		if pl.Size == 0 {
			errs = append(errs, field.Invalid(p().Child("migInUse").Index(k).Child("size"), pl.Size, "must be positive"))
		}
	}
	return errs
}

// occupied returns the MIG slices of device idx in use: placed before, and
// taken by this request so far.
func (p *picker) occupied(idx int) []MIGPlacement {
	out := slices.Clone(p.st.devs[idx].MIGInUse)
	for _, pk := range p.picked {
		if pk.idx == idx && pk.placement.Size > 0 {
			out = append(out, pk.placement)
		}
	}
	return out
}

// selectMIG picks, as HAMi's selectMigCandidate does, the smallest profile
// (by memory, then slices) of at least mem MiB that has a placement free of
// every occupied slice.
func selectMIG(profiles []MIGProfile, occupied []MIGPlacement, mem int32) (MIGProfile, MIGPlacement, bool) {
	cands := slices.Clone(profiles)
	slices.SortStableFunc(cands, func(a, b MIGProfile) int {
		return cmp.Or(cmp.Compare(a.MemoryMiB, b.MemoryMiB), cmp.Compare(a.SliceCount, b.SliceCount))
	})
	for _, prof := range cands {
		if prof.MemoryMiB < mem {
			continue
		}
		for _, pl := range orderedPlacements(prof) {
			if !slices.ContainsFunc(occupied, pl.overlaps) {
				return prof, pl, true
			}
		}
	}
	return MIGProfile{}, MIGPlacement{}, false
}

// orderedPlacements lists a profile's placements in the order HAMi tries
// them (mig_topology.go, orderedMigPlacements): highest start first for the
// 1g and 3g profiles, lowest first for the others, so the small instances
// pack at the top and leave room for the large ones.
func orderedPlacements(prof MIGProfile) []MIGPlacement {
	out := slices.Clone(prof.Placements)
	high := strings.HasPrefix(prof.Name, "1g.") || strings.HasPrefix(prof.Name, "3g.")
	slices.SortStableFunc(out, func(a, b MIGPlacement) int {
		if high {
			return cmp.Compare(b.Start, a.Start)
		}
		return cmp.Compare(a.Start, b.Start)
	})
	return out
}

// AnnoMIGAllocations is the pod annotation holding the MIG instances Filter
// placed, as JSON (HAMi pkg/device/nvidia/mig_allocations.go,
// MigAllocationsAnnotation).
const AnnoMIGAllocations = "hami.io/vgpu-mig-allocations"

// migAllocationJSON is one entry of hami.io/vgpu-mig-allocations.
type migAllocationJSON struct {
	ContainerIndex    int          `json:"containerIndex"`
	DeviceIndex       int          `json:"deviceIndex"`
	GPUUUID           string       `json:"gpuUUID"`
	Profile           string       `json:"profile"`
	Placement         MIGPlacement `json:"placement"`
	MigUUID           string       `json:"migUUID,omitempty"`
	GPUInstanceID     *uint32      `json:"gpuInstanceID,omitempty"`
	ComputeInstanceID *uint32      `json:"computeInstanceID,omitempty"`
}

// decodeMIGAllocations reads hami.io/vgpu-mig-allocations, checking each
// entry as HAMi's DecodeMigAllocations does (keys it does not know are
// ignored). Every reservation is kept, in annotation order, whether or not
// the pod's NVIDIA annotation lists its device: HAMi v2.10's getNodesUsage
// restores a reservation no device entry consumed onto its GPU on purpose,
// so its slices stay occupied. An entry's memory and cores are those of the
// NVIDIA entry at its container and device index when that entry is on the
// same GPU, and zero otherwise (the reservation alone occupies slices).
func decodeMIGAllocations(s, typ string, nvidia [][]Allocation, p *field.Path) ([]Allocation, field.ErrorList) {
	var list []migAllocationJSON
	if err := decodeJSON(s, &list); err != nil {
		return nil, field.ErrorList{field.Invalid(p, s, "want HAMi's JSON MIG allocation list: "+err.Error())}
	}
	var out []Allocation
	var errs field.ErrorList
	seen := map[[2]int]bool{}
	for i, m := range list {
		ip := p.Index(i)
		runtime := 0
		for _, set := range []bool{m.MigUUID != "", m.GPUInstanceID != nil, m.ComputeInstanceID != nil} {
			if set {
				runtime++
			}
		}
		key := [2]int{m.ContainerIndex, m.DeviceIndex}
		switch {
		case m.ContainerIndex < 0 || m.DeviceIndex < 0 || m.GPUUUID == "" || m.Profile == "" || m.Placement.Size == 0:
			errs = append(errs, field.Invalid(ip, m.GPUUUID, "a MIG allocation needs non-negative indices, a GPU UUID, a profile and a placement size"))
		case runtime != 0 && runtime != 3:
			errs = append(errs, field.Invalid(ip.Child("migUUID"), m.MigUUID, "the runtime identity is all three of migUUID, gpuInstanceID and computeInstanceID or none"))
		case seen[key]:
			errs = append(errs, field.Duplicate(ip, fmt.Sprintf("container %d device %d", m.ContainerIndex, m.DeviceIndex)))
		default:
			a := Allocation{UUID: m.GPUUUID, Type: typ}
			if m.ContainerIndex < len(nvidia) && m.DeviceIndex < len(nvidia[m.ContainerIndex]) && nvidia[m.ContainerIndex][m.DeviceIndex].UUID == m.GPUUUID {
				a = nvidia[m.ContainerIndex][m.DeviceIndex]
			}
			a.MIGProfile, a.MIGPlacement = m.Profile, m.Placement
			out = append(out, a)
		}
		seen[key] = true
	}
	return out, errs
}

// addMIGUsage records u's MIG reservations on devs as HAMi v2.10's
// getNodesUsage does: each reservation's placement is in use on its device
// (restored even when the pod's device entries do not list it); a
// reservation on a device outside MIG mode, a MIG-mode device the pod uses
// in more containers than it has reservations there, and, when a
// reservation names a device the node does not have, every MIG-mode device
// of the node, are marked unhealthy, since what they hold is unknown.
func addMIGUsage(devs []Device, byID map[string]int, u PodUsage) {
	placed := map[string]int32{}
	unknown := false
	for _, m := range u.MIG {
		i, ok := byID[m.UUID]
		if !ok {
			unknown = true
			continue
		}
		placed[m.UUID]++
		if devs[i].Mode != ModeMIG {
			devs[i].Healthy = false
			continue
		}
		devs[i].MIGInUse = append(devs[i].MIGInUse, m.MIGPlacement)
	}
	for _, a := range u.Allocations {
		if i, ok := byID[a.UUID]; ok && devs[i].Mode == ModeMIG && placed[a.UUID] < max(a.Slots, 1) {
			devs[i].Healthy = false
		}
	}
	if unknown {
		for i := range devs {
			if devs[i].Mode == ModeMIG {
				devs[i].Healthy = false
			}
		}
	}
}

// encodeMIG writes the MIG instances of NVIDIA's entries, indexed as the
// entries are.
func encodeMIG(list []ContainerAllocation) string {
	var out []migAllocationJSON
	for ci, ca := range list {
		for di, a := range ca.Devices {
			if a.MIGPlacement.Size > 0 && a.MIGProfile != "" {
				out = append(out, migAllocationJSON{ContainerIndex: ci, DeviceIndex: di, GPUUUID: a.UUID, Profile: a.MIGProfile, Placement: a.MIGPlacement})
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return mustJSON(out)
}
