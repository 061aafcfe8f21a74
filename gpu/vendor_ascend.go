package gpu

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// AscendChips returns the Ascend chips of the default registry (HAMi's chart,
// vnpus.configs[].commonWord), one device type each.
func AscendChips() []string {
	return []string{"Ascend310P", "Ascend910A", "Ascend910B2", "Ascend910B3", "Ascend910B4", "Ascend910B4-1", "Ascend910C"}
}

// ascendVNPU is each chip's vNPU configuration in HAMi's chart
// (charts/hami/templates/scheduler/device-configmap.yaml, vnpus.configs):
// templates ascending by memory, then the allocatable and capacity memory.
func ascendVNPU(chip string) VNPUConfig {
	t := func(name string, mem int32) VNPUTemplate { return VNPUTemplate{Name: name, MemoryMiB: mem} }
	switch chip {
	case "Ascend910A":
		return VNPUConfig{Templates: []VNPUTemplate{t("vir02", 2184), t("vir04", 4369), t("vir08", 8738), t("vir16", 17476)}, MemoryAllocatableMiB: 32768, MemoryCapacityMiB: 32768}
	case "Ascend910B2":
		return VNPUConfig{Templates: []VNPUTemplate{t("vir03_1c_8g", 8192), t("vir06_1c_16g", 16384), t("vir12_3c_32g", 32768)}, MemoryAllocatableMiB: 65536, MemoryCapacityMiB: 65536}
	case "Ascend910B3", "Ascend910B4-1", "Ascend910C":
		return VNPUConfig{Templates: []VNPUTemplate{t("vir05_1c_16g", 16384), t("vir10_3c_32g", 32768)}, MemoryAllocatableMiB: 65536, MemoryCapacityMiB: 65536}
	case "Ascend910B4":
		return VNPUConfig{Templates: []VNPUTemplate{t("vir05_1c_8g", 8192), t("vir10_3c_16g", 16384)}, MemoryAllocatableMiB: 32768, MemoryCapacityMiB: 32768}
	case "Ascend310P":
		return VNPUConfig{Templates: []VNPUTemplate{t("vir01", 3072), t("vir02", 6144), t("vir04", 12288)}, MemoryAllocatableMiB: 21527, MemoryCapacityMiB: 24576}
	}
	return VNPUConfig{}
}

// AscendType returns the registry row for one Ascend chip (HAMi
// pkg/device/ascend/device.go, GenerateResourceRequests and InitDevices):
// huawei.com/<chip>, huawei.com/<chip>-memory (MiB, memoryFactor 1) and
// huawei.com/<chip>-core (0 when unset) under the shared lock; devices in
// HAMi's JSON register hami.io/node-register-<chip>; the chip's vNPU
// templates from HAMi's chart (empty for a chip it does not list). The
// webhook rounds the memory up to a template before the scheduler sees the
// pod; Filter names the template in huawei.com/<chip> (PatchAnnotations).
// Ascend910C gives a request of more than one NPU whole modules of two
// (FitModulePairs). An Ascend 910 chip's devices name their network in the
// register (NetworkIDs, Device.Network): when all of a node's do, a request
// of several NPUs takes them from the networks with the most fitting NPUs
// first (HAMi's Fit, needTopology and computeBestCombination;
// chooseByGroup), and the node scores ten times the share of each
// container's NPUs in one network (ScoreNetworks; HAMi's ScoreNode).
func AscendType(chip string) DeviceType {
	t := DeviceType{
		Type:     chip,
		Count:    corev1.ResourceName("huawei.com/" + chip),
		Memory:   corev1.ResourceName("huawei.com/" + chip + "-memory"),
		Cores:    corev1.ResourceName("huawei.com/" + chip + "-core"),
		LockName: LockNvidia,
		VNPU:     ascendVNPU(chip),
		Annotations: Annotations{
			Register: "hami.io/node-register-" + chip, RegisterFormat: RegisterJSON, Handshake: "hami.io/node-handshake-" + chip,
			ToAllocate: "hami.io/" + chip + "-devices-to-allocate", Allocated: "hami.io/" + chip + "-devices-allocated",
			UseUUID: "hami.io/use-" + chip + "-uuid", NoUseUUID: "hami.io/no-use-" + chip + "-uuid",
			Extra: ExtraAscend,
		},
	}
	if chip == "Ascend910C" {
		t.FitRule = FitModulePairs
	}
	if strings.HasPrefix(chip, "Ascend910") {
		t.Annotations.NetworkIDs, t.Score = true, ScoreNetworks
	}
	return t
}

