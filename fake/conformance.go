package fake

import "fmt"

// Violation is one breach of an executor contract found by a conformance check.
type Violation struct {
	// Check names the contract clause, e.g. "delete tolerates not found".
	Check string
	// Detail says what the implementation did instead.
	Detail string
}

// String renders the violation for test failure messages.
func (v Violation) String() string {
	return fmt.Sprintf("%s: %s", v.Check, v.Detail)
}
