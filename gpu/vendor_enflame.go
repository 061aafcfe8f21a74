package gpu

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// enflameTypes are HAMi's two Enflame rows.
//
// Enflame, a DRS slice (HAMi pkg/device/enflame/device.go,
// GenerateResourceRequests and InitEnflameDevice): enflame.com/drs-gcu asks
// for one device of that many slices (HAMi carries the slice count in
// Memreq); without it, enflame.com/gcu-memory and enflame.com/gcu-core ask
// for one device of the smallest profile holding that memory and cores
// (FitSliceProfiles, Fit and selectProfileByRequest). No lock, no
// devices-to-allocate annotation (held devices in
// hami.io/enflame-vgpu-devices-allocated; Filter also writes the
// enflame.com/gcu-assigned-* annotations and assigned-containers). Its
// devices and profiles come from the JSON enflame.com/gcu-drs-capacity
// (GetNodeDevices).
//
// GCU, a whole card (HAMi pkg/device/enflame/gcu.go,
// GenerateResourceRequests, InitGCUDevice and GetNodeDevices): 100 % of the
// memory and 100 cores, devices derived from the node's capacity of
// enflame.com/gcu (one slot each, 100 memory units).
func enflameTypes() []DeviceType {
	return []DeviceType{
		{
			Type: "Enflame", Count: "enflame.com/drs-gcu", Memory: "enflame.com/gcu-memory", Cores: "enflame.com/gcu-core",
			CountRule: CountOneDevice, FitRule: FitSliceProfiles,
			Annotations: Annotations{
				Register: "enflame.com/gcu-drs-capacity", RegisterFormat: RegisterEnflameDRS, Extra: ExtraEnflameDRS,
				Allocated: "hami.io/enflame-vgpu-devices-allocated",
				UseUUID:   "enflame.com/use-gpuuuid", NoUseUUID: "enflame.com/nouse-gpuuuid",
			},
		},
		{
			Type: "GCU", Count: "enflame.com/gcu", DefaultCores: 100,
			Annotations: Annotations{
				RegisterFormat: RegisterCapacity,
				Capacity:       CapacityRule{Resource: "enflame.com/gcu", PerDevice: 1, IDInfix: "GCU", MemoryMiB: 100, Cores: 100, Slots: 1},
				ToAllocate:     "hami.io/enflame-gcu-devices-to-allocate", Allocated: "hami.io/enflame-gcu-devices-allocated",
			},
		},
	}
}

// Enflame DRS's own pod annotations (HAMi pkg/device/enflame/device.go,
// PatchAnnotations).
const (
	AnnoEnflameAssigned       = "enflame.com/gcu-assigned"
	AnnoEnflameAssignedTime   = "enflame.com/gcu-assigned-time"
	AnnoEnflameAssignedIndex  = "enflame.com/gcu-assigned-index"
	AnnoEnflameAssignedID     = "enflame.com/gcu-assigned-id"
	AnnoEnflameAssignedMinor  = "enflame.com/gcu-assigned-minor"
	AnnoEnflameRequestSize    = "enflame.com/gcu-request-size"
	AnnoEnflameAssignedByName = "assigned-containers"
)

// sliceCandidate is one usable slice profile of a node, as HAMi's Enflame
// collectDRSProfiles builds it: its size in slices, memory in GiB and its
// share of the largest profile's slices as a core percentage, rounded up.
type sliceCandidate struct {
	SliceProfile
	slices, memGiB, corePercent int
}

