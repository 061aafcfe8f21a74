package main

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// installCRDs creates the JobFlow and JobTemplate CRDs and waits until both
// are served.
func installCRDs(ctx context.Context, c client.Client) error {
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{jobFlowCRD(), jobTemplateCRD()} {
		if err := c.Create(ctx, crd); err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
	}
	for _, kind := range []string{"JobFlowList", "JobTemplateList"} {
		if err := waitFor(ctx, func() bool {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(JobFlowGVK.GroupVersion().WithKind(kind))
			return c.List(ctx, list) == nil
		}); err != nil {
			return fmt.Errorf("%s not served: %w", kind, err)
		}
	}
	return nil
}

// waitFor polls cond every 20 ms until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// Schema helpers.
func obj(props map[string]apiextensionsv1.JSONSchemaProps, required ...string) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props, Required: required}
}

func free() apiextensionsv1.JSONSchemaProps {
	yes := true
	return apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes}
}

func str() apiextensionsv1.JSONSchemaProps { return apiextensionsv1.JSONSchemaProps{Type: "string"} }

func array(items apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
}

// flowSchema is one entry of spec.flows: Volcano's name, dependsOn and
// patch, and plancore's per-flow retry. dependsOn, patch and retry keep
// their inner fields unchecked here; dag.Check validates them with paths.
func flowSchema() apiextensionsv1.JSONSchemaProps {
	return obj(map[string]apiextensionsv1.JSONSchemaProps{
		"name":          str(),
		"dependsOn":     free(),
		"patch":         free(),
		"plancoreRetry": free(),
	}, "name")
}

// jobFlowCRD is a JobFlow CRD of the shape of Volcano's
// flow.volcano.sh/v1alpha1 JobFlow, with plancore's extensions in its spec
// and a status subresource whose content (Volcano's lists and plancore's
// bookkeeping) is kept as written.
func jobFlowCRD() *apiextensionsv1.CustomResourceDefinition {
	spec := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"flows":               array(flowSchema()),
		"plancoreFinally":     array(flowSchema()),
		"jobRetainPolicy":     {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"retain"`)}, {Raw: []byte(`"delete"`)}}},
		"plancoreParallelism": {Type: "integer", Minimum: ptr(0.0)},
		"plancoreFailFast":    {Type: "boolean"},
		"plancoreRetry":       free(),
	})
	return crd("jobflows", "jobflow", "JobFlow", spec)
}

// jobTemplateCRD is a JobTemplate CRD. Volcano's holds a Volcano Job spec;
// this one holds a batch/v1 JobSpec (kept as written, validated when a Job
// is created from it).
func jobTemplateCRD() *apiextensionsv1.CustomResourceDefinition {
	return crd("jobtemplates", "jobtemplate", "JobTemplate", free())
}

func crd(plural, singular, kind string, spec apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
	schema := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"apiVersion": str(),
		"kind":       str(),
		"metadata":   {Type: "object"},
		"spec":       spec,
		"status":     free(),
	})
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + JobFlowGVK.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: JobFlowGVK.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: singular, Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: JobFlowGVK.Version, Served: true, Storage: true,
				Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &schema},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// jobTemplate is the JobTemplate of one flow: a one-pod batch/v1 Job.
func jobTemplate(ns, flow string) *unstructured.Unstructured {
	jt := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"backoffLimit": int64(0),
			"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never",
				"containers": []any{map[string]any{
					"name": "main", "image": "busybox:1.36",
					"command": []any{"sh", "-c", "echo " + flow},
				}},
			}},
		},
	}}
	jt.SetGroupVersionKind(JobTemplateGVK)
	jt.SetNamespace(ns)
	jt.SetName(flow)
	return jt
}

// jobFlow is the example's workflow: a diamond (prepare; train-a and
// train-b; evaluate), a tail (publish), a retry (train-b, once, no backoff)
// and a finally flow (report). train-a's patch sets an environment variable
// of the template's container.
const jobFlowYAML = `
flows:
- name: prepare
- name: train-a
  dependsOn: {targets: [prepare]}
  patch:
    jobSpec:
      template:
        spec:
          containers:
          - name: main
            env:
            - {name: LEARNING_RATE, value: "0.01"}
- name: train-b
  dependsOn: {targets: [prepare]}
  plancoreRetry: {limit: 1}
- name: evaluate
  dependsOn: {targets: [train-a, train-b]}
- name: publish
  dependsOn: {targets: [evaluate]}
plancoreFinally:
- name: report
jobRetainPolicy: retain
`

func jobFlow(ns, name string) (*unstructured.Unstructured, error) {
	spec := map[string]any{}
	if err := yaml.Unmarshal([]byte(jobFlowYAML), &spec); err != nil {
		return nil, err
	}
	jf := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	jf.SetGroupVersionKind(JobFlowGVK)
	jf.SetNamespace(ns)
	jf.SetName(name)
	return jf, nil
}
