package contracts

import "fmt"

// Replicas of the JetStream streams and buckets. A deployment on one NATS
// server keeps one copy of each; on a cluster of three every stream, the
// consumers on it and every Object Store bucket keep three (one per server),
// so that any one server may go away. The services read the number from
// NATS_REPLICAS (pkg/config) into Names.Replicas; natsbus.EnsureStream and
// blob.Open apply it to what they declare, existing streams included.
const (
	// DefaultReplicas is a single server's.
	DefaultReplicas = 1
	// ClusterReplicas is a three-server cluster's.
	ClusterReplicas = 3
	// MaxReplicas is JetStream's largest replica count.
	MaxReplicas = 5
)

// StreamReplicas is how many copies the deployment's streams and buckets
// keep: Replicas, or DefaultReplicas when unset.
func (n Names) StreamReplicas() int {
	if n.Replicas <= 0 {
		return DefaultReplicas
	}
	return n.Replicas
}

// ReplicasFor is the replica count of a deployment whose NATS has nodes
// servers: ClusterReplicas from three servers on, one below.
func ReplicasFor(nodes int) int {
	if nodes >= ClusterReplicas {
		return ClusterReplicas
	}
	return DefaultReplicas
}

// ValidateReplicas accepts 1 to MaxReplicas.
func ValidateReplicas(n int) error {
	if n < 1 || n > MaxReplicas {
		return fmt.Errorf("NATS_REPLICAS %d: want 1 (one NATS server) to %d (JetStream's largest), 3 on a three-node cluster", n, MaxReplicas)
	}
	return nil
}
