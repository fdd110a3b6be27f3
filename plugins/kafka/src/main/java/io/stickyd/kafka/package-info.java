/** stickyd inside Apache Kafka: server-side (KIP-848) and Streams assignors that ask a stickyd service. */
package io.stickyd.kafka;
