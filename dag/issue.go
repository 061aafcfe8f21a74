package dag

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// IssueKind names one validation or planning finding.
type IssueKind string

// Issue kinds, in the order they sort within one flow.
const (
	IssueEmptyName            IssueKind = "EmptyName"
	IssueDuplicateFlow        IssueKind = "DuplicateFlow"
	IssueNameInvalid          IssueKind = "NameInvalid"
	IssueLabelValueInvalid    IssueKind = "LabelValueInvalid"
	IssueMixedDependencyForms IssueKind = "MixedDependencyForms"
	IssueExpressionSyntax     IssueKind = "ExpressionSyntax"
	IssueUnknownTarget        IssueKind = "UnknownTarget"
	IssueUnknownResult        IssueKind = "UnknownResult"
	IssueDuplicateTarget      IssueKind = "DuplicateTarget"
	IssueFinallyOrdering      IssueKind = "FinallyOrdering"
	IssueCycle                IssueKind = "Cycle"
	IssueRetryRange           IssueKind = "RetryRange"
	IssueProbeInvalid         IssueKind = "ProbeInvalid"
	IssuePatchInvalid         IssueKind = "PatchInvalid"
	IssueNegativeParallelism  IssueKind = "NegativeParallelism"
	IssueRetainPolicyInvalid  IssueKind = "RetainPolicyInvalid"
	IssueNeedsPlancore        IssueKind = "NeedsPlancoreStateMachine"
	IssueSpecImmutable        IssueKind = "SpecImmutable"
	IssueNameConflict         IssueKind = "NameConflict"
	IssueOrphanJob            IssueKind = "OrphanJob"
	IssueUnknownJobPhase      IssueKind = "UnknownJobPhase"
	IssueSpecChanged          IssueKind = "SpecChanged"
	IssueStatusTooLarge       IssueKind = "StatusTooLarge"
)

var issueRank = func() map[IssueKind]int {
	kinds := []IssueKind{IssueEmptyName, IssueDuplicateFlow, IssueNameInvalid, IssueLabelValueInvalid,
		IssueMixedDependencyForms, IssueExpressionSyntax, IssueUnknownTarget, IssueUnknownResult,
		IssueDuplicateTarget, IssueFinallyOrdering, IssueCycle, IssueRetryRange, IssueProbeInvalid, IssuePatchInvalid,
		IssueNegativeParallelism, IssueRetainPolicyInvalid, IssueNeedsPlancore, IssueSpecImmutable,
		IssueNameConflict, IssueOrphanJob, IssueUnknownJobPhase, IssueSpecChanged, IssueStatusTooLarge}
	m := make(map[IssueKind]int, len(kinds))
	for i, k := range kinds {
		m[k] = i
	}
	return m
}()

// Severity says whether an issue makes the spec invalid.
type Severity string

// Severities.
const (
	SeverityError   Severity = "Error"
	SeverityWarning Severity = "Warning"
)

// Issue is one finding. Issues sort by (Flow, Kind, Target).
type Issue struct {
	Kind     IssueKind
	Severity Severity
	// Flow is the index of the flow concerned, main flows first, then
	// finally flows (len(Spec.Flows)+i); -1 for the workflow itself and
	// len(Flows)+len(Finally) for things outside the spec (jobs).
	Flow int
	// Field is the offending field's path, e.g. "flows[2].dependsOn.targets[1]".
	Field string
	// Target is the index within the field (a target, a token offset), or -1.
	Target int
	// Value is the offending value (a name, a phase, an expression).
	Value string
	// Members are the flows of a reported cycle, in spec order.
	Members []string
	Message string
}

// String renders the issue on one line.
func (i Issue) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", i.Severity, i.Kind)
	if i.Field != "" {
		fmt.Fprintf(&b, " %s", i.Field)
	}
	if i.Value != "" {
		fmt.Fprintf(&b, " %q", i.Value)
	}
	fmt.Fprintf(&b, ": %s", i.Message)
	return b.String()
}

func compareIssues(a, b Issue) int {
	return cmp.Or(cmp.Compare(a.Flow, b.Flow), cmp.Compare(issueRank[a.Kind], issueRank[b.Kind]),
		cmp.Compare(a.Target, b.Target), cmp.Compare(a.Field, b.Field), cmp.Compare(a.Message, b.Message))
}

func sortIssues(is []Issue) { slices.SortStableFunc(is, compareIssues) }

// HasErrors reports whether any issue has SeverityError.
func HasErrors(is []Issue) bool {
	for _, i := range is {
		if i.Severity == SeverityError {
			return true
		}
	}
	return false
}

// ValidationError carries every error-severity issue of a spec; it wraps
// ErrInvalidSpec.
type ValidationError struct {
	Workflow string
	Issues   []Issue
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v %s: %d issue(s)", ErrInvalidSpec, e.Workflow, len(e.Issues))
	for _, i := range e.Issues {
		b.WriteString("; ")
		b.WriteString(i.String())
	}
	return b.String()
}

// Unwrap returns ErrInvalidSpec.
func (e *ValidationError) Unwrap() error { return ErrInvalidSpec }

// Check validates wf's spec and returns nil or a *ValidationError listing
// every error (warnings are left out), deterministically ordered.
func Check(wf Workflow, opt Options) error {
	var errs []Issue
	for _, i := range Validate(wf, opt) {
		if i.Severity == SeverityError {
			errs = append(errs, i)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &ValidationError{Workflow: wf.Namespace + "/" + wf.Name, Issues: errs}
}
