package extender

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// Handler serves the extender protocol over HTTP, as kube-scheduler calls it
// with urlPrefix pointing here and filterVerb "filter", prioritizeVerb
// "prioritize" and bindVerb "bind": POST /filter, /prioritize and /bind with
// JSON bodies of k8s.io/kube-scheduler/extender/v1's types. A body that does
// not decode is answered 400 with the reason, one beyond the Limits 413
// (Filter and Prioritize: the body bound of the form Config.KubeScheduler
// names and FilterRequestValues, then the pod, the node names and each Node object
// within their own bounds; Bind: 16 KiB), one whose context ends while it waits
// for its turn to be decoded (Limits.MaxConcurrentDecodes) 503; every other
// outcome is a 200 whose result carries the error, as the protocol
// expects, but Prioritize's, which has no error field: its errors are 500.
func (s *Scheduler) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /"+FilterVerb, func(w http.ResponseWriter, r *http.Request) {
		if c, ok := s.decodeArgs(w, r); ok {
			res, chosen := s.filter(r.Context(), c)
			res.Error = clip(res.Error)
			if chosen == nil {
				reply(w, res)
				return
			}
			reply(w, filterReply{Nodes: rawNodes(c.sent, chosen), FailedNodes: res.FailedNodes,
				FailedAndUnresolvableNodes: res.FailedAndUnresolvableNodes, Error: res.Error})
		}
	})
	mux.HandleFunc("POST /"+PrioritizeVerb, func(w http.ResponseWriter, r *http.Request) {
		if c, ok := s.decodeArgs(w, r); ok {
			list, err := s.prioritize(r.Context(), c)
			if err != nil {
				// The protocol has no error field here: an error fails the
				// call, and kube-scheduler ignores this extender's scores.
				http.Error(w, clip(err.Error()), http.StatusInternalServerError)
				return
			}
			reply(w, list)
		}
	})
	mux.HandleFunc("POST /"+BindVerb, func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderBindingArgs
		if s.decode(w, r, bindRequestBytes, func(body []byte) error { return whole(body, envelopeValues, &args) }) {
			res := s.Bind(r.Context(), args)
			res.Error = clip(res.Error)
			reply(w, res)
		}
	})
	return mux
}

// decodeArgs reads a Filter or Prioritize body within the bound of the
// configured form (filterBody), then holds each part to its own bounds before
// it is decoded (parseArgs).
func (s *Scheduler) decodeArgs(w http.ResponseWriter, r *http.Request) (c call, ok bool) {
	ok = s.decode(w, r, s.filterBody, func(body []byte) error {
		var err error
		c, err = s.parseArgs(body)
		return err
	})
	return c, ok
}

// parseArgs splits an ExtenderArgs body into its parts in one pass
// (splitArgs) and decodes each within its own bounds, so that no part
// spends another's allowance: the pod within MaxPodBytes and MaxPodValues,
// the node names within MaxNodes names, at most MaxNodes Node objects each
// within MaxNodeBytes and MaxNodeValues. A Node object is decoded only as
// far as the fit reads it (name, labels, annotations, capacity and
// allocatable) and kept as it was sent, to answer with (sentNodes). Nothing
// parsed keeps a slice of body: the caller may reuse it.
func (s *Scheduler) parseArgs(body []byte) (c call, err error) {
	l := s.limits
	s.templateMu.Lock()
	last := s.sent
	s.templateMu.Unlock()
	parts, err := splitArgs(body, l, last)
	if err != nil {
		return c, err
	}
	if err := within("the pod", parts.pod, l.MaxPodBytes, l.MaxPodValues, &c.pod); err != nil {
		return c, err
	}
	if err := within("the node names", parts.names, l.namesBytes(), l.MaxNodes+1, &c.names); err != nil {
		return c, err
	}
	if parts.items == nil {
		return c, nil
	}
	c.whole = true
	c.sent, err = s.sentNodes(parts.items, last)
	return c, err
}

// partError is a part of a request refused, with its HTTP status.
type partError struct {
	status int
	msg    string
}

func (e *partError) Error() string { return e.msg }

func isNull(b json.RawMessage) bool { return len(b) == 0 || string(b) == "null" }

// within decodes b into v when it holds at most maxBytes bytes and
// maxValues JSON values; an absent or null b leaves v as it is.
func within(what string, b json.RawMessage, maxBytes int64, maxValues int, v any) error {
	if isNull(b) {
		return nil
	}
	if int64(len(b)) > maxBytes {
		return &partError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("%s: %d bytes, over the %d bytes it may take", what, len(b), maxBytes)}
	}
	if n := countValues(b, maxValues); n > maxValues {
		return &partError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("%s: over the %d JSON values it may hold", what, maxValues)}
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: not a %T: %w", what, v, err)
	}
	return nil
}

