package reconcile

import "errors"

// ErrInvalidCluster is wrapped by every error about a malformed Snapshot.Cluster
// (a field that cannot produce a valid pod); the message names the field and value.
var ErrInvalidCluster = errors.New("reconcile: invalid cluster")

// ErrInvalidSpec is wrapped by Cluster.Validate for specs KubeRay's webhook
// would reject but Decide can still plan (for example min > max).
var ErrInvalidSpec = errors.New("reconcile: invalid spec")

// ErrInvalidOptions is wrapped by Options.Validate.
var ErrInvalidOptions = errors.New("reconcile: invalid options")

// ErrHash is wrapped when the spec hash cannot be computed.
var ErrHash = errors.New("reconcile: cannot hash spec")

// ErrPodBuilder is wrapped when Options.PodBuilder fails.
var ErrPodBuilder = errors.New("reconcile: pod builder failed")

// ErrInvalidPlan is wrapped by Apply when a plan is malformed (an action
// without its payload).
var ErrInvalidPlan = errors.New("reconcile: invalid plan")
