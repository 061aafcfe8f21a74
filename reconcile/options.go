package reconcile

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"

	corev1 "k8s.io/api/core/v1"
)

// Gate is a feature switch whose zero value means the feature's default.
type Gate string

const (
	// GateDefault leaves the feature at its default (on for both gates).
	GateDefault Gate = ""
	// GateOn enables the feature.
	GateOn Gate = "On"
	// GateOff disables the feature.
	GateOff Gate = "Off"
)

// Enabled reports whether the gate is on; def is the feature's default.
func (g Gate) Enabled(def bool) bool {
	switch g {
	case GateOn:
		return true
	case GateOff:
		return false
	}
	return def
}

// Gates are KubeRay's feature gates that change pod reconciliation. Unlike
// KubeRay, they come in through Options, never from a process registry.
type Gates struct {
	// StatusConditions is RayClusterStatusConditions (Beta, default on).
	StatusConditions Gate
	// MultiHostIndexing is RayMultiHostIndexing (Beta, default on, #4572).
	MultiHostIndexing Gate
	// NetworkPolicy, MTLS and HistoryServer are RayClusterNetworkPolicy,
	// RayClusterMTLS and RayClusterHistoryServer (Alpha, default off): off,
	// Decide refuses a spec with networkPolicy, tlsOptions or
	// historyServerOptions, as KubeRay's controller does; on, it plans such
	// a spec without checking those parts' contents.
	NetworkPolicy Gate
	MTLS          Gate
	HistoryServer Gate
}

// NameMode selects how created pods are named.
type NameMode string

const (
	// NameModeGenerateName leaves the suffix to the API server (KubeRay).
	NameModeGenerateName NameMode = "GenerateName"
	// NameModeDerived derives the suffix from Snapshot.Seed, so the plan knows
	// every name, carries exact Create expectations and retries idempotently.
	NameModeDerived NameMode = "Derived"
)

// PodDefaults are the operator-wide additions to every pod (KubeRay's
// DefaultPodLabels, DefaultPodAnnotations, sidecars and default envs).
type PodDefaults struct {
	// Labels and Annotations are added only where the key is absent.
	Labels      map[string]string
	Annotations map[string]string
	// Sidecars are appended to the pod's containers.
	Sidecars []corev1.Container
	// Env is appended to the Ray container's env where the name is absent.
	Env []corev1.EnvVar
}

// PodBuilder transforms a pod body built from a template before identity is
// applied (for example to add KubeRay's `ray start` command, env and probes).
// It receives a pod it owns and must be pure: same input, same output.
type PodBuilder func(pod *corev1.Pod, b BuildInfo) error

// BuildInfo tells a PodBuilder which pod it is building.
type BuildInfo struct {
	Cluster      *Cluster
	Head         bool
	Group        string
	ReplicaIndex int
	HostIndex    int
}

// Compat holds the restore switches: each one brings back one KubeRay v1.7.0
// behaviour that plancore fixes by default. KubeRayV170 sets them all.
type Compat struct {
	// ZeroHostsMeansZeroPods restores numOfHosts 0 giving 0 desired pods
	// (KubeRay #2084; plancore treats 0 as 1).
	ZeroHostsMeansZeroPods bool
	// BlindWorkersToDelete restores a bare delete by name for every listed
	// name, without checking that the pod belongs to the group (KubeRay #733,
	// #3738).
	BlindWorkersToDelete bool
	// CountTerminatingPods restores counting terminating pods: they are
	// checked, deleted again and picked as victims (KubeRay #4078, #1936).
	CountTerminatingPods bool
	// NameOrderVictims restores taking the first N pods by name as scale-down
	// victims (KubeRay #747), and orders replica groups by name instead of
	// ranking them (KubeRay walks a map).
	NameOrderVictims bool
	// IgnoreUnlabelledMultiHostPods restores ignoring the pods of a
	// multi-host group that carry no replica name.
	IgnoreUnlabelledMultiHostPods bool
	// DeleteIncompleteGroupsImmediately restores deleting a partial replica
	// group on the next pass even if its creation is still being retried
	// (KubeRay #4540).
	DeleteIncompleteGroupsImmediately bool
	// StopAtFirstGroupRequeue restores a requeue in one group aborting every
	// later group for this pass.
	StopAtFirstGroupRequeue bool
	// StrictNotFound restores KubeRay's treatment of NotFound on unhealthy and
	// head deletes as a failure.
	StrictNotFound bool
	// MatchByLabelsOnly restores the anchor's label-only pod selection; by
	// default a pod whose controller is another RayCluster incarnation (a
	// different UID) is ignored.
	MatchByLabelsOnly bool
	// UnlimitedBurst restores creating every missing pod in one pass when
	// Options.BurstReplicas is zero: KubeRay has no cap, so a group scaled to
	// a huge replica count puts that many pods into one plan. A BurstReplicas
	// the caller sets still holds.
	UnlimitedBurst bool
}