// filterReply is an ExtenderFilterResult whose Nodes are the objects as
// they were sent, not the parts the fit read.
type filterReply struct {
	Nodes                      *rawNodeList              `json:",omitempty"`
	FailedNodes                extenderv1.FailedNodesMap `json:",omitempty"`
	FailedAndUnresolvableNodes extenderv1.FailedNodesMap `json:",omitempty"`
	Error                      string                    `json:",omitempty"`
}

// decode reads a body of at most maxBytes bytes, in its turn among
// Limits.MaxConcurrentDecodes, and parses it (still in its turn),
// answering why when it cannot: 413 beyond maxBytes or a *partError's
// status, else 400. The body is read whole before it is parsed, and parse
// bounds what it decodes.
func (s *Scheduler) decode(w http.ResponseWriter, r *http.Request, maxBytes int64, parse func(body []byte) error) bool {
	if !s.acquireDecode(w, r) {
		return false
	}
	defer func() { <-s.decodes }()
	// Sized by the declared length, so a body is read into one buffer,
	// reused by the next request: what parse keeps, it copies.
	buf := bodies.Get().(*bytes.Buffer)
	defer putBody(buf)
	buf.Reset()
	buf.Grow(int(min(max(r.ContentLength, 0), maxBytes)) + bytes.MinRead)
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxBytes))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			http.Error(w, fmt.Sprintf("extender: the request body is over the %d bytes it may take (whole Node objects, sent with nodeCacheCapable false, need Config.KubeScheduler to say so)", maxBytes), http.StatusRequestEntityTooLarge)
			return false
		}
		http.Error(w, fmt.Sprintf("extender: reading the request body: %v", err), http.StatusBadRequest)
		return false
	}
	if err := parse(buf.Bytes()); err != nil {
		status := http.StatusBadRequest
		var pe *partError
		if errors.As(err, &pe) {
			status = pe.status
		}
		http.Error(w, "extender: the request body: "+err.Error(), status)
		return false
	}
	return true
}

// bodies holds request body buffers for reuse: a body of whole Nodes is
// megabytes, read on every call.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody bounds a buffer kept for reuse: a rare huge body is left
// to the collector rather than held.
const maxPooledBody = 16 << 20

func putBody(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledBody {
		bodies.Put(buf)
	}
}

// whole decodes body into v when it holds at most maxValues JSON values;
// Unmarshal refuses anything after the one value.
func whole(body []byte, maxValues int, v any) error {
	if n := countValues(body, maxValues); n > maxValues {
		return &partError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("over the %d JSON values a %T may hold", maxValues, v)}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("not one %T: %w", v, err)
	}
	return nil
}

// acquireDecode takes a turn to decode, waiting while
// Limits.MaxConcurrentDecodes requests are being decoded, until the
// request's context ends (then answered 503).
func (s *Scheduler) acquireDecode(w http.ResponseWriter, r *http.Request) bool {
	select {
	case s.decodes <- struct{}{}:
		return true
	default:
	}
	s.decodeWaiters.Add(1)
	defer s.decodeWaiters.Add(-1)
	select {
	case s.decodes <- struct{}{}:
		return true
	case <-r.Context().Done():
		http.Error(w, fmt.Sprintf("extender: busy: %d requests being decoded, and this one ended waiting: %v",
			cap(s.decodes), context.Cause(r.Context())), http.StatusServiceUnavailable)
		return false
	}
}

// maxErrorBytes bounds an error sent back: every problem of a large pod
// is named, and kube-scheduler logs what it gets.
const maxErrorBytes = 16 << 10

// clip shortens msg to maxErrorBytes, saying how much was left out.
func clip(msg string) string {
	if len(msg) <= maxErrorBytes {
		return msg
	}
	cut := maxErrorBytes
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s ... (%d more bytes)", msg[:cut], len(msg)-cut)
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Serve answers the extender protocol on addr until ctx ends, then shuts the
// server down.
func (s *Scheduler) Serve(ctx context.Context, addr string) error {
	// A client that sends its body slowly holds a decode turn: reads are
	// bounded by kube-scheduler's default httpTimeout.
	srv := &http.Server{Addr: addr, Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		_ = srv.Shutdown(context.Background())
		return nil
	}
}
