// Package kubetest runs a real Kubernetes control plane (etcd and kube-apiserver,
// through controller-runtime's envtest) for the tests of plancore's kube adapters
// and of controllers built on them. There is no fake clientset here: the API
// server enforces resourceVersion preconditions (409 Conflict), generates names,
// validates objects and serves subresources exactly as in a cluster. It runs no
// controllers, scheduler or kubelet, so nothing deletes, schedules or runs pods
// unless a test does it.
//
// # Usage
//
// One control plane serves a whole test package, started from TestMain:
//
//	func TestMain(m *testing.M) { kubetest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		env := kubetest.Shared(t)
//		ns := env.Namespace(t)
//		err := env.Client.Create(ctx, &corev1.Pod{...})
//	}
//
// Programs (examples) start their own with [Start].
//
// # Binaries
//
// The binaries are found by [AssetsDir]: $KUBEBUILDER_ASSETS if set, else the
// cache that .ci/kube-apiserver.sh fills (kube-apiserver built from the
// k8s.io/kubernetes module matching the k8s.io/api minor version, beside a symlink
// to Debian's etcd). When they are missing the tests fail with instructions; they
// never skip, because a skipped test would hide that the adapters were never run
// against a real server.
package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// DefaultVersions are the k8s.io/kubernetes versions whose cached builds are
// looked for, in order: the patch matching the k8s.io/api the core module pins,
// then the patch known to work with Debian's etcd 3.4 as a fallback.
var DefaultVersions = []string{"v1.31.14", "v1.31.4"}

// ErrNoBinaries means no directory holding both kube-apiserver and etcd was found.
var ErrNoBinaries = errors.New("kubetest: kube-apiserver and etcd not found")

// CacheRoot is where .ci/kube-apiserver.sh caches builds: $PLANCORE_KUBE_CACHE, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/plancore/kube. It must agree with the script.
func CacheRoot() string {
	if d := os.Getenv("PLANCORE_KUBE_CACHE"); d != "" {
		return d
	}
	return CacheDir("kube")
}

// CacheDir is ${XDG_CACHE_HOME:-$HOME/.cache}/plancore/<name>, where the .ci
// scripts cache what they build once per machine ("" without a home).
func CacheDir(name string) string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "plancore", name)
}

// AssetsDir returns a directory holding executable kube-apiserver and etcd:
// $KUBEBUILDER_ASSETS when set (and then only it, so a wrong setting is reported
// rather than silently bypassed), else the first cached build among
// $PLANCORE_KUBE_VERSION and [DefaultVersions]. The error wraps [ErrNoBinaries]
// and says how to build them.
func AssetsDir() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		if err := checkAssets(d); err != nil {
			return "", fmt.Errorf("%w: KUBEBUILDER_ASSETS=%s: %v", ErrNoBinaries, d, err)
		}
		return d, nil
	}
	versions := DefaultVersions
	if v := os.Getenv("PLANCORE_KUBE_VERSION"); v != "" {
		versions = append([]string{v}, versions...)
	}
	root := CacheRoot()
	var tried []string
	for _, v := range versions {
		d := filepath.Join(root, v)
		if checkAssets(d) == nil {
			return d, nil
		}
		tried = append(tried, d)
	}
	return "", fmt.Errorf("%w in %s: run `bash .ci/kube-apiserver.sh` from the repository root "+
		"(it builds kube-apiserver once per machine, about 5-10 minutes, and needs etcd from "+
		"Debian's etcd-server package) or set KUBEBUILDER_ASSETS", ErrNoBinaries, strings.Join(tried, ", "))
}

func checkAssets(dir string) error {
	for _, name := range []string{"kube-apiserver", "etcd"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not an executable file", filepath.Join(dir, name))
		}
	}
	return nil
}