// Options configure Decide. The zero value means the documented defaults:
// operator version DefaultOperatorVersion, both gates at KubeRay's defaults,
// GenerateName pod names, a burst of DefaultBurstReplicas and a formation
// timeout of DefaultGroupFormationTimeout.
type Options struct {
	Gates Gates
	// OperatorVersion is KUBERAY_VERSION: it is written to the head's
	// ray.io/kuberay-version annotation and compared by the Recreate check.
	// Empty means DefaultOperatorVersion; set it to the version your operator
	// reports, so heads it created are not taken for another operator's.
	OperatorVersion string
	// RandomPodDelete is ENABLE_RANDOM_POD_DELETE, parsed by the caller: with
	// autoscaling on, the reconciler may still delete surplus pods.
	RandomPodDelete bool
	// DeterministicHeadName is ENABLE_DETERMINISTIC_HEAD_POD_NAME.
	DeterministicHeadName bool
	// NameMode defaults to NameModeGenerateName.
	NameMode NameMode
	// PodDefaults are added to every pod.
	PodDefaults PodDefaults
	// PodBuilder, when set, transforms each pod body before identity is applied.
	PodBuilder PodBuilder `json:"-"`
	// GroupFormationTimeout bounds how long a partial multi-host replica group
	// is retried before it is deleted (KubeRay #4540). Zero means 10 minutes.
	GroupFormationTimeout time.Duration
	// BurstReplicas caps the pods one group creates in one plan, like the
	// ReplicaSet controller's burstReplicas; the rest come in the next passes.
	// Zero means 500. KubeRay has no cap: a group scaled to a huge replica
	// count would otherwise put that many pods into one plan.
	BurstReplicas int
	// Compat restores KubeRay behaviours; KubeRayV170().Compat is all of
	// them, and assigning it alone makes pod reconciliation KubeRay-exact.
	Compat Compat
}

// DefaultOperatorVersion is OperatorVersion's default: the KubeRay release
// whose pod reconciliation plancore follows.
const DefaultOperatorVersion = "v1.7.0"

// DefaultBurstReplicas is BurstReplicas' default.
const DefaultBurstReplicas = 500

// DefaultGroupFormationTimeout is GroupFormationTimeout's default.
const DefaultGroupFormationTimeout = 10 * time.Minute

// KubeRayV170 returns the options that reproduce KubeRay v1.7.0's pod
// reconciliation exactly, defects included: OperatorVersion "v1.7.0" and every
// Compat switch on, UnlimitedBurst among them (KubeRay creates every missing
// pod in one pass). Every behaviour of the preset is in its Compat, so
// assigning only o.Compat = KubeRayV170().Compat is KubeRay-exact too. A
// caller may still set BurstReplicas or change any field afterwards.
func KubeRayV170() Options {
	return Options{
		OperatorVersion: "v1.7.0",
		Compat: Compat{
			UnlimitedBurst:                    true,
			ZeroHostsMeansZeroPods:            true,
			BlindWorkersToDelete:              true,
			CountTerminatingPods:              true,
			NameOrderVictims:                  true,
			IgnoreUnlabelledMultiHostPods:     true,
			DeleteIncompleteGroupsImmediately: true,
			StopAtFirstGroupRequeue:           true,
			StrictNotFound:                    true,
			MatchByLabelsOnly:                 true,
		},
	}
}

// NoBurstLimit as BurstReplicas creates every missing pod in one plan, as
// KubeRay does: no group can ask for more pods than this.
const NoBurstLimit = math.MaxInt32

// Validate reports every invalid option at once, in a *plancore.InvalidError
// wrapping ErrInvalidOptions.
func (o Options) Validate() error {
	var errs field.ErrorList
	switch o.NameMode {
	case "", NameModeGenerateName, NameModeDerived:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("nameMode"), o.NameMode, []string{string(NameModeGenerateName), string(NameModeDerived)}))
	}
	for _, g := range []struct {
		name string
		g    Gate
	}{{"statusConditions", o.Gates.StatusConditions}, {"multiHostIndexing", o.Gates.MultiHostIndexing},
		{"networkPolicy", o.Gates.NetworkPolicy}, {"mtls", o.Gates.MTLS}, {"historyServer", o.Gates.HistoryServer}} {
		switch g.g {
		case GateDefault, GateOn, GateOff:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("gates", g.name), g.g, []string{string(GateDefault), string(GateOn), string(GateOff)}))
		}
	}
	if o.BurstReplicas < 0 {
		errs = append(errs, field.Invalid(field.NewPath("burstReplicas"), o.BurstReplicas, "must not be negative (0 means 500)"))
	}
	if o.GroupFormationTimeout < 0 {
		errs = append(errs, field.Invalid(field.NewPath("groupFormationTimeout"), o.GroupFormationTimeout.String(), "must not be negative (0 means 10m)"))
	}
	errs = append(errs, validateLabels(func() *field.Path { return field.NewPath("podDefaults", "labels") }, o.PodDefaults.Labels)...)
	return plancore.Invalid(ErrInvalidOptions, errs)
}

func (o Options) statusConditions() bool  { return o.Gates.StatusConditions.Enabled(true) }
func (o Options) multiHostIndexing() bool { return o.Gates.MultiHostIndexing.Enabled(true) }
func (o Options) derivedNames() bool      { return o.NameMode == NameModeDerived }
func (o Options) burst() int {
	switch {
	case o.BurstReplicas > 0:
		return o.BurstReplicas
	case o.Compat.UnlimitedBurst:
		return NoBurstLimit
	}
	return DefaultBurstReplicas
}

// operatorVersion is OperatorVersion or its default.
func (o Options) operatorVersion() string {
	if o.OperatorVersion == "" {
		return DefaultOperatorVersion
	}
	return o.OperatorVersion
}

func (o Options) formationTimeout() time.Duration {
	if o.GroupFormationTimeout == 0 {
		return DefaultGroupFormationTimeout
	}
	return o.GroupFormationTimeout
}
