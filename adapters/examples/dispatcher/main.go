// Command dispatcher runs plancore's capacity.Dispatcher as two scheduler
// instances sharing one Redis: it starts its own redis-server (from PATH) on
// a free loopback port, registers five worker nodes (three with room, one
// whose CPU is over the threshold, one that never sent a heartbeat), submits
// six jobs to each instance, lets each instance dispatch from three
// goroutines, and prints the first selection with its exclusion breakdown,
// then what every attempt came to:
//
//	go run ./examples/dispatcher
//
// Without redis-server on PATH it says how to get one and exits 0.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/plancore/plancore/adapters/redis"
	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake"
)

// howToGetRedis is printed when no redis-server is on PATH.
const howToGetRedis = `redis-server is not on PATH, so this example cannot start one.
Install it and run again:
  Debian/Ubuntu: sudo apt-get install redis-server
  macOS:         brew install redis
  or build it:   https://redis.io/docs/latest/operate/oss_and_stack/install/
`

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := start(ctx, exec.LookPath, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// start finds redis-server with lookPath and runs the example, or prints
// how to get it and returns a nil error and a nil summary.
func start(ctx context.Context, lookPath func(string) (string, error), out io.Writer) (*Summary, error) {
	bin, err := lookPath("redis-server")
	if err != nil {
		fmt.Fprint(out, howToGetRedis)
		return nil, nil
	}
	addr, stop, err := startRedis(ctx, bin)
	if err != nil {
		return nil, err
	}
	defer stop()
	return run(ctx, addr, out)
}

// node is one worker node of the example.
type node struct {
	id    string
	max   int
	cpu   float64
	quiet bool // never sends a heartbeat
}

var nodes = []node{{id: "n1", max: 2}, {id: "n2", max: 2}, {id: "n3", max: 1}, {id: "hot", max: 4, cpu: 95}, {id: "silent", max: 4, quiet: true}}

// Summary is what the run came to, for the test.
type Summary struct {
	// Sent counts the jobs each instance sent.
	Sent map[string]int
	// Attempts counts every attempt by outcome.
	Attempts map[capacity.JobOutcome]int
	// Excluded sums the exclusion breakdowns of every attempt, by reason.
	Excluded map[capacity.ReasonCode]int
	// Refused counts the store's refusals of reserve calls, by status.
	Refused map[capacity.ReserveStatus]int
	// Stats are the nodes' own counters.
	Stats map[string]fake.AgentStats
	// Started counts, per job, how often a node started it.
	Started map[string]int
}

// run dispatches 12 jobs from two instances through the Redis at addr.
func run(ctx context.Context, addr string, out io.Writer) (*Summary, error) {
	newClient := func() *goredis.Client {
		return goredis.NewClient(&goredis.Options{Addr: addr, ContextTimeoutEnabled: true})
	}
	// The nodes report to the store through their own client.
	nodeClient := newClient()
	defer nodeClient.Close()
	nodeStore, err := redis.NewCapacityStore(ctx, nodeClient, redis.CapacityStoreOptions{})
	if err != nil {
		return nil, err
	}
	agents := map[string]*fake.NodeAgent{}
	var ids []string
	fmt.Fprintln(out, "nodes:")
	for _, n := range nodes {
		ids = append(ids, n.id)
		a, err := fake.NewNodeAgent(n.id, n.max, true, nodeStore)
		if err != nil {
			return nil, err
		}
		agents[n.id] = a
		desc := fmt.Sprintf("  %s M=%d", n.id, n.max)
		switch {
		case n.quiet:
			desc += ", never sends a heartbeat"
		case n.cpu > 0:
			desc += fmt.Sprintf(", CPU at %g%%", n.cpu)
		}
		fmt.Fprintln(out, desc)
	}
	heartbeat := func() error {
		for _, n := range nodes {
			if !n.quiet {
				if _, err := agents[n.id].Heartbeat(ctx, capacity.Usage{CPU: n.cpu}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := heartbeat(); err != nil {
		return nil, err
	}

	// What every instance does first: read the loads and decide.
	loads, err := nodeStore.Loads(ctx, ids)
	if err != nil {
		return nil, err
	}
	first, err := capacity.Decide(capacity.Input{Now: time.Now(), Nodes: loads, SpreadKey: "A-job-01"}, capacity.Options{})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "first selection (job A-job-01):\n%s", first)

	// The nodes work: each finishes one job every 20 ms and sends a
	// heartbeat, as real workers would.
	work, stopWork := context.WithCancel(ctx)
	var workers sync.WaitGroup
	defer func() {
		stopWork()
		workers.Wait()
	}()
	workers.Add(1)
	go func() {
		defer workers.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-work.Done():
				return
			case <-tick.C:
			}
			for _, n := range nodes {
				agents[n.id].FinishOldest()
			}
			_ = heartbeat() // a lost heartbeat only delays the next dispatch
		}
	}()

	s := &Summary{Sent: map[string]int{}, Attempts: map[capacity.JobOutcome]int{}, Excluded: map[capacity.ReasonCode]int{},
		Refused: map[capacity.ReserveStatus]int{}, Started: map[string]int{}}
	var mu sync.Mutex
	const jobs = 12
	allSent := make(chan struct{})
	send := func(ctx context.Context, job capacity.Job, l capacity.Lease) error {
		o, err := agents[l.Node].Dispatch(ctx, l)
		if err != nil {
			return err
		}
		if !o.Started {
			return fmt.Errorf("node %s did not start %s (%s, %s)", l.Node, l.RID, o.Accept, o.Ack)
		}
		mu.Lock()
		s.Started[job.ID]++
		mu.Unlock()
		return nil
	}
	// Two scheduler instances, each with its own Redis client and store,
	// as two processes would have.
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var instances sync.WaitGroup
	errs := make(chan error, 2)
	for _, name := range []string{"A", "B"} {
		c := newClient()
		defer c.Close()
		store, err := redis.NewCapacityStore(ctx, c, redis.CapacityStoreOptions{})
		if err != nil {
			return nil, err
		}
		d := &capacity.Dispatcher{
			Store: store, Nodes: capacity.StaticNodes(ids...), Send: send, Concurrency: 3,
			Options:  capacity.Options{RetryAfter: 50 * time.Millisecond},
			Dispatch: capacity.DispatchOptions{TTL: time.Second, RetryAfter: 50 * time.Millisecond},
			Observer: s.observe(&mu, name, jobs, allSent),
		}
		for i := 1; i <= jobs/2; i++ {
			if err := d.Submit(capacity.Job{ID: fmt.Sprintf("%s-job-%02d", name, i)}); err != nil {
				return nil, err
			}
		}
		instances.Add(1)
		go func() {
			defer instances.Done()
			errs <- d.Run(runCtx)
		}()
	}
	select {
	case <-allSent:
	case <-ctx.Done():
	}
	stopRun()
	instances.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("not every job was sent: %w", err)
	}

	s.Stats = map[string]fake.AgentStats{}
	for _, n := range nodes {
		s.Stats[n.id] = agents[n.id].Stats()
	}
	s.print(out, jobs)
	return s, nil
}

// print writes what the attempts came to.
func (s *Summary) print(out io.Writer, jobs int) {
	fmt.Fprintf(out, "all %d jobs sent: instance A sent %d, instance B sent %d\n", jobs, s.Sent["A"], s.Sent["B"])
	total := 0
	for _, n := range s.Attempts {
		total += n
	}
	fmt.Fprintf(out, "%d attempts: %s\n", total, counts(s.Attempts))
	fmt.Fprintf(out, "exclusions summed over the attempts: %s\n", counts(s.Excluded))
	fmt.Fprintf(out, "reserves the store refused: %s\n", counts(s.Refused))
	var peaks []string
	for _, n := range nodes {
		peaks = append(peaks, fmt.Sprintf("%s %d/%d", n.id, s.Stats[n.id].PeakStarted, n.max))
	}
	fmt.Fprintf(out, "most jobs running at once per node (never above M): %s\n", strings.Join(peaks, ", "))
}

// observe records one attempt of instance's Dispatcher and closes allSent
// when the last of jobs is sent; mu guards s.
func (s *Summary) observe(mu *sync.Mutex, instance string, jobs int, allSent chan struct{}) capacity.ObserverFunc {
	return func(e capacity.DispatcherEvent) {
		mu.Lock()
		defer mu.Unlock()
		s.Attempts[e.Outcome]++
		b := e.Plan.Breakdown
		for code, n := range map[capacity.ReasonCode]int{capacity.ReasonStaleHeartbeat: b.StaleHeartbeat,
			capacity.ReasonCapacityExceeded: b.CapacityExceeded, capacity.ReasonCPUOverThreshold: b.CPUOverThreshold} {
			s.Excluded[code] += n
		}
		for _, a := range e.Result.Attempts {
			if !a.Result.Status.Granted() {
				s.Refused[a.Result.Status]++
			}
		}
		if e.Outcome == capacity.JobSent {
			s.Sent[instance]++
			if s.Sent["A"]+s.Sent["B"] == jobs {
				close(allSent)
			}
		}
	}
}

// counts renders a count map sorted by key, or "none".
func counts[K ~string](m map[K]int) string {
	var parts []string
	for _, k := range slices.Sorted(func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// startRedis launches bin on a free loopback port with persistence off and
// waits until it answers PING; stop kills it.
func startRedis(ctx context.Context, bin string) (addr string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir, err := os.MkdirTemp("", "plancore-dispatcher-")
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = os.RemoveAll(dir)
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for c.Ping(wait).Err() != nil {
		select {
		case <-exited:
			stop()
			return "", nil, errors.New("redis-server exited before answering PING")
		case <-wait.Done():
			stop()
			return "", nil, errors.New("redis-server did not answer PING in 10s")
		case <-time.After(10 * time.Millisecond):
		}
	}
	return addr, stop, nil
}
