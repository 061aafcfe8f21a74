package main

import (
	"bytes"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"

	"github.com/plancore/plancore/reconcile"
)

// RayCluster is a ray.io/v1 RayCluster as this controller reads and caches
// it: the metadata typed (name, UID, resourceVersion: what the owner
// references, events and the status patch need), the spec and status as
// the JSON the API server sent, which reconcile.DecodeRayCluster reads on
// each pass. An informer holding a thousand of them holds a few kilobytes
// of JSON each, where the same objects as unstructured maps of maps cost
// about six times as much (and more to decode from the watch).
//
// Nothing is lost on the way: an object with a field outside these four
// (an unknown top-level or metadata field, a duplicate key) is kept whole,
// so DecodeRayCluster refuses it by path exactly as it would the object
// the API server sent.
type RayCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              json.RawMessage `json:"spec,omitempty"`
	Status            json.RawMessage `json:"status,omitempty"`

	// whole is the object as received when it had a field the four above
	// do not hold; nil otherwise.
	whole []byte
}

// RayClusterList is a list of RayClusters, as the informer lists them.
type RayClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RayCluster `json:"items"`
}

// rayClusterFields is RayCluster without its methods, so that decoding
// into it does not call UnmarshalJSON again (whole, unexported, is not
// JSON).
type rayClusterFields RayCluster

// UnmarshalJSON reads the object case-sensitively, as the API machinery
// does; a field it cannot hold (or a duplicate key) keeps data whole.
func (rc *RayCluster) UnmarshalJSON(data []byte) error {
	var f rayClusterFields
	strict, err := kjson.UnmarshalStrict(data, &f, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	*rc = RayCluster(f)
	if len(strict) > 0 {
		rc.whole = bytes.Clone(data)
	}
	return nil
}

// document is the object as JSON for reconcile.DecodeRayCluster. The API
// machinery clears a typed object's apiVersion and kind once decoded; the
// type fixes them.
func (rc *RayCluster) document() ([]byte, error) {
	if rc.whole != nil {
		return rc.whole, nil
	}
	typed := rayClusterFields(*rc)
	typed.TypeMeta = metav1.TypeMeta{APIVersion: reconcile.RayClusterAPIVersion, Kind: reconcile.RayClusterKind}
	return json.Marshal(&typed)
}

// DeepCopyObject implements runtime.Object.
func (rc *RayCluster) DeepCopyObject() runtime.Object {
	out := &RayCluster{}
	rc.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies rc into out, sharing nothing.
func (rc *RayCluster) DeepCopyInto(out *RayCluster) {
	out.TypeMeta = rc.TypeMeta
	rc.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec, out.Status, out.whole = bytes.Clone(rc.Spec), bytes.Clone(rc.Status), bytes.Clone(rc.whole)
}

// DeepCopyObject implements runtime.Object.
func (l *RayClusterList) DeepCopyObject() runtime.Object {
	out := &RayClusterList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]RayCluster, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// addRayClusterTypes registers RayCluster and RayClusterList as
// RayClusterGVK's group and version in scheme.
func addRayClusterTypes(scheme *runtime.Scheme) error {
	gv := RayClusterGVK.GroupVersion()
	scheme.AddKnownTypes(gv, &RayCluster{}, &RayClusterList{})
	metav1.AddToGroupVersion(scheme, gv)
	return nil
}
