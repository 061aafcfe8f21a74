package fake

import (
	"context"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// PatchPodAnnotations sets the given annotations on the named pod (other
// annotations stay), as one call of kind pod.patch through World.Do, the way
// a merge patch with preconditions does on the API server: a missing pod
// reports NotFound; a non-empty uid or resourceVersion that differs from the
// stored pod's reports Conflict and changes nothing. A terminating pod can be
// patched, as its metadata stays writable. On success the pod gets a new
// resourceVersion and the change reaches the informer like any other.
//
// The preconditions are checked and the change made under the store's lock,
// so no write can slip in between.
func (s *PodStore) PatchPodAnnotations(ctx context.Context, namespace, name string, uid types.UID, resourceVersion string, set map[string]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.w.Do(KindPodPatch, namespace+"/"+name, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.tick()
		p, ok := s.pods[objKey{namespace, name}]
		switch {
		case !ok:
			return apierrors.NewNotFound(podsResource, name)
		case uid != "" && p.UID != uid, resourceVersion != "" && p.ResourceVersion != resourceVersion:
			return apierrors.NewConflict(podsResource, name, fmt.Errorf("precondition failed: uid %s rv %s, object has uid %s rv %s",
				uid, resourceVersion, p.UID, p.ResourceVersion))
		}
		if p.Annotations == nil {
			p.Annotations = make(map[string]string, len(set))
		}
		maps.Copy(p.Annotations, set)
		p.ResourceVersion = s.nextRV()
		s.emit(s.w.Clock.Now(), watchModified, p)
		return nil
	})
}
