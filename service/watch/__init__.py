"""The Kafka cluster the service watches: each partition's produce rate, read from its end offsets,
behind `partition_weights: "live"`, and the cluster's consumer groups (GET /v1/cluster/groups)."""
