package gpu

import (
	"fmt"
	"testing"
)

// TestLinkGroupScoreAsScoreNode restates HAMi's whole-Kunlun Test_ScoreNode
// (pkg/device/kunlun/device_test.go, v2.10), which calls ScoreNode with
// devices in use and devices given that no fit would produce together, so
// it calls the rule directly.
func TestLinkGroupScoreAsScoreNode(t *testing.T) {
	node := func(used ...int) Node {
		n := Node{Name: "n"}
		for i := range 8 {
			n.Devices = append(n.Devices, Device{ID: fmt.Sprint("x", i), Index: i, Vendor: "kunlun"})
		}
		for _, i := range used {
			n.Devices[i].Used = 1
		}
		return n
	}
	given := func(idx ...int) []ContainerAllocation {
		c := ContainerAllocation{Container: "c"}
		for _, i := range idx {
			c.Devices = append(c.Devices, Allocation{UUID: fmt.Sprint("x", i), Type: "kunlun"})
		}
		return []ContainerAllocation{c}
	}
	cases := []struct {
		name  string
		node  Node
		given []ContainerAllocation
		want  float32
	}{
		// "Scenario 1": XPUs 0..3 in use, all eight given: one bubble
		// fewer, 3000.
		{"Scenario 1", node(0, 1, 2, 3), given(0, 1, 2, 3, 4, 5, 6, 7), 3000},
		// "Scenario 2": nothing in use, XPU 0 given: two bubbles more, 0.
		{"Scenario 2", node(), given(0), 0},
		// Not HAMi's cases, the other branches of calcscore: as many
		// bubbles (2000), one more (1000), and a difference of -2 (1000).
		{"as many bubbles", node(0), given(1), 2000},
		{"one more bubble", node(), given(0, 1), 1000},
		{"four fewer bubbles", node(0, 4), given(0, 1, 2, 3, 4, 5, 6, 7), 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := linkGroupScore(tc.node, tc.given, "kunlun"); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
