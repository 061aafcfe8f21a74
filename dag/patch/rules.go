package patch

// Key identifies the items of a keyed list by the values of Fields taken
// together. A field missing from an item takes its value from Defaults; a
// field neither present nor defaulted makes the key not apply to the item.
type Key struct {
	Fields   []string
	Defaults map[string]string
	// EmptyIsMissing makes a field holding the empty string count as
	// missing, as Kubernetes reads an empty toleration key: no key.
	EmptyIsMissing bool
}

// Rules is a merge's data: which lists are keyed, which fields form one-of
// groups, and which are replaced whole. Fields are matched by name at any
// depth.
type Rules struct {
	// Keys maps a list field's name to its keys, tried in order: an item is
	// identified by the first key that applies to it. A patch item to which
	// no key applies is an error; a template item without one is kept and
	// never matched. A list whose name is absent is replaced whole.
	Keys map[string][]Key
	// OneOf maps the name of the field holding an object (for a list item,
	// the list's name) to its groups of mutually exclusive fields.
	OneOf map[string][][]string
	// Replace names the fields whose value a patch replaces whole.
	Replace map[string]bool
}

// byName keys items by their name.
var byName = []Key{{Fields: []string{"name"}}}

// DefaultRules returns the rules of the package comment (Volcano's override
// design). Each call returns fresh maps, so a caller may extend its copy.
func DefaultRules() Rules {
	handler := []string{"exec", "httpGet", "tcpSocket", "grpc", "sleep"}
	return Rules{
		Keys: map[string][]Key{
			"tasks":               byName,
			"containers":          byName,
			"initContainers":      byName,
			"ephemeralContainers": byName,
			"env":                 byName,
			"imagePullSecrets":    byName,
			"volumes":             {{Fields: []string{"name"}}, {Fields: []string{"mountPath"}}},
			"volumeMounts":        {{Fields: []string{"mountPath"}}},
			"ports":               {{Fields: []string{"containerPort", "protocol"}, Defaults: map[string]string{"protocol": "TCP"}}},
			"hostAliases":         {{Fields: []string{"ip"}}},
			// Tolerations merge by key, as Volcano's design for JobFlow
			// overrides says (docs/design/jobflow/job-template-parameter-overriding.md
			// in volcano-sh/volcano: "by key, update matching toleration").
			// Operator and effect only tell apart the tolerations without a
			// key (an empty key with operator Exists tolerates every taint).
			"tolerations": {{Fields: []string{"key"}, EmptyIsMissing: true},
				{Fields: []string{"operator", "effect"}, Defaults: map[string]string{"operator": "Equal", "effect": ""}}},
		},
		OneOf: map[string][][]string{
			"volumes": {
				{"hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
					"glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI",
					"fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk",
					"projected", "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image"},
				{"volumeClaimName", "volumeClaim"}, // a vcjob's job-level volume
			},
			"livenessProbe":  {handler},
			"readinessProbe": {handler},
			"startupProbe":   {handler},
			"postStart":      {handler},
			"preStop":        {handler},
			"env":            {{"value", "valueFrom"}},
			"valueFrom":      {{"fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef"}},
		},
		Replace: map[string]bool{"affinity": true, "securityContext": true},
	}
}

// empty reports whether r sets no rule at all (the zero Rules).
func (r Rules) empty() bool { return r.Keys == nil && r.OneOf == nil && r.Replace == nil }
