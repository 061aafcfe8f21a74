package redistest

import (
	"context"
	"testing"
)

func TestStartRestartLosesData(t *testing.T) {
	s := Start(t)
	c := s.Client()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	n, err := c.Exists(ctx, "k").Result()
	if err != nil {
		t.Fatalf("after restart the same client should reconnect: %v", err)
	}
	if n != 0 {
		t.Fatalf("persistence is off, so the key must be gone after a restart; Exists = %d", n)
	}
}

func TestStopMakesClientFail(t *testing.T) {
	s := Start(t)
	c := s.Client()
	s.Stop()
	if err := c.Ping(context.Background()).Err(); err == nil {
		t.Fatal("PING succeeded against a stopped server")
	}
}
