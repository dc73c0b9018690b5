// Package cluster decides which instance runs which model when several
// `dcgpd serve` share one configuration: leases in a JetStream key-value
// bucket (lease.go), a deterministic spread of models over the live
// instances (assign), and fencing, so that an instance that lost a lease
// can no longer publish, acknowledge or snapshot (fence.go). Run is the
// control loop; it starts and stops models through a Host (the daemon).
package cluster
