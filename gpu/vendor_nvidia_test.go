package gpu_test

import (
	"fmt"
	"testing"

	"github.com/plancore/plancore/gpu"
)

// TestFitDevicesAsNVIDIAFit restates cases of HAMi's NVIDIA Fit test
// (pkg/device/nvidia/device_test.go, v2.10, TestDevices_Fit) through
// FitDevices; each row names its HAMi case. Left out, as for Vastai: "fit
// fail: type mismatch" (a Fit asked for another type than its devices').
func TestFitDevicesAsNVIDIAFit(t *testing.T) {
	dev := func(id string, mem, usedCores, used int32) gpu.Device {
		return gpu.Device{ID: id, Vendor: "NVIDIA", Model: "NVIDIA", Count: 100, MemoryMiB: mem, Cores: 100, Used: used, UsedCores: usedCores, Healthy: true}
	}
	req := func(nums, mem, cores int32) gpu.Request {
		return gpu.Request{Container: "c", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: nums, MemoryMiB: mem, Cores: cores}
	}
	cases := []struct {
		name string
		devs []gpu.Device
		r    gpu.Request
		sel  []gpu.Selector
		want string // the device given, with its memory and cores, or HAMi's reason
	}{
		{name: "fit success", devs: []gpu.Device{dev("dev-0", 128, 0, 0), dev("dev-1", 128, 0, 0)}, r: req(1, 64, 50), want: "dev-1 64 50"},
		{name: "fit fail: memory not enough", devs: []gpu.Device{dev("dev-0", 128, 0, 0)}, r: req(1, 512, 50), want: "1/1 CardInsufficientMemory"},
		{name: "fit fail: core not enough", devs: []gpu.Device{dev("dev-0", 1024, 100, 0)}, r: req(1, 512, 50), want: "1/1 CardInsufficientCore"},
		{name: "fit fail: user assign use uuid mismatch", devs: []gpu.Device{dev("dev-1", 1280, 0, 0)}, r: req(2, 512, 50),
			sel: []gpu.Selector{{Type: "NVIDIA", UseUUIDs: []string{"dev-0"}}}, want: "1/1 CardUuidMismatch"},
		{name: "fit fail: user assign no use uuid match", devs: []gpu.Device{dev("dev-0", 1280, 0, 0)}, r: req(2, 512, 50),
			sel: []gpu.Selector{{Type: "NVIDIA", NoUseUUIDs: []string{"dev-0"}}}, want: "1/1 CardUuidMismatch"},
		{name: "fit fail: card overused", devs: []gpu.Device{dev("dev-0", 1280, 0, 100)}, r: req(1, 512, 50), want: "1/1 CardTimeSlicingExhausted"},
		{name: "fit success: but core limit can't exceed 100", devs: []gpu.Device{dev("dev-0", 1280, 0, 0)}, r: req(1, 512, 120), want: "dev-0 512 100"},
		{name: "fit fail:  card exclusively", devs: []gpu.Device{dev("dev-0", 1280, 0, 20)}, r: req(1, 512, 100), want: "1/1 ExclusiveDeviceAllocateConflict"},
		{name: "fit fail:  CardComputeUnitsExhausted", devs: []gpu.Device{dev("dev-0", 1280, 100, 20)}, r: req(1, 512, 0), want: "1/1 CardComputeUnitsExhausted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := gpu.FitDevices(gpu.Node{Name: "n", Devices: tc.devs}, tc.r, gpu.FitRequest{Selectors: tc.sel})
			if err != nil {
				t.Fatal(err)
			}
			got := f.Message()
			if f.Fits {
				a := f.Devices[0]
				got = fmt.Sprintf("%s %d %d", a.UUID, a.MemoryMiB, a.Cores)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
