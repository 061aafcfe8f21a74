package kube

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// TestSortByAddress: pods allocated apart (as an informer's are, between
// other objects) come back exactly once each, in increasing address order,
// for lengths around the radix sort's edge cases. Stopping one digit pass
// early, or not adding up the bucket counts, makes it fail.
func TestSortByAddress(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var keep [][]byte
	for _, n := range []int{0, 1, 2, 3, 100, 5000} {
		pods := make([]*corev1.Pod, n)
		for i := range pods {
			pods[i] = &corev1.Pod{}
			keep = append(keep, make([]byte, r.IntN(1<<16)))
		}
		r.Shuffle(n, func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
		a, tmp := make([]podAddr, n), make([]podAddr, n)
		for i, p := range pods {
			a[i] = podAddr{uintptr(unsafe.Pointer(p)), p}
		}
		got := sortByAddress(a, tmp)
		if len(got) != n {
			t.Fatalf("%d pods: %d back", n, len(got))
		}
		seen := map[*corev1.Pod]bool{}
		for i := range got {
			if got[i].addr != uintptr(unsafe.Pointer(got[i].p)) || seen[got[i].p] {
				t.Fatalf("%d pods: entry %d lost its pod or repeats one", n, i)
			}
			seen[got[i].p] = true
			if i > 0 && got[i].addr <= got[i-1].addr {
				t.Fatalf("%d pods: entry %d at %#x after %#x", n, i, got[i].addr, got[i-1].addr)
			}
		}
	}
	_ = keep
}
