package extender

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// Handler serves the extender protocol over HTTP, as kube-scheduler calls it
// with urlPrefix pointing here and filterVerb "filter", prioritizeVerb
// "prioritize" and bindVerb "bind": POST /filter, /prioritize and /bind with
// JSON bodies of k8s.io/kube-scheduler/extender/v1's types. A body that does
// not decode is answered 400 with the reason, one beyond the Limits 413
// (Filter and Prioritize: Limits.FilterRequestBytes and
// FilterRequestValues; Bind: 16 KiB), one whose context ends while it waits
// for its turn to be decoded (Limits.MaxConcurrentDecodes) 503; every other
// outcome is a 200 whose result carries the error, as the protocol
// expects, but Prioritize's, which has no error field: its errors are 500.
func (s *Scheduler) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /filter", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderArgs
		if s.decode(w, r, s.limits.FilterRequestBytes(), s.limits.FilterRequestValues(), &args) {
			res := s.Filter(r.Context(), args)
			res.Error = clip(res.Error)
			reply(w, res)
		}
	})
	mux.HandleFunc("POST /prioritize", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderArgs
		if s.decode(w, r, s.limits.FilterRequestBytes(), s.limits.FilterRequestValues(), &args) {
			list, err := s.Prioritize(r.Context(), args)
			if err != nil {
				// The protocol has no error field here: an error fails the
				// call, and kube-scheduler ignores this extender's scores.
				http.Error(w, clip(err.Error()), http.StatusInternalServerError)
				return
			}
			reply(w, list)
		}
	})
	mux.HandleFunc("POST /bind", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderBindingArgs
		if s.decode(w, r, bindRequestBytes, envelopeValues, &args) {
			res := s.Bind(r.Context(), args)
			res.Error = clip(res.Error)
			reply(w, res)
		}
	})
	return mux
}

// decode reads one JSON value of at most maxBytes bytes and maxValues
// values into v, in its turn among Limits.MaxConcurrentDecodes, answering
// why when it cannot. The body is read and counted before it is decoded,
// so that no request decodes into more than its bounds allow.
func (s *Scheduler) decode(w http.ResponseWriter, r *http.Request, maxBytes int64, maxValues int, v any) bool {
	if !s.acquireDecode(w, r) {
		return false
	}
	defer func() { <-s.decodes }()
	// Sized by the declared length, so a body is read into one buffer.
	var buf bytes.Buffer
	buf.Grow(int(min(max(r.ContentLength, 0), maxBytes)) + bytes.MinRead)
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxBytes))
	body := buf.Bytes()
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			http.Error(w, fmt.Sprintf("extender: the request body is over the %d bytes a %T may take", maxBytes, v), http.StatusRequestEntityTooLarge)
			return false
		}
		http.Error(w, fmt.Sprintf("extender: reading the request body: %v", err), http.StatusBadRequest)
		return false
	}
	if n := countValues(body, maxValues); n > maxValues {
		http.Error(w, fmt.Sprintf("extender: the request body holds over the %d JSON values a %T may hold", maxValues, v), http.StatusRequestEntityTooLarge)
		return false
	}
	// Unmarshal refuses anything after the one value.
	if err := json.Unmarshal(body, v); err != nil {
		http.Error(w, fmt.Sprintf("extender: the request body is not one %T: %v", v, err), http.StatusBadRequest)
		return false
	}
	return true
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
