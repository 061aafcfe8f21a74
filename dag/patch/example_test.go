package patch_test

import (
	"fmt"

	"github.com/plancore/plancore/dag/patch"
)

// ExampleMerge overrides one container of a template: its image, one env
// variable and its command (a plain list, replaced whole), and adds a
// toleration, merged by key; the sidecar is left alone.
func ExampleMerge() {
	template := []byte(`{"spec":{"containers":[
		{"name":"train","image":"trainer:1","command":["python","train.py"],"env":[{"name":"EPOCHS","value":"10"},{"name":"LR","value":"0.1"}]},
		{"name":"logs","image":"fluent-bit:3"}],
		"tolerations":[{"key":"gpu","operator":"Exists"}]}}`)
	flowPatch := []byte(`{"spec":{"containers":[
		{"name":"train","image":"trainer:2","command":["python","train.py","--resume"],"env":[{"name":"LR","value":"0.01"}]}],
		"tolerations":[{"key":"spot","operator":"Exists"}]}}`)
	merged, err := patch.Merge(template, flowPatch)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(merged))
	// Output:
	// {"spec":{"containers":[{"command":["python","train.py","--resume"],"env":[{"name":"EPOCHS","value":"10"},{"name":"LR","value":"0.01"}],"image":"trainer:2","name":"train"},{"image":"fluent-bit:3","name":"logs"}],"tolerations":[{"key":"gpu","operator":"Exists"},{"key":"spot","operator":"Exists"}]}}
}
