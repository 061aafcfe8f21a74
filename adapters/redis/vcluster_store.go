package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"

	goredis "github.com/redis/go-redis/v9"

	"github.com/plancore/plancore/vcluster"
)

// VClusterOptions configures a VClusterStore. The zero value means the
// documented defaults.
type VClusterOptions struct {
	// Key is the hash holding one field per cluster id whose value is the
	// record's JSON (vcluster.MarshalRecord). Default "plancore:vcluster:records".
	Key string
	// ChannelPrefix prefixes the publish channels: prefix+"indivisible" for
	// logical indivisible clusters and prefix+"job" for job clusters.
	// Default "plancore:vcluster:".
	ChannelPrefix string
}

// Validate reports options that cannot work: a key equal to a channel
// prefix would be confusing, but any non-empty strings are accepted.
func (o VClusterOptions) Validate() error {
	if o.Key != "" && o.Key == o.ChannelPrefix {
		return fmt.Errorf("redis: vcluster Key and ChannelPrefix must differ, both are %q", o.Key)
	}
	return nil
}

func (o VClusterOptions) withDefaults() VClusterOptions {
	if o.Key == "" {
		o.Key = "plancore:vcluster:records"
	}
	if o.ChannelPrefix == "" {
		o.ChannelPrefix = "plancore:vcluster:"
	}
	return o
}

// VClusterStore is a vcluster.Executor on Redis, the anchor's GCS storage and
// pub/sub: every record is one field of one hash, so a flush is one HSET and
// a restart reads everything back with one HGETALL; records are published on
// one channel per cluster kind, so workers subscribe to what they schedule
// from. The key layout belongs to the store, not to the core.
type VClusterStore struct {
	client goredis.UniversalClient
	opts   VClusterOptions
}

var _ vcluster.Executor = (*VClusterStore)(nil)

// NewVClusterStore returns a store on client. A nil client, or one that would
// ignore its callers' deadlines (see CheckDeadlines), is refused with an error
// wrapping vcluster.ErrInvalidOptions.
func NewVClusterStore(client goredis.UniversalClient, opts VClusterOptions) (*VClusterStore, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, fmt.Errorf("%w: no Redis client", vcluster.ErrInvalidOptions)
	}
	if err := CheckDeadlines(client); err != nil {
		return nil, fmt.Errorf("%w: %w", vcluster.ErrInvalidOptions, err)
	}
	return &VClusterStore{client: client, opts: opts.withDefaults()}, nil
}

// Channel returns the channel records of cluster id are published on:
// job clusters, indivisible clusters and (never published by Apply)
// divisible clusters each have their own.
func (s *VClusterStore) Channel(id string, divisible bool) string {
	switch {
	case vcluster.IsJobID(id):
		return s.opts.ChannelPrefix + "job"
	case divisible:
		return s.opts.ChannelPrefix + "divisible"
	}
	return s.opts.ChannelPrefix + "indivisible"
}

// Channels returns the channels workers subscribe to: indivisible and job.
func (s *VClusterStore) Channels() []string {
	return []string{s.opts.ChannelPrefix + "indivisible", s.opts.ChannelPrefix + "job"}
}

// FlushRecord writes r as the hash field r.ID (HSET), replacing any previous
// value.
func (s *VClusterStore) FlushRecord(ctx context.Context, r vcluster.Record) error {
	data, err := vcluster.MarshalRecord(r)
	if err != nil {
		return err
	}
	if err := s.client.HSet(ctx, s.opts.Key, r.ID, data).Err(); err != nil {
		return fmt.Errorf("redis: flush vcluster record %s: %w", r.ID, err)
	}
	return nil
}

// DeleteRecord deletes the hash field id (HDEL); an absent field is not an
// error.
func (s *VClusterStore) DeleteRecord(ctx context.Context, id string) error {
	if err := s.client.HDel(ctx, s.opts.Key, id).Err(); err != nil {
		return fmt.Errorf("redis: delete vcluster record %s: %w", id, err)
	}
	return nil
}

// PublishRecord publishes r's JSON on its kind's channel.
func (s *VClusterStore) PublishRecord(ctx context.Context, r vcluster.Record) error {
	data, err := vcluster.MarshalRecord(r)
	if err != nil {
		return err
	}
	if err := s.client.Publish(ctx, s.Channel(r.ID, r.Divisible), data).Err(); err != nil {
		return fmt.Errorf("redis: publish vcluster record %s: %w", r.ID, err)
	}
	return nil
}

// LoadRecords reads every record (HGETALL), in id order, for
// vcluster.PlanRecover. A field that does not decode is left out and named
// in the returned error (wrapping vcluster.ErrBadRecord), next to the
// records that did decode: the caller decides whether to recover without
// it. A Redis error returns no records.
func (s *VClusterStore) LoadRecords(ctx context.Context) ([]vcluster.Record, error) {
	fields, err := s.client.HGetAll(ctx, s.opts.Key).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: load vcluster records: %w", err)
	}
	ids := make([]string, 0, len(fields))
	for id := range fields {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]vcluster.Record, 0, len(ids))
	var errs []error
	for _, id := range ids {
		r, err := vcluster.UnmarshalRecord([]byte(fields[id]))
		if err == nil && r.ID != id {
			err = fmt.Errorf("%w: field %s holds the record of %s", vcluster.ErrBadRecord, id, r.ID)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("redis: vcluster record %s: %w", id, err))
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// VClusterSubscription is a worker's subscription to published records.
type VClusterSubscription struct {
	ps *goredis.PubSub
}

// Subscribe subscribes to the indivisible and job channels and waits for
// Redis to confirm, so no record published after it returns is missed.
func (s *VClusterStore) Subscribe(ctx context.Context) (*VClusterSubscription, error) {
	ps := s.client.Subscribe(ctx, s.Channels()...)
	for range s.Channels() {
		if _, err := ps.Receive(ctx); err != nil {
			ps.Close()
			return nil, fmt.Errorf("redis: subscribe to vcluster channels: %w", err)
		}
	}
	return &VClusterSubscription{ps: ps}, nil
}

// Next returns the next published record and the channel it came on. It
// blocks until one arrives or ctx ends.
func (sub *VClusterSubscription) Next(ctx context.Context) (vcluster.Record, string, error) {
	for {
		msg, err := sub.ps.Receive(ctx)
		if err != nil {
			return vcluster.Record{}, "", err
		}
		m, ok := msg.(*goredis.Message)
		if !ok {
			continue // a subscription confirmation or a pong
		}
		r, err := vcluster.UnmarshalRecord([]byte(m.Payload))
		return r, m.Channel, err
	}
}

// Close ends the subscription.
func (sub *VClusterSubscription) Close() error { return sub.ps.Close() }
