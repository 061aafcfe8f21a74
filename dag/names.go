package dag

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The name checks below are apimachinery's rules; apimachinery matches them
// with regular expressions, about a microsecond a name, which alone took
// 10,000 flows past the 10 ms validation budget (BenchmarkValidate10k).
// isDNS1123Label and isLabelValue are the same rules as byte scans;
// apimachinery is called only for a name they refuse, to word the message.
// TestPropNameRulesMatchApimachinery holds them equal.

// isDNS1123Label is validation.IsDNS1123Label reporting no problem.
func isDNS1123Label(s string) bool {
	if len(s) == 0 || len(s) > validation.DNS1123LabelMaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0 && i < len(s)-1) {
			return false
		}
	}
	return true
}

// isLabelValue is validation.IsValidLabelValue reporting no problem.
func isLabelValue(s string) bool {
	if len(s) > validation.LabelValueMaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || i == len(s)-1 || c != '-' && c != '_' && c != '.') {
			return false
		}
	}
	return true
}

// dns1123LabelProblem words why s is no DNS-1123 label, "" when it is one.
func dns1123LabelProblem(s string) string {
	if isDNS1123Label(s) {
		return ""
	}
	return strings.Join(validation.IsDNS1123Label(s), "; ")
}

// labelValueProblem words why s is no label value, "" when it is one.
func labelValueProblem(s string) string {
	if isLabelValue(s) {
		return ""
	}
	return strings.Join(validation.IsValidLabelValue(s), "; ")
}