// sliceCandidates returns the node's profiles that name both a slice count
// and a memory, smallest slices first, then smallest memory, then name
// (HAMi's order for equal slices and memory is its map's, so random).
func sliceCandidates(profiles []SliceProfile) []sliceCandidate {
	largest := 0
	for _, pr := range profiles {
		n, _ := parseSliceProfile(pr.Name)
		largest = max(largest, n)
	}
	if largest <= 0 {
		return nil
	}
	var out []sliceCandidate
	for _, pr := range profiles {
		n, m := parseSliceProfile(pr.Name)
		if n <= 0 || m <= 0 {
			continue
		}
		out = append(out, sliceCandidate{SliceProfile: pr, slices: n, memGiB: m,
			corePercent: int(math.Ceil(float64(n) * 100 / float64(largest)))})
	}
	slices.SortFunc(out, func(a, b sliceCandidate) int {
		return cmp.Or(cmp.Compare(a.slices, b.slices), cmp.Compare(a.memGiB, b.memGiB), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// selectSliceProfile is HAMi's Enflame selectProfileByRequest plus the
// bounds its Fit checks: a request naming its slices takes the profile of
// exactly that size; otherwise the first profile (in sliceCandidates order)
// with at least the asked memory and core percentage, the memory read as
// GiB unless it exceeds twice the memory of the last (largest) profile,
// then as MiB rounded up to GiB (normalizeMemoryRequestToGB). An unset
// memory or cores (0) does not constrain.
func selectSliceProfile(profiles []SliceProfile, r Request) (sliceCandidate, bool) {
	cands := sliceCandidates(profiles)
	if len(cands) == 0 {
		return sliceCandidate{}, false
	}
	ok := func(c sliceCandidate) bool {
		return c.slices <= math.MaxInt32 && c.memGiB <= math.MaxInt32/1024
	}
	if r.Slices > 0 {
		for _, c := range cands {
			if c.slices == int(r.Slices) {
				return c, ok(c)
			}
		}
		return sliceCandidate{}, false
	}
	memGiB := int(r.MemoryMiB)
	if top := cands[len(cands)-1].memGiB; memGiB > 2*top {
		memGiB = int(math.Ceil(float64(memGiB) / 1024))
	}
	for _, c := range cands {
		if (memGiB > 0 && c.memGiB < memGiB) || (r.Cores > 0 && c.corePercent < int(r.Cores)) {
			continue
		}
		return c, ok(c)
	}
	return sliceCandidate{}, false
}

// roomSlices is room under FitSliceProfiles (HAMi's Enflame Fit, after its
// health, UUID, slot and mutex checks): the device must hold the profile's
// memory, and its cores when it has any; the allocation takes the profile's
// memory, core percentage and slices. HAMi's Enflame Fit has no quota,
// exclusivity or exhausted-compute check.
func (p *picker) roomSlices(idx int) (pick, int) {
	d := &p.st.devs[idx]
	mem, cores := int32(p.slice.memGiB*1024), int32(p.slice.corePercent)
	switch {
	case int64(d.MemoryMiB)-int64(d.UsedMemoryMiB) < int64(mem):
		return pick{}, rCardInsufficientMemory
	case d.Cores > 0 && int64(d.Cores)-int64(d.UsedCores) < int64(cores):
		return pick{}, rCardInsufficientCore
	}
	return pick{idx: idx, mem: mem, cores: cores, profile: p.slice.Name, slots: int32(p.slice.slices)}, -1
}

// drsCapacity is Enflame's node annotation enflame.com/gcu-drs-capacity
// (HAMi pkg/device/enflame/device.go, drsCapacitySpec).
type drsCapacity struct {
	Devices  []drsDevice       `json:"devices"`
	Profiles map[string]string `json:"profiles"`
}

// drsDevice is one device of drsCapacity. Capacity is a JSON number or a
// decimal string, as HAMi's parseDRSCapacity accepts.
type drsDevice struct {
	Index    string          `json:"index"`
	Minor    string          `json:"minor,omitempty"`
	Capacity json.RawMessage `json:"capacity"`
}

// parseSliceProfile reads a DRS profile name "<slices>g.<memory>gb" (case
// and surrounding space ignored), as HAMi's parseProfile: 0 for a part
// that does not parse.
func parseSliceProfile(name string) (slices, memGiB int) {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(name)), ".")
	if len(parts) < 2 {
		return 0, 0
	}
	s, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(parts[0]), "g"))
	if err != nil {
		return 0, 0
	}
	m, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(parts[1]), "gb"))
	if err != nil {
		return s, 0
	}
	return s, m
}

// decodeEnflameDRS reads Enflame's DRS capacity into devices and the node's
// slice profiles, as HAMi's Enflame GetNodeDevices: one device per entry,
// indexed by its "index" (its list position when that is not a number),
// capacity slices (Count), the memory of the largest profile (its "<m>gb",
// or as many GiB as the largest profile's slices when no profile names a
// memory), 100 cores, healthy, named "<node>-enflame-drs-<index>". HAMi
// refuses the annotation when no profile names a slice count, a capacity is
// not a positive number, or there is no device; so does plancore, naming it.
func decodeEnflameDRS(node *corev1.Node, typ, s string, p *field.Path) ([]Device, []SliceProfile, field.ErrorList) {
	var spec drsCapacity
	if err := decodeJSON(s, &spec); err != nil {
		return nil, nil, field.ErrorList{field.Invalid(p, s, "want Enflame's DRS capacity {\"devices\":[...],\"profiles\":{...}}: "+err.Error())}
	}
	maxSlices, maxMem := 0, 0
	profiles := make([]SliceProfile, 0, len(spec.Profiles))
	for name, id := range spec.Profiles {
		n, m := parseSliceProfile(name)
		maxSlices, maxMem = max(maxSlices, n), max(maxMem, m)
		profiles = append(profiles, SliceProfile{Name: name, ID: id})
	}
	slices.SortFunc(profiles, func(a, b SliceProfile) int { return strings.Compare(a.Name, b.Name) })
	var errs field.ErrorList
	if maxSlices <= 0 {
		errs = append(errs, field.Invalid(p.Child("profiles"), spec.Profiles, "want at least one profile named <slices>g.<memory>gb"))
	}
	if maxMem <= 0 {
		maxMem = maxSlices
	}
	// Compared before multiplying: a product that wrapped would pass.
	if maxMem > math.MaxInt32/1024 {
		errs = append(errs, field.Invalid(p.Child("profiles"), maxMem, "the largest profile's GiB overflow int32 MiB"))
	}
	if len(spec.Devices) == 0 {
		errs = append(errs, field.Required(p.Child("devices"), "at least one DRS device"))
	}
	out := make([]Device, 0, len(spec.Devices))
	for i, d := range spec.Devices {
		ip := p.Child("devices").Index(i)
		idx, err := strconv.Atoi(d.Index)
		if err != nil {
			idx = i
		}
		capacity, err := parseDRSCapacity(d.Capacity)
		if err != nil || capacity <= 0 {
			errs = append(errs, field.Invalid(ip.Child("capacity"), string(d.Capacity), "want a positive number of slices"))
		}
		minor := strings.TrimSpace(d.Minor)
		if minor == "" {
			minor = strconv.Itoa(idx)
		}
		out = append(out, Device{ID: fmt.Sprintf("%s-enflame-drs-%d", node.Name, idx), Index: idx, Vendor: typ, Model: typ,
			Count: capacity, MemoryMiB: int32(min(int64(maxMem)*1024, math.MaxInt32)), Cores: 100, Healthy: true, Minor: minor})
	}
	errs = append(errs, registeredErrors(out, p.Child("devices"))...)
	return out, profiles, errs
}

