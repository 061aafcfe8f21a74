package extender_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"pgregory.net/rapid"
)

// TestPropSplitReadsEscapedStrings: a Filter body whose pod carries
// strings of quotes, backslashes and JSON punctuation is split where JSON
// says its values end: the call is answered 200 with the pod fitted, and a
// whole Node object sent with such a label comes back as it was sent.
// Treating every quote as a string's end (ignoring the backslashes before
// it) makes it fail at once on `\"`.
func TestPropSplitReadsEscapedStrings(t *testing.T) {
	ext, names := memExtender(t, 1)
	h := ext.Handler()
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOf(rapid.SampledFrom([]rune{'"', '\\', 'a', '}', ']', ',', ':', '{', '[', ' '})).Draw(t, "s")
		pod := gpuPod("p", 8000)
		pod.Annotations = map[string]string{"example.com/note": s}
		body, err := json.Marshal(extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/filter", bytes.NewReader(body)))
		var res extenderv1.ExtenderFilterResult
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &res) != nil || res.Error != "" || res.NodeNames == nil || len(*res.NodeNames) != 1 {
			t.Fatalf("annotation %q: %d %s", s, rec.Code, rec.Body.String())
		}
	})
}
