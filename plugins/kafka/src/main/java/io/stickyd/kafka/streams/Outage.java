package io.stickyd.kafka.streams;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;

/**
 * Counts fallbacks and logs one warning per outage: the first failure after a success (or at
 * start) is logged with its cause, the following ones only counted, and the first success after
 * an outage is logged with the number of fallbacks it took. Kept per JVM (Kafka Streams creates a
 * new task assignor for every rebalance), thread-safe.
 */
public final class Outage {
    private final String what;
    private final AtomicBoolean down = new AtomicBoolean(false);
    private final AtomicLong fallbacks = new AtomicLong();
    private final AtomicLong fallbacksThisOutage = new AtomicLong();

    public Outage(String what) {
        this.what = what;
    }

    /** Records one fallback; logs it only when it starts an outage. */
    public void fellBack(Logger log, String url, Exception cause) {
        fallbacks.incrementAndGet();
        fallbacksThisOutage.incrementAndGet();
        if (down.compareAndSet(false, true)) {
            log.warn("{}: stickyd at {} did not answer ({}); using Kafka's own assignor until it does "
                    + "(logged once per outage)", what, url, cause.toString());
        }
    }

    /** Records a successful answer; logs the end of an outage. */
    public void answered(Logger log, String url) {
        if (down.compareAndSet(true, false)) {
            log.info("{}: stickyd at {} answers again after {} fallbacks", what, url,
                    fallbacksThisOutage.getAndSet(0));
        }
    }

    /** Fallbacks since the JVM started. */
    public long fallbacks() {
        return fallbacks.get();
    }

    public boolean isDown() {
        return down.get();
    }
}
