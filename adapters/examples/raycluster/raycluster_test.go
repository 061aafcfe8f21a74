package main

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/reconcile"
)

// decodeVia reads doc the way the controller does: into the typed
// RayCluster (as the informer or the client decodes it), then through
// DecodeRayCluster.
func decodeVia(t *testing.T, doc []byte) (reconcile.Cluster, reconcile.ClusterStatus, error) {
	t.Helper()
	var rc RayCluster
	if err := json.Unmarshal(doc, &rc); err != nil {
		t.Fatalf("decoding into RayCluster: %v", err)
	}
	// The API machinery clears a typed object's apiVersion and kind.
	rc.APIVersion, rc.Kind = "", ""
	raw, err := rc.document()
	if err != nil {
		t.Fatal(err)
	}
	return reconcile.DecodeRayCluster(raw)
}

// The typed RayCluster gives DecodeRayCluster what the whole object gives
// it: the same cluster and status for a valid object, and the same fields
// refused, by path, for an object with a field it cannot hold. (Dropping
// the fields the type does not hold, rather than keeping the object whole,
// makes the unknown-field cases pass as valid.)
func TestRayClusterDecodesAsTheObject(t *testing.T) {
	rc := rayCluster("ns", "demo", 3)
	rc.SetUID("uid-1")
	rc.SetResourceVersion("7")
	rc.SetLabels(map[string]string{"team": "a"})
	rc.Object["status"] = map[string]any{"state": "ready", "readyWorkerReplicas": int64(2),
		"conditions": []any{map[string]any{"type": "HeadPodReady", "status": "True", "reason": "HeadPodRunningAndReady", "lastTransitionTime": "2026-01-01T00:00:00Z"}}}
	valid, err := rc.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	wantCluster, wantStatus, err := reconcile.DecodeRayCluster(valid)
	if err != nil {
		t.Fatal(err)
	}
	gotCluster, gotStatus, err := decodeVia(t, valid)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotCluster, wantCluster) || !reflect.DeepEqual(gotStatus, wantStatus) {
		t.Errorf("through RayCluster:\n%+v\n%+v\nwhole:\n%+v\n%+v", gotCluster, gotStatus, wantCluster, wantStatus)
	}
	if gotStatus.ReadyWorkerReplicas != 2 || len(gotStatus.Conditions) != 1 || gotCluster.UID != "uid-1" {
		t.Errorf("status or metadata lost: %+v, uid %q", gotStatus, gotCluster.UID)
	}

	for name, doc := range map[string]string{
		"unknown top-level field": strings.Replace(string(valid), `"spec":`, `"sepc":{},"spec":`, 1),
		"unknown metadata field":  strings.Replace(string(valid), `"metadata":{`, `"metadata":{"nmae":"x",`, 1),
		"duplicate key":           strings.Replace(string(valid), `"spec":`, `"status":{},"spec":`, 1),
		"unknown spec field":      strings.Replace(string(valid), `"workerGroupSpecs":`, `"workerGroupSpec":[],"workerGroupSpecs":`, 1),
	} {
		if doc == string(valid) {
			t.Fatalf("%s: the document did not change", name)
		}
		_, _, want := reconcile.DecodeRayCluster([]byte(doc))
		_, _, got := decodeVia(t, []byte(doc))
		var wantInv, gotInv *plancore.InvalidError
		if !errors.As(want, &wantInv) || !errors.As(got, &gotInv) {
			t.Errorf("%s: whole object gives %v, through RayCluster %v; want both invalid", name, want, got)
			continue
		}
		if !reflect.DeepEqual(gotInv.Fields(), wantInv.Fields()) {
			t.Errorf("%s: through RayCluster refused at %v, the whole object at %v", name, gotInv.Fields(), wantInv.Fields())
		}
	}
}

// A deep copy shares no bytes with the original.
func TestRayClusterDeepCopy(t *testing.T) {
	rc := &RayCluster{Spec: []byte(`{"a":1}`), Status: []byte(`{}`), whole: []byte(`{}`)}
	rc.Labels = map[string]string{"k": "v"}
	cp := rc.DeepCopyObject().(*RayCluster)
	cp.Spec[2], cp.Labels["k"], cp.whole[0] = 'b', "w", '['
	if string(rc.Spec) != `{"a":1}` || rc.Labels["k"] != "v" || string(rc.whole) != `{}` {
		t.Errorf("the copy shares memory with the original: %s %v %s", rc.Spec, rc.Labels, rc.whole)
	}
	list := &RayClusterList{Items: []RayCluster{*rc}}
	lc := list.DeepCopyObject().(*RayClusterList)
	lc.Items[0].Spec[2] = 'c'
	if string(list.Items[0].Spec) != `{"a":1}` {
		t.Errorf("the list's copy shares memory with the original: %s", list.Items[0].Spec)
	}
}