// Env is one running control plane and an uncached client for it.
type Env struct {
	// Config reaches the API server as an administrator. Client-side rate limiting
	// is effectively off (QPS 1000, burst 2000) so throughput tests measure the
	// server, not the client's token bucket.
	Config *rest.Config
	// Client is a controller-runtime client without a cache: every Get reads the
	// API server, as a test that checks what was written needs.
	Client client.Client
	// Scheme knows the built-in Kubernetes types.
	Scheme *runtime.Scheme
	// Dir is the directory the binaries came from.
	Dir string

	env  *envtest.Environment
	seq  atomic.Uint64
	stop sync.Once
}

// Start launches etcd and kube-apiserver from [AssetsDir] and waits until the API
// server answers. The caller must call [Env.Stop].
func Start() (*Env, error) { return StartWith(nil) }

// StartWith is [Start] with extra kube-apiserver flags, by name without the
// dashes: for example a service-cluster-ip-range wider than envtest's /24 (254
// Services) for a scale test whose operator creates a Service per cluster.
func StartWith(apiServerFlags map[string]string) (*Env, error) {
	// controller-runtime warns, with a stack trace, when its logger is used
	// before one is set; the control plane's own output is not wanted either.
	ctrllog.SetLogger(logr.Discard())
	// client-go logs through klog; a cancelled watch at the end of a test is
	// not news.
	klog.SetLogger(logr.Discard())
	dir, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("kubetest: building scheme: %w", err)
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory: dir,
		Scheme:                scheme,
		// Two control planes (two test packages) may start at once on a loaded
		// two-core machine; envtest's 20 s default is too tight for that.
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	for name, value := range apiServerFlags {
		te.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	cfg, err := te.Start()
	if err != nil {
		_ = te.Stop()
		return nil, fmt.Errorf("kubetest: starting control plane from %s: %w", dir, err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = te.Stop()
		return nil, fmt.Errorf("kubetest: client: %w", err)
	}
	return &Env{Config: cfg, Client: c, Scheme: scheme, Dir: dir, env: te}, nil
}

// Stop shuts the control plane down and removes its data. Safe to call twice.
func (e *Env) Stop() error {
	var err error
	e.stop.Do(func() { err = e.env.Stop() })
	return err
}

// UniqueName returns prefix followed by a number unique within e, for cluster-scoped
// objects (Nodes) and namespaces that tests must not share.
func (e *Env) UniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, e.seq.Add(1))
}

// Namespace creates a fresh namespace for t and returns its name. Namespaces are not
// deleted afterwards: with no namespace controller running they would only stay
// Terminating, and the whole control plane goes away with the test package.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	name := e.UniqueName(namespacePrefix(t.Name()))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatalf("kubetest: creating namespace %s: %v", name, err)
	}
	return name
}

// namespacePrefix turns a test name into a DNS label prefix short enough to leave
// room for the unique suffix.
func namespacePrefix(testName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() == 40 {
			break
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		s = "test"
	}
	return s
}

var (
	sharedMu  sync.Mutex
	shared    *Env
	sharedErr error
)

// Main starts one control plane for the test package, runs its tests, stops the
// control plane and exits. Use it as the package's TestMain. When the control
// plane cannot start, every test fails through [Shared] with the reason (missing
// binaries included), and the package fails: these tests never skip.
func Main(m *testing.M) {
	env, err := Start()
	sharedMu.Lock()
	shared, sharedErr = env, err
	sharedMu.Unlock()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "kubetest: stopping control plane: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	if err != nil && code == 0 {
		// A package whose tests all ran before Shared was reached must still fail.
		code = 1
	}
	os.Exit(code)
}

// Shared returns the control plane that [Main] started, failing t if there is none.
func Shared(t testing.TB) *Env {
	t.Helper()
	sharedMu.Lock()
	env, err := shared, sharedErr
	sharedMu.Unlock()
	switch {
	case err != nil:
		t.Fatalf("kubetest: no control plane: %v", err)
	case env == nil:
		t.Fatal("kubetest: no control plane: call kubetest.Main(m) from the package's TestMain")
	}
	return env
}
