package dag

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
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

// Check validates wf's spec for admission and returns nil or a
// *plancore.InvalidError wrapping ErrInvalidInput that lists every
// error-severity issue (warnings are left out), deterministically ordered.
// Each field.Error names the spec field (spec.flows[2].dependsOn.targets[1])
// and the bad value; its Detail starts with the issue kind, "Cycle: ...",
// so the codes of Lint stay readable, and a cycle's Detail carries its
// witness path.
func Check(wf Workflow, opt Options) error {
	return issuesError(Lint(wf, opt))
}

// issuesError turns the error-severity issues into the InvalidError Check
// returns.
func issuesError(is []Issue) error {
	var errs field.ErrorList
	for _, i := range is {
		if i.Severity == SeverityError {
			errs = append(errs, i.fieldError())
		}
	}
	return plancore.Invalid(ErrInvalidInput, errs)
}

// fieldError is the issue as a field.Error under the spec's path.
func (i Issue) fieldError() *field.Error {
	path := "spec"
	switch {
	case strings.HasPrefix(i.Field, "metadata."):
		path = i.Field
	case i.Field != "":
		path += "." + i.Field
	}
	t := field.ErrorTypeInvalid
	switch i.Kind {
	case IssueEmptyName:
		t = field.ErrorTypeRequired
	case IssueDuplicateFlow, IssueDuplicateTarget:
		t = field.ErrorTypeDuplicate
	case IssueUnknownTarget:
		t = field.ErrorTypeNotFound
	case IssueSpecImmutable:
		t = field.ErrorTypeForbidden
	}
	return &field.Error{Type: t, Field: path, BadValue: i.Value, Detail: string(i.Kind) + ": " + i.Message}
}
