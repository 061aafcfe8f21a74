package extender

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// MaxRequestBytes bounds an extender request body. A Filter without
// nodeCacheCapable carries whole Node objects: 64 MiB holds several thousand.
const MaxRequestBytes = 64 << 20

// Handler serves the extender protocol over HTTP, as kube-scheduler calls it
// with urlPrefix pointing here and filterVerb "filter", prioritizeVerb
// "prioritize" and bindVerb "bind": POST /filter, /prioritize and /bind with
// JSON bodies of k8s.io/kube-scheduler/extender/v1's types. A body that does
// not decode is answered 400 with the reason; every other outcome is a 200
// whose result carries the error, as the protocol expects.
func (s *Scheduler) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /filter", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderArgs
		if decode(w, r, &args) {
			reply(w, s.Filter(r.Context(), args))
		}
	})
	mux.HandleFunc("POST /prioritize", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderArgs
		if decode(w, r, &args) {
			list, err := s.Prioritize(r.Context(), args)
			if err != nil {
				// The protocol has no error field here: an error fails the
				// call, and kube-scheduler ignores this extender's scores.
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			reply(w, list)
		}
	})
	mux.HandleFunc("POST /bind", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderBindingArgs
		if decode(w, r, &args) {
			reply(w, s.Bind(r.Context(), args))
		}
	})
	return mux
}

// decode reads one JSON value into v, answering 400 when it cannot.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body := http.MaxBytesReader(w, r.Body, MaxRequestBytes)
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		http.Error(w, fmt.Sprintf("extender: the request body is not a %T: %v", v, err), http.StatusBadRequest)
		return false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		http.Error(w, "extender: the request body holds more than one JSON value", http.StatusBadRequest)
		return false
	}
	return true
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Serve answers the extender protocol on addr until ctx ends, then shuts the
// server down.
func (s *Scheduler) Serve(ctx context.Context, addr string) error {
	srv := &http.Server{Addr: addr, Handler: s.Handler()}
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
