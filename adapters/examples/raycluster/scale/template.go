package main

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// image is the Ray image of KubeRay's perf tests; nothing pulls it here.
const image = "rayproject/ray:2.46.0"

// rayClusterTemplate is the cluster of KubeRay's RayCluster perf tests
// (benchmark/perf-tests in its repository), written out here: a head with a
// ClusterIP service, GCS, dashboard and client ports and a log volume, one
// worker group, every container requesting 10m CPU with a limit of one CPU.
func rayClusterTemplate(ns, name string, workers int) *unstructured.Unstructured {
	rc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ray.io/v1",
		"kind":       "RayCluster",
		"metadata": map[string]any{
			"name": name, "namespace": ns,
			"labels": map[string]any{"perf-test": "ray-cluster"},
		},
		"spec": map[string]any{
			"rayVersion": "2.46.0",
			"headGroupSpec": map[string]any{
				"serviceType":    "ClusterIP",
				"rayStartParams": map[string]any{"dashboard-host": "0.0.0.0", "disable-usage-stats": "true"},
				"template": map[string]any{"spec": map[string]any{
					"containers": []any{container("ray-head",
						port("gcs", 6379), port("dashboard", 8265), port("client", 10001))},
					"volumes": []any{map[string]any{"name": "ray-logs", "emptyDir": map[string]any{}}},
				}},
			},
			"workerGroupSpecs": []any{workerGroup(workers)},
		},
	}}
	return rc
}

// workerGroup is the template's one worker group with the given replicas;
// maxReplicas is the template's 10, or the replicas when above.
func workerGroup(workers int) map[string]any {
	return map[string]any{
		"groupName":   "small-group",
		"replicas":    int64(workers),
		"minReplicas": int64(min(1, workers)),
		"maxReplicas": int64(max(10, workers)),
		"template": map[string]any{"spec": map[string]any{
			"containers": []any{container("ray-worker")},
		}},
	}
}

func container(name string, ports ...any) map[string]any {
	c := map[string]any{
		"name":  name,
		"image": image,
		"resources": map[string]any{
			"limits":   map[string]any{"cpu": "1"},
			"requests": map[string]any{"cpu": "10m"},
		},
	}
	if len(ports) > 0 {
		c["ports"] = ports
	}
	return c
}

func port(name string, n int64) map[string]any {
	return map[string]any{"name": name, "containerPort": n}
}
