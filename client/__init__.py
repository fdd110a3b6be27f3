"""What runs inside Kafka clients and Spark drivers: the HTTP client (and later the assignor)."""
