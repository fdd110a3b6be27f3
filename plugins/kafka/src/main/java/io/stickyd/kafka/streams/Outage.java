package io.stickyd.kafka.streams;

import io.stickyd.kafka.AssignorMetrics;
import org.slf4j.Logger;

/**
 * Records each request of a Streams assignor in its {@link AssignorMetrics} and logs one warning per
 * outage: the first failure after a success (or at start) is logged with its cause, the following
 * ones only counted, and the first success after an outage is logged with the number of fallbacks
 * it took. Kept per JVM (Kafka Streams creates a new task assignor for every rebalance), thread-safe.
 */
public final class Outage {
    private final String what;
    private final AssignorMetrics metrics;

    public Outage(String what, String groupType) {
        this.what = what;
        this.metrics = AssignorMetrics.of("stickyd", groupType);
    }

    /** Counts a replica that failed before the next one was asked. */
    public void failedOver() {
        metrics.failedOver();
    }

    /** Records one fallback (of a request started at {@code startedNanos}); logs it only when it starts an outage. */
    public void fellBack(Logger log, String url, long startedNanos, Exception cause) {
        if (metrics.fellBack(startedNanos, cause)) {
            log.warn("{}: stickyd at {} did not answer ({}); using Kafka's own assignor until it does "
                    + "(logged once per outage)", what, url, cause.toString());
        }
    }

    /** Records a successful answer; logs the end of an outage. */
    public void answered(Logger log, String url, long startedNanos) {
        if (metrics.answered(startedNanos)) {
            log.info("{}: stickyd at {} answers again after {} fallbacks", what, url, metrics.fallbacksThisOutage());
        }
    }

    /** Fallbacks since the JVM started. */
    public long fallbacks() {
        return metrics.fallbacks();
    }

    public boolean isDown() {
        return metrics.isDown();
    }
}
