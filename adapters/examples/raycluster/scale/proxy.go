package main

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// countingProxy is a reverse proxy on loopback in front of the API server: an
// operator's kubeconfig points at it (plain HTTP, no credentials), and it
// forwards every request with the harness's administrator credentials while
// counting it by verb and resource. Every request the operator makes passes
// through it, so the counts are the operator's alone.
type countingProxy struct {
	srv  *http.Server
	addr string

	mu     sync.Mutex
	counts map[string]int // "verb resource"
	// ended counts, by resource, the watches that ended while the
	// operator still wanted them: the API server (or the proxy's
	// upstream connection) closed them, and the operator re-opened them.
	ended map[string]int
}

func startProxy(cfg *rest.Config) (*countingProxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	p := &countingProxy{counts: map[string]int{}, ended: map[string]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     transport,
		FlushInterval: -1, // watches stream
		// An operator that stops cancels its watches: not news.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.addr = ln.Addr().String()
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := classify(r.Method, r.URL)
		p.count(key)
		rp.ServeHTTP(w, r)
		if resource, ok := strings.CutPrefix(key, "watch "); ok && r.Context().Err() == nil {
			p.mu.Lock()
			p.ended[resource]++
			p.mu.Unlock()
		}
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *countingProxy) count(key string) {
	p.mu.Lock()
	p.counts[key]++
	p.mu.Unlock()
}

// snapshot copies the counts so far.
func (p *countingProxy) snapshot() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// endedWatches copies the counts of watches the operator did not end.
func (p *countingProxy) endedWatches() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.ended)
}

func (p *countingProxy) close() { _ = p.srv.Close() }

// kubeconfig writes a kubeconfig naming the proxy into dir.
func (p *countingProxy) kubeconfig(dir string) (string, error) {
	path := filepath.Join(dir, "kubeconfig")
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: harness
  cluster:
    server: http://%s
users:
- name: harness
  user: {}
contexts:
- name: harness
  context: {cluster: harness, user: harness}
current-context: harness
`, p.addr)
	return path, os.WriteFile(path, []byte(body), 0o600)
}

// classify names a request "verb resource" the way the API server's audit
// log would: verbs get, list, watch, create, update, patch, delete,
// deletecollection; the resource with its subresource (pods/binding,
// rayclusters/status); "discovery" for paths outside any resource.
func classify(method string, u *url.URL) string {
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:] // api/v1
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:] // apis/group/version
	default:
		return "get discovery"
	}
	if len(parts) == 0 {
		return "get discovery"
	}
	if parts[0] == "namespaces" && len(parts) >= 3 {
		parts = parts[2:]
	}
	resource, named := parts[0], len(parts) >= 2
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	q := u.Query()
	switch method {
	case http.MethodGet:
		switch {
		case q.Get("watch") == "true" || q.Get("watch") == "1":
			return "watch " + resource
		case named:
			return "get " + resource
		default:
			return "list " + resource
		}
	case http.MethodPost:
		return "create " + resource
	case http.MethodPut:
		return "update " + resource
	case http.MethodPatch:
		return "patch " + resource
	case http.MethodDelete:
		if named {
			return "delete " + resource
		}
		return "deletecollection " + resource
	}
	return strings.ToLower(method) + " " + resource
}

// total sums counts; sortedKeys lists them by count, largest first.
func total(counts map[string]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

func sortedKeys(counts map[string]int) []string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

// diff is after minus before, key by key, dropping zeros.
func diff(after, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
