package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/plancore/plancore/capacity"
)

// redisServer finds the binary as the adapters/redis tests do: $REDIS_SERVER,
// PATH, /usr/bin. A missing one fails the test; it never skips.
func redisServer(string) (string, error) {
	if p := os.Getenv("REDIS_SERVER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	return "/usr/bin/redis-server", nil
}

// TestRun runs the example against its own redis-server and checks what it
// printed and what happened: every job sent once, no node above its M, the
// hot and the silent node excluded from every selection.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	s, err := start(ctx, redisServer, &out)
	if err != nil {
		t.Fatalf("%v\noutput so far:\n%s", err, out.String())
	}
	if s == nil {
		t.Fatalf("no run:\n%s", out.String())
	}
	wantStart := `nodes:
  n1 M=2
  n2 M=2
  n3 M=1
  hot M=4, CPU at 95%
  silent M=4, never sends a heartbeat
first selection (job A-job-01):
selection: Selected
  1. n1 effective=0/2 free=2 cpu=0% mem=0%
  2. n2 effective=0/2 free=2 cpu=0% mem=0%
  3. n3 effective=0/1 free=1 cpu=0% mem=0%
  x hot CPUOverThreshold: cpu 95% > 90%
  x silent StaleHeartbeat: no heartbeat
  breakdown: StaleHeartbeat=1 CPUOverThreshold=1
all 12 jobs sent: instance A sent 6, instance B sent 6
`
	if !strings.HasPrefix(out.String(), wantStart) {
		t.Fatalf("output:\n%s\nwant it to start with:\n%s", out.String(), wantStart)
	}
	for _, line := range []string{"attempts: ", "exclusions summed over the attempts: ", "reserves the store refused: ", "most jobs running at once per node (never above M): "} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q", line)
		}
	}
	if len(s.Started) != 12 {
		t.Errorf("started %d jobs, want 12: %v", len(s.Started), s.Started)
	}
	for job, n := range s.Started {
		if n != 1 {
			t.Errorf("job %s started %d times", job, n)
		}
	}
	for _, n := range nodes {
		st := s.Stats[n.id]
		if st.PeakStarted > n.max || st.Oversold > 0 || st.HardLimitRefusals > 0 {
			t.Errorf("node %s: %+v, M=%d: the store must keep it within M without the node's own limit refusing", n.id, st, n.max)
		}
		if (n.quiet || n.cpu > 0) && st.Started > 0 {
			t.Errorf("node %s ran jobs: %+v", n.id, st)
		}
	}
	attempts := 0
	for _, k := range s.Attempts {
		attempts += k
	}
	if s.Attempts[capacity.JobSent] != 12 || attempts != s.Attempts[capacity.JobSent]+s.Attempts[capacity.JobNoCapacity] {
		t.Errorf("attempts %v: want 12 sent, the rest no capacity", s.Attempts)
	}
	if s.Excluded[capacity.ReasonCPUOverThreshold] != attempts || s.Excluded[capacity.ReasonStaleHeartbeat] != attempts {
		t.Errorf("exclusions %v over %d attempts: hot and silent must be excluded every time", s.Excluded, attempts)
	}
}

// TestWithoutRedis checks that the example explains how to get redis-server
// and succeeds when there is none.
func TestWithoutRedis(t *testing.T) {
	var out bytes.Buffer
	s, err := start(context.Background(), func(string) (string, error) { return "", errors.New("not found") }, &out)
	if err != nil || s != nil {
		t.Fatalf("start = %v, %v", s, err)
	}
	if out.String() != howToGetRedis {
		t.Fatalf("output:\n%s", out.String())
	}
}