// ascendNetworkWeight weighs ScoreNetworks (HAMi's Ascend910NetworkWeight).
const ascendNetworkWeight = 10

// networkID is the network a device sits in, from its register's
// custominfo as HAMi's Ascend Fit and ScoreNode read it: the NetworkID key
// of a JSON object, "" without one. HAMi groups and scores a numeric
// NetworkID by its integer part and leaves a device with any other value
// out of both (so its Fit may give fewer devices than asked); plancore
// keeps such a value's JSON text as a network of its own, so a request is
// given all its devices. A custominfo that is not a JSON object fails
// HAMi's decoding of the whole register.
func networkID(raw json.RawMessage) (string, error) {
	var info map[string]json.RawMessage
	if err := json.Unmarshal(raw, &info); err != nil {
		return "", fmt.Errorf("want a JSON object: %v", err)
	}
	v, ok := info["NetworkID"]
	if !ok {
		return "", nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err == nil && !math.IsInf(f, 0) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10), nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, v); err != nil {
		return "", err
	}
	return compact.String(), nil
}

// modulePairSize is the number of devices of one Ascend 910C module.
const modulePairSize = 2

// chooseModulePairs keeps, of every device that fits, whole modules (two
// devices of one index/2, both fitting) until the request's devices are
// reached, and returns how many it kept: HAMi's computeBestCombination910C.
// HAMi takes the whole modules in its map's order, so at random; plancore
// takes them in walk order (the module of the best candidate first), each
// module's devices in walk order.
func (p *picker) chooseModulePairs() int {
	var modules []int
	members := map[int][]pick{}
	for _, pk := range p.picked {
		m := p.st.devs[pk.idx].Index / modulePairSize
		if _, seen := members[m]; !seen {
			modules = append(modules, m)
		}
		members[m] = append(members[m], pk)
	}
	var chosen []pick
	left := int(p.r.Nums)
	for _, m := range modules {
		if left <= 0 {
			break
		}
		if len(members[m]) == modulePairSize {
			chosen = append(chosen, members[m]...)
			left -= modulePairSize
		}
	}
	p.picked, p.need = chosen, 0
	return len(chosen)
}

// modulePairsReasons is HAMi's 910C refusal: the walk's reasons and the
// devices the whole modules came to (even none) as
// AllocatedCardsInsufficientRequest, all out of the devices asked.
func modulePairsReasons(counts reasonCounts, got int, nums int32) []Rejection {
	counts[rAllocatedCardsInsufficientRequest] = 0
	out := renderReasons(counts, int(nums))
	out = append(out, Rejection{Code: ReasonAllocatedCardsInsufficientRequest, Count: got, Total: int(nums)})
	sortRejections(out)
	return out
}

// AnnoAscendVNPUMode is the pod annotation choosing Ascend's soft split
// ("hami-core"); without it a vNPU is a hard-split template.
const AnnoAscendVNPUMode = "huawei.com/vnpu-mode"

// ascendRuntimeJSON is one device of huawei.com/<chip> (HAMi's RuntimeInfo).
type ascendRuntimeJSON struct {
	UUID   string `json:"UUID,omitempty"`
	Temp   string `json:"temp,omitempty"`
	Memory int64  `json:"memory,omitempty"`
	Core   int32  `json:"core,omitempty"`
}

// ascendAnnotations writes HAMi's Ascend annotations: predicate-time (Unix
// seconds) and huawei.com/<type>, every device given with its memory, cores
// and, unless the pod asks the hami-core soft split, the vNPU template its
// memory rounds up to ("" for a whole NPU). A list of no device is JSON
// null, as HAMi marshals it.
func ascendAnnotations(out map[string]string, t DeviceType, list []ContainerAllocation, c FilterChoice) {
	out["predicate-time"] = strconv.FormatInt(c.Now.Unix(), 10)
	soft := c.Pod.Annotations[AnnoAscendVNPUMode] == "hami-core"
	var info []ascendRuntimeJSON
	for _, ca := range list {
		for _, a := range ca.Devices {
			ri := ascendRuntimeJSON{UUID: a.UUID, Memory: int64(a.MemoryMiB), Core: a.Cores}
			if !soft {
				ri.Temp, _ = t.VNPU.Template(a.MemoryMiB)
			}
			info = append(info, ri)
		}
	}
	b, _ := json.Marshal(info)
	out["huawei.com/"+t.Type] = string(b)
}
