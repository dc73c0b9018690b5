package config

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// ClusterConfig runs several dcgpd instances on one NATS JetStream
// cluster: each model is owned by one live instance at a time, through a
// lease in the dcgp_owners key-value bucket (package stream/cluster).
type ClusterConfig struct {
	// Enabled turns cluster mode on (default false: this instance runs
	// every model, as a single instance). It needs snapshot.store =
	// "jetstream" so that another instance can restore a model.
	Enabled bool `toml:"enabled"`
	// Instance names this instance among the others (default
	// "<hostname>-<pid>"); it must be unique in the cluster.
	Instance string `toml:"instance"`
	// Lease is how long a model's lease lives without renewal (default
	// 10s, at least 1s). An owner renews every lease/3 and stops working
	// on a model lease/4 before it could expire; a dead owner's models
	// move after at most one lease plus one renewal period.
	Lease Duration `toml:"lease"`
}

// validateCluster checks the cluster keys against the rest.
func (c *Config) validateCluster() error {
	k := &c.Cluster
	if !k.Enabled {
		return nil
	}
	if k.Lease.Duration < time.Second {
		return fmt.Errorf("cluster.lease: must be at least 1s, got %v", k.Lease)
	}
	if k.Instance != "" && !nameRe.MatchString(k.Instance) {
		return fmt.Errorf("cluster.instance: %q must be letters, digits, '-' or '_'", k.Instance)
	}
	if c.Snapshot.Store != "jetstream" || c.Snapshot.Dir == "off" {
		return errors.New(`cluster.enabled: needs snapshot.store = "jetstream" (and snapshots on), so that another instance can restore a model`)
	}
	return nil
}

// InstanceName is the configured name or "<hostname>-<pid>".
func (k *ClusterConfig) InstanceName() string {
	if k.Instance != "" {
		return k.Instance
	}
	h, err := os.Hostname()
	if err != nil || !nameRe.MatchString(h) {
		h = "dcgpd"
	}
	return fmt.Sprintf("%s-%d", h, os.Getpid())
}
