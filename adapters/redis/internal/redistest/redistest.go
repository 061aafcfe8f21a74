// Package redistest starts real redis-server processes for the tests of
// adapters/redis: one server per call on a free loopback port, persistence off,
// stopped when the test ends. There is no mock: the scripts under test run in
// the same Redis a production scheduler would use.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Server is one running redis-server owned by a test.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int

	args []string // extra redis-server arguments

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// BinaryPath returns the redis-server binary to use: $REDIS_SERVER if set, else
// redis-server from PATH, else /usr/bin/redis-server.
func BinaryPath() (string, error) {
	if p := os.Getenv("REDIS_SERVER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", nil
	}
	return "", fmt.Errorf("redis-server not found: install the Debian package redis-server (bash .ci/run does) or set REDIS_SERVER")
}

// Start launches a redis-server for t and stops it when t ends, with args
// added to its command line (such as "--enable-debug-command", "yes", which
// DEBUG SLEEP needs on Redis 7). A missing binary fails the test: these
// tests exist to exercise a real server, so they never skip.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := BinaryPath()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), args: args}
	for attempt := 0; ; attempt++ {
		s.port = freePort(t)
		err := s.launch()
		if err == nil {
			break
		}
		// Another process may take the port between probing and binding.
		if attempt == 4 {
			t.Fatalf("redistest: starting redis-server: %v", err)
		}
	}
	t.Cleanup(s.Stop)
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Client returns a go-redis client for the server, closed when the test ends.
// Its calls honour their contexts' deadlines (ContextTimeoutEnabled), as
// the stores require.
func (s *Server) Client(opts ...func(*goredis.Options)) *goredis.Client {
	o := &goredis.Options{Addr: s.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true}
	for _, f := range opts {
		f(o)
	}
	c := goredis.NewClient(o)
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop kills the server and waits for it to exit. Safe to call twice.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Restart stops the server and starts a fresh one on the same port. With
// persistence off, every key is gone afterwards, as after a crash of a cache-only
// Redis, and every script must be loaded again.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = s.launch(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // the old socket may linger briefly
	}
	s.t.Fatalf("redistest: restarting redis-server on port %d: %v", s.port, err)
}

func (s *Server) launch() error {
	cmd := exec.Command(s.bin, append([]string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--daemonize", "no",
		"--loglevel", "warning",
		"--logfile", filepath.Join(s.dir, "redis.log"),
	}, s.args...)...)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	if err := WaitReady(s.Addr(), cmd.Process.Pid, done, 10*time.Second); err != nil {
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%w (log: %s)", err, readLog(filepath.Join(s.dir, "redis.log"), 5))
	}
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	return nil
}

// WaitReady polls addr with PING until the redis-server with process id pid
// answers there, the process exits, or the timeout passes. A PING answered by
// another process is not enough: when two tests race for one free port, the
// loser exits on bind while the winner answers its PINGs, and without the
// process id check the loser's test would go on with the winner's server (and
// flush, restart or stop it).
func WaitReady(addr string, pid int, exited <-chan struct{}, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	for {
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited before answering")
		default:
		}
		if info, err := c.Info(ctx, "server").Result(); err == nil {
			if got := infoField(info, "process_id"); got != strconv.Itoa(pid) {
				return fmt.Errorf("%s is answered by another redis-server (process %s, want %d)", addr, got, pid)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis-server did not answer PING within %v", timeout)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// infoField returns the value of one "name:value" line of an INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// LogTail returns the last n lines of a redis-server log file, joined by " | ".
func LogTail(path string, n int) string { return readLog(path, n) }

func readLog(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
