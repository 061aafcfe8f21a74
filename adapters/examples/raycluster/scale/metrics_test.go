package main

import (
	"reflect"
	"testing"
)

// parseMetric sums a metric's samples by one label and ignores every other
// metric, including one whose name the wanted one begins.
func TestParseMetric(t *testing.T) {
	text := []byte(`# HELP apiserver_terminated_watchers_total Counter of watchers closed due to unresponsiveness broken by resource type.
# TYPE apiserver_terminated_watchers_total counter
apiserver_terminated_watchers_total{resource="pods"} 30
apiserver_terminated_watchers_total{resource="rayclusters.ray.io"} 24
apiserver_terminated_watchers_total_other{resource="pods"} 7
watch_cache_capacity{resource="pods"} 12800
watch_cache_capacity{group="x",resource="pods"} 200
`)
	if got, want := parseMetric(text, "apiserver_terminated_watchers_total", "resource"), map[string]int{"pods": 30, "rayclusters.ray.io": 24}; !reflect.DeepEqual(got, want) {
		t.Errorf("terminated watchers %v, want %v", got, want)
	}
	if got, want := parseMetric(text, "watch_cache_capacity", "resource"), map[string]int{"pods": 13000}; !reflect.DeepEqual(got, want) {
		t.Errorf("capacity %v, want %v", got, want)
	}
}
