// Package patch merges a flow's patch (dag.CreateJob.Patch) into a job
// template, on generic JSON, with the rules documented below. It is the one
// implementation of the merge: the dag core only carries the patch, and an
// executor that materialises jobs of any kind (a Volcano vcjob, a batch/v1
// Job through adapters/kube, a custom resource) calls Merge on the template's
// JSON.
//
// # Usage
//
//	tmpl, _ := json.Marshal(cachedTemplate) // a copy: the cache is never touched
//	merged, err := patch.Merge(tmpl, create.Patch)
//	if err != nil { ... }                   // names the offending path
//	// unmarshal merged into a fresh object and create it
//
// Validate checks a patch on its own (a JSON object within MaxBytes and
// MaxDepth, every keyed item with its key, no two members of a one-of group,
// known directives); the dag package runs it when it checks a spec, since a
// flow's patch is user input that reaches every merge.
//
// # Rules
//
// Objects merge field by field; a scalar, or a value of another type,
// replaces; null removes the field. Lists named in the key table merge by
// their key: a patch item whose key matches a template item merges into it
// field by field, any other item is appended, in patch order. Every other
// list (command, args, policies, …) is replaced whole. Nulls inside new or
// replaced objects are dropped, as in JSON merge patch (RFC 7396).
//
// DefaultRules follows Volcano's design for per-flow overrides (Volcano
// #4475, "job template parameter overriding"):
//
//   - tasks, containers, initContainers, ephemeralContainers, env and
//     imagePullSecrets are keyed by name; volumes by name, or by mountPath
//     for an item without a name (a vcjob's job-level volumes have none);
//     volumeMounts by mountPath; ports by containerPort and protocol
//     (default TCP); hostAliases by ip; tolerations by key alone, so a
//     patch of a toleration's key updates it whatever its operator and
//     effect, and tolerations without a key (or with an empty one, which
//     with operator Exists tolerates every taint) by operator (default
//     Equal) and effect, so that a key-less toleration can be added;
//   - members of a one-of group are replaced whole, and setting one removes
//     the others: a volume's source (emptyDir, configMap, …; a vcjob volume's
//     volumeClaimName or volumeClaim), a probe's or lifecycle hook's handler
//     (exec, httpGet, tcpSocket, grpc, sleep), an env variable's value or
//     valueFrom, and valueFrom's reference;
//   - affinity and securityContext are replaced whole.
//
// An object that holds "$patch": "replace" replaces the template's value
// whole, wherever it is; a keyed-list item with "$patch": "replace" replaces
// the item it matches, one with "$patch": "delete" removes it; a keyed list
// holding the item {"$patch": "replace"} is replaced whole by its other
// items. These are the directives of Kubernetes' strategic merge patch.
//
// Merge is linear in the size of its inputs: keyed lists are matched through
// an index, and an error's path is rendered only when there is an error.
//
// # Determinism
//
// Merge is a pure function: equal inputs give equal bytes. Object keys come
// out sorted (encoding/json's map order); numbers keep their text. Neither
// input is modified (Volcano's open PR #4491 mutated the cached template,
// #4720).
//
// # Compatibility
//
// Kubernetes' strategic merge patch keys most of the same lists for the
// built-in types but merges a volume's sources and a probe's handlers field
// by field, keys tolerations by nothing (it replaces them), keys mounts by
// name alone, and needs the Go type; this package needs neither, so it also
// serves vcjob templates, whose tasks list has no strategic-merge metadata.
// Volcano's design merges volumeMounts by "mountPath or name"; keying by
// mountPath alone keeps two mounts off one path, which the API server
// refuses. The design replaces a probe whole; here only its handler is, so a
// patch can change a probe's period alone.
package patch
