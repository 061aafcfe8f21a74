package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// operatorProc is one operator running as its own process, its CPU time
// read from /proc/<pid>/stat (utime+stime) and its heap sampled from its
// Prometheus endpoint (go_memstats_heap_inuse_bytes) every 100 ms.
type operatorProc struct {
	name    string
	cmd     *exec.Cmd
	metrics string
	log     *os.File

	mu       sync.Mutex
	peakHeap float64
	done     chan struct{}
	exited   chan error
	stopped  sync.Once
}

// freePort returns a loopback address nothing listens on right now.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// operatorArgs is the command line of each operator: leader election off,
// metrics and health on loopback, every namespace watched, KubeRay's batch
// scheduler off (its default) and its webhook off (ENABLE_WEBHOOKS unset).
func operatorArgs(cfg *Config, name, metrics string) ([]string, error) {
	qps := strconv.FormatFloat(cfg.OperatorQPS, 'f', -1, 64)
	burst := strconv.Itoa(cfg.OperatorBurst)
	switch name {
	case "plancore":
		return []string{cfg.PlancoreBin, "-kubeconfig", "", "-operator", "-metrics-addr", metrics, "-qps", qps, "-burst", burst,
			"-max-concurrent-reconciles", strconv.Itoa(cfg.PlancoreReconciles), "-max-in-flight", strconv.Itoa(cfg.PlancoreInFlight),
			"-pprof-addr", cfg.pprofAddr}, nil
	case "kuberay":
		probe, err := freePort()
		if err != nil {
			return nil, err
		}
		return []string{cfg.KubeRayBin, "--kubeconfig", "", "--metrics-addr", metrics, "--health-probe-bind-address", probe,
			"--enable-leader-election=false", "--qps", qps, "--burst", burst,
			"--reconcile-concurrency", strconv.Itoa(cfg.KubeRayReconciles)}, nil
	}
	return nil, fmt.Errorf("unknown operator %q (plancore or kuberay)", name)
}

func startOperator(cfg *Config, name, kubeconfig, dir string) (*operatorProc, error) {
	metrics, err := freePort()
	if err != nil {
		return nil, err
	}
	if cfg.pprofAddr, err = freePort(); err != nil {
		return nil, err
	}
	args, err := operatorArgs(cfg, name, metrics)
	if err != nil {
		return nil, err
	}
	args[2] = kubeconfig
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "ENABLE_WEBHOOKS=false")
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	o := &operatorProc{name: name, cmd: cmd, metrics: "http://" + metrics + "/metrics", log: logf,
		done: make(chan struct{}), exited: make(chan error, 1)}
	go func() { o.exited <- cmd.Wait() }()
	go o.sample()
	return o, nil
}

func (o *operatorProc) sample() {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-o.done:
			return
		case <-tick.C:
		}
		if h, ok := scrapeHeap(client, o.metrics); ok {
			o.mu.Lock()
			o.peakHeap = max(o.peakHeap, h)
			o.mu.Unlock()
		}
	}
}

// scrapeHeap reads go_memstats_heap_inuse_bytes from a metrics endpoint.
func scrapeHeap(c *http.Client, url string) (float64, bool) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if rest, ok := bytes.CutPrefix(line, []byte("go_memstats_heap_inuse_bytes ")); ok {
			v, err := strconv.ParseFloat(string(rest), 64)
			return v, err == nil
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return 0, false
}

// peakHeapMiB is the largest heap in use sampled so far.
func (o *operatorProc) peakHeapMiB() float64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.peakHeap / (1 << 20)
}

// cpuSeconds is the process's user plus system CPU time so far.
func (o *operatorProc) cpuSeconds() float64 { return procCPU(o.cmd.Process.Pid) }

// vmHWM is the process's peak resident set in MiB (VmHWM).
func (o *operatorProc) vmHWM() float64 { return procHWM(o.cmd.Process.Pid) }

// alive reports an early exit of the operator.
func (o *operatorProc) alive() error {
	select {
	case err := <-o.exited:
		o.exited <- err
		return fmt.Errorf("%s exited early (%v); see %s", o.name, err, o.log.Name())
	default:
		return nil
	}
}

// stop ends the process (SIGTERM, then SIGKILL after 15 s); a second call
// does nothing.
func (o *operatorProc) stop() {
	o.stopped.Do(func() {
		close(o.done)
		_ = o.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-o.exited:
		case <-time.After(15 * time.Second):
			_ = o.cmd.Process.Kill()
			<-o.exited
		}
		o.log.Close()
	})
}

// procCPU reads utime+stime (fields 14 and 15 of /proc/<pid>/stat, in clock
// ticks of 1/100 s on Linux).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields count from after it.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100
}

func procHWM(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// controlPlanePIDs finds the harness's kube-apiserver and etcd, children of
// this process (envtest starts them).
func controlPlanePIDs() (apiserver, etcd int) {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(self) {
			continue
		}
		switch s[open+1 : end] {
		case "kube-apiserver":
			apiserver = pid
		case "etcd":
			etcd = pid
		}
	}
	return apiserver, etcd
}

// waitWatching waits until the operator has listed or watched both
// rayclusters and pods through its proxy: its informers are up.
func waitWatching(ctx context.Context, o *operatorProc, p *countingProxy) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c := p.snapshot()
		if c["watch rayclusters"]+c["list rayclusters"] > 0 && c["watch pods"]+c["list pods"] > 0 {
			return nil
		}
		if err := o.alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not watch rayclusters and pods within 2 minutes; see %s", o.name, o.log.Name())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// profile saves a CPU profile of plancore's operator over the next d into
// file, in the background; the returned channel reports the outcome.
func profile(cfg *Config, d time.Duration, file string) <-chan error {
	return fetchProfile(http.DefaultClient, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", cfg.pprofAddr, int(d.Seconds())), d, file)
}

// heapProfile saves plancore's operator's heap profile into file.
func heapProfile(cfg *Config, file string) error {
	return <-fetchProfile(http.DefaultClient, fmt.Sprintf("http://%s/debug/pprof/heap", cfg.pprofAddr), 0, file)
}

// apiServerProfile saves a CPU profile of kube-apiserver over the next d
// into file, in the background: it serves /debug/pprof (its --profiling
// defaults to on) to an administrator, as cfg is.
func apiServerProfile(cfg *rest.Config, d time.Duration, file string) <-chan error {
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		done := make(chan error, 1)
		done <- err
		return done
	}
	return fetchProfile(c, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(cfg.Host, "/"), int(d.Seconds())), d, file)
}

// fetchProfile GETs url with c (allowing d for the profile to be taken)
// into file, in the background; the channel reports the outcome.
func fetchProfile(c *http.Client, url string, d time.Duration, file string) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			done <- err
			return
		}
		resp, err := c.Do(req)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			done <- fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
			return
		}
		f, err := os.Create(file)
		if err != nil {
			done <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		done <- errors.Join(err, f.Close())
	}()
	return done
}