// parseDRSCapacity reads a DRS device's capacity: a JSON number (truncated,
// as HAMi converts it to int32) or a decimal string (clamped to int32).
func parseDRSCapacity(raw json.RawMessage) (int32, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return 0, err
		}
		return int32(min(max(n, math.MinInt32), math.MaxInt32)), nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, fmt.Errorf("want a number or a decimal string")
	}
	if f > math.MaxInt32 || f < math.MinInt32 {
		return 0, fmt.Errorf("out of int32 range")
	}
	return int32(f), nil
}

// encodeEnflameDRS writes devs and the node's profiles as Enflame's DRS
// capacity annotation.
func encodeEnflameDRS(devs []Device, profiles []SliceProfile) string {
	spec := drsCapacity{Profiles: map[string]string{}}
	for _, pr := range profiles {
		spec.Profiles[pr.Name] = pr.ID
	}
	for _, d := range devs {
		c, _ := json.Marshal(d.Count)
		spec.Devices = append(spec.Devices, drsDevice{Index: strconv.Itoa(d.Index), Minor: d.Minor, Capacity: c})
	}
	return mustJSON(spec)
}

// enflameContainerJSON is one container of Enflame's assigned-containers
// annotation (HAMi's assignedContainerInfo).
type enflameContainerJSON struct {
	Allocated   bool   `json:"allocated"`
	Request     int32  `json:"request"`
	ProfileID   string `json:"profileID,omitempty"`
	ProfileName string `json:"profileName,omitempty"`
}

// enflameAnnotations writes HAMi's Enflame DRS annotations: gcu-assigned
// "false" and the time; per container holding a device, its first device's
// slices and profile in assigned-containers (by container name); from the
// first such container, the device's index (as gcu-assigned-index and
// -id), minor and the slices (gcu-request-size).
func enflameAnnotations(out map[string]string, list []ContainerAllocation, c FilterChoice) {
	out[AnnoEnflameAssigned] = "false"
	out[AnnoEnflameAssignedTime] = strconv.FormatInt(c.Now.UnixNano(), 10)
	ids := map[string]string{}
	for _, pr := range c.Node.SliceProfiles {
		ids[pr.Name] = pr.ID
	}
	assigned := map[string]enflameContainerJSON{}
	for _, ca := range list {
		if len(ca.Devices) == 0 {
			continue
		}
		a := ca.Devices[0]
		slices := max(a.Slots, 1)
		assigned[ca.Container] = enflameContainerJSON{Request: slices, ProfileID: ids[a.SliceProfile], ProfileName: a.SliceProfile}
		d, _ := deviceByID(c.Node, a.UUID)
		if _, done := out[AnnoEnflameAssignedIndex]; !done {
			out[AnnoEnflameAssignedIndex], out[AnnoEnflameAssignedID] = strconv.Itoa(d.Index), strconv.Itoa(d.Index)
		}
		if _, done := out[AnnoEnflameAssignedMinor]; !done && d.Minor != "" {
			out[AnnoEnflameAssignedMinor] = d.Minor
		}
		if _, done := out[AnnoEnflameRequestSize]; !done {
			out[AnnoEnflameRequestSize] = fmt.Sprint(slices)
		}
	}
	if len(assigned) > 0 {
		b, _ := json.Marshal(assigned)
		out[AnnoEnflameAssignedByName] = string(b)
	}
}
