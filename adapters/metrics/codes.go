package metrics

import (
	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
	"github.com/plancore/plancore/reconcile"
)

// The declared label values. A value outside its list is exported as
// "other", so a label's cardinality is bounded by its core's constants,
// whatever a caller passes in. TestLabelsListEveryDeclaredConstant reads the
// cores' sources and fails when a constant is added there and not here.
var (
	capacityExclusions = set(capacity.ReasonInvalidNode, capacity.ReasonStaleHeartbeat, capacity.ReasonCapacityExceeded,
		capacity.ReasonCPUOverThreshold, capacity.ReasonGPUOverThreshold, capacity.ReasonMemoryOverThreshold,
		capacity.ReasonUsageUnknown, capacity.ReasonDuplicateNode, capacity.ReasonReserveRefused, capacity.ReasonReserved)
	jobOutcomes = set(capacity.JobOutcomes()...)

	reconcileReasons = set(reconcile.ReasonOK, reconcile.ReasonSuspendDeleteAll, reconcile.ReasonSuspended,
		reconcile.ReasonSuspendRequested, reconcile.ReasonRecreateSpecChanged, reconcile.ReasonRecreateVersionSkip,
		reconcile.ReasonExpectationsPending, reconcile.ReasonHeadTerminalPhase, reconcile.ReasonHeadContainerExited,
		reconcile.ReasonHeadCreate, reconcile.ReasonHeadRestartDisabled, reconcile.ReasonHeadPredecessorTerminating,
		reconcile.ReasonMultipleHeads, reconcile.ReasonMTLSNotReady, reconcile.ReasonWorkerTerminalPhase,
		reconcile.ReasonWorkerContainerExited, reconcile.ReasonUnhealthyWorkers, reconcile.ReasonWorkersToDelete,
		reconcile.ReasonWorkersToDeleteNotMember, reconcile.ReasonWorkersToDeleteAbsent, reconcile.ReasonScaleUp,
		reconcile.ReasonScaleDown, reconcile.ReasonScaleDownLeftToAutoscaler, reconcile.ReasonGroupSuspended,
		reconcile.ReasonUnhealthyReplicaGroup, reconcile.ReasonIncompleteReplicaGroup, reconcile.ReasonReplicaGroupCreate,
		reconcile.ReasonReplicaGroupFormationRetry, reconcile.ReasonReplicaGroupFormationBackoff,
		reconcile.ReasonReplicaGroupFormationTimeout, reconcile.ReasonReplicaGroupForming, reconcile.ReasonLegacyMultiHostPods,
		reconcile.ReasonNotMultipleOfHosts, reconcile.ReasonInvalidNumOfHosts, reconcile.ReasonGroupNotInSpec,
		reconcile.ReasonForeignOwner, reconcile.ReasonBurstLimited, reconcile.ReasonNotVisited)
	reconcileKinds = set(reconcile.ActionCreatePod, reconcile.ActionCreateReplicaGroup, reconcile.ActionDeletePod,
		reconcile.ActionDeleteAllOf, reconcile.ActionPatchPodAnnotations)

	dagReasons = set(dag.ReasonDependency, dag.ReasonBackoff, dag.ReasonParallelism, dag.ReasonMainNotFinal,
		dag.ReasonNameConflict, dag.ReasonRetrying, dag.ReasonInvalidSpec, dag.ReasonCycle, dag.ReasonUnknownTarget,
		dag.ReasonProbe, dag.ReasonDependenciesMet, dag.ReasonRetry, dag.ReasonFinally, dag.ReasonRetention,
		dag.ReasonRecreate)

	lockReasons = set(lock.ReasonUnlocked, lock.ReasonSameOwner, lock.ReasonExpired, lock.ReasonMalformed,
		lock.ReasonFutureTimestamp, lock.ReasonHolderGone, lock.ReasonHolderReplaced, lock.ReasonHolderTerminal,
		lock.ReasonHeldByOther, lock.ReasonHolderAllocating, lock.ReasonHolderUnknown, lock.ReasonOwner,
		lock.ReasonLegacyReleasable, lock.ReasonForced, lock.ReasonNotLocked, lock.ReasonNotOwner,
		lock.ReasonChangedSinceFirstRead)
	lockKinds = set(lock.Acquire, lock.AlreadyHeld, lock.StealExpired, lock.StealDangling, lock.Refuse, lock.Invalid,
		lock.Release, lock.NoOp)

	gpuReasons = set(gpu.ReasonRead, gpu.ReasonRereadAfterUnknown, gpu.ReasonAcquire, gpu.ReasonRetryRollback,
		gpu.ReasonBackoff, gpu.ReasonMarkAllocating, gpu.ReasonBind, gpu.ReasonReport, gpu.ReasonMarkFailed,
		gpu.ReasonFailureRollback, gpu.ReasonForget, gpu.ReasonCardNotHealth, gpu.ReasonCardCordoned, gpu.ReasonCardTypeMismatch,
		gpu.ReasonNumaNotFit, gpu.ReasonCardUUIDMismatch, gpu.ReasonCardTimeSlicingExhausted, gpu.ReasonExclusiveDeviceAllocateConflict,
		gpu.ReasonResourceQuotaNotFit, gpu.ReasonCardInsufficientMemory, gpu.ReasonCardInsufficientCore, gpu.ReasonCardComputeUnitsExhausted,
		gpu.ReasonAllocatedCardsInsufficientRequest, gpu.ReasonNodeInsufficientDevice, gpu.ReasonCardMigTopologyInfeasible, gpu.ReasonModeNotFit, gpu.ReasonNodeFits,
		gpu.ReasonNodeUnfit, gpu.ReasonNodeChosen, gpu.ReasonNoNodeFits, gpu.ReasonVendorUnreadable)

	expectationsReasons = set(expectations.ReasonUnseen, expectations.ReasonPresent, expectations.ReasonUnresolved,
		expectations.ReasonExpired)
)

// Other is the label value of every code, kind or outcome a core does not
// declare (including the empty one).
const Other = "other"

func set[T ~string](vs ...T) map[string]bool {
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[string(v)] = true
	}
	return m
}

// label returns v when declared is true for it, else Other.
func label[T ~string](declared map[string]bool, v T) string {
	if declared[string(v)] {
		return string(v)
	}
	return Other
}
