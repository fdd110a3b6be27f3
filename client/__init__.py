"""What runs inside Kafka clients and Spark drivers: the HTTP client, the kafka-python assignor,
the partitioner, and the cluster reader and snapshot."""
