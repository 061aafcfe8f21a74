package expectations

import "errors"

// ErrInvalidOwner is wrapped by every error about an unusable owner: an empty UID
// under ByUID identity, an empty name under ByName identity, or a Forget that
// names nothing.
var ErrInvalidOwner = errors.New("expectations: invalid owner")

// ErrInvalidRecord is wrapped by every error about a Record or Ref that cannot
// name an item: an unknown action, a delete without a pod name, a create with
// neither a pod name nor a token, or a negative timeout other than Never.
var ErrInvalidRecord = errors.New("expectations: invalid record")

// ErrInvalidOptions is wrapped by every error Options.Validate returns.
var ErrInvalidOptions = errors.New("expectations: invalid options")
