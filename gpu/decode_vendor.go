package gpu

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

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

// neuronDevices derives AWS Neuron devices from the node's capacity, as
// HAMi's AWS Neuron GetNodeDevices: one per unit of the Count resource,
// each with the Cores capacity divided evenly (whole cores, rounded down)
// as its cores and slots, no memory, healthy, named "<node>-<type>-<i>".
// HAMi records the first node's cores per device for every node; plancore
// reads each node's own. HAMi's device cores are a bit mask of that many
// cores, compared by their count; plancore keeps the count.
func neuronDevices(node *corev1.Node, t DeviceType) []Device {
	q, ok := node.Status.Capacity[t.Count]
	if !ok {
		return nil
	}
	count, ok := q.AsInt64()
	if !ok || count <= 0 {
		return nil
	}
	var cores int64
	if cq, ok := node.Status.Capacity[t.Cores]; ok {
		if c, ok := cq.AsInt64(); ok && c > 0 {
			cores = c
		}
	}
	// A node cannot hold more devices than this; a larger capacity is a typo.
	count = min(count, MaxCapacityDevices)
	per := int32(min(cores/count, 63))
	out := make([]Device, 0, count)
	for i := range int(count) {
		out = append(out, Device{ID: fmt.Sprintf("%s-%s-%d", node.Name, t.Type, i), Index: i, Vendor: t.Type, Model: t.Type,
			Count: per, Cores: per, Healthy: true})
	}
	return out
}
