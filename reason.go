package plancore

// Reason says why a core decided what it did: a Code a program matches on, a
// Message for people, and the Facts the message states, as fields, so that a
// program never parses Message.
//
// It is the one Reason of every core: each core names it with its own code
// type and facts (lock.Reason is Reason[lock.ReasonCode, NoFacts],
// reconcile.Reason is Reason[reconcile.ReasonCode, reconcile.ReasonFacts]).
// Every core follows one naming rule: a code is a constant Reason<Name> whose
// value is <Name>, and a core that renders a message renders it from Code and
// Facts in one place.
type Reason[C ~string, F any] struct {
	Code    C      `json:"code"`
	Message string `json:"message"`
	// Facts are the figures and names Message states. Which of them a reason
	// sets depends on its Code, as each core's facts type says; the others
	// are zero.
	Facts F `json:"facts,omitzero"`
}

// NoFacts is the Facts of a core whose reasons state nothing beyond their
// code and message.
type NoFacts struct{}

// String is the one rendering of a reason: "Code: Message", or the code
// alone when there is no message.
func (r Reason[C, F]) String() string {
	if r.Message == "" {
		return string(r.Code)
	}
	return string(r.Code) + ": " + r.Message
}
