package io.stickyd.kafka;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Avg;
import org.apache.kafka.common.metrics.stats.Max;
import org.apache.kafka.common.metrics.stats.Meter;
import org.apache.kafka.common.metrics.stats.WindowedCount;
import org.apache.kafka.common.utils.Time;

/**
 * What an assignor plug-in did, as Kafka metrics in the JVM it runs in (the broker's for the group
 * coordinator's assignors, the application's for the Streams client assignor), published over JMX
 * in Kafka's own style: one MBean per assignor and group type,
 * {@code kafka.stickyd:type=assignor-metrics,assignor=stickyd,group-type=consumer} with
 * {@code request-total}, {@code request-rate}, {@code request-latency-avg}, {@code request-latency-max}
 * (ms, over the last 30 s), {@code failover-total}, {@code failover-rate} (a replica failed and the
 * next one was asked), {@code fallback-total}, {@code fallback-rate} and {@code outage} (1 while the
 * assignments are made by Kafka's own assignor, else 0); and one MBean per fallback cause,
 * {@code ...,cause=unreachable} with {@code fallback-total} and {@code fallback-rate}. A consumer group
 * solved in the broker ({@code stickyd.equal.subscriptions=broker}, {@link EqualSubscriptions}) asks
 * nothing: it counts in {@code broker-solve-total} and {@code broker-solve-rate}, not in the requests.
 *
 * <p>Kept per JVM (the broker makes several assignor instances, Kafka Streams one per rebalance):
 * {@link #of} returns the same object for the same assignor and group type. It also keeps the outage
 * state, so that the callers log an outage once when it starts and once when it ends. Thread-safe.
 */
public final class AssignorMetrics {
    public static final String JMX_PREFIX = "kafka.stickyd";
    public static final String GROUP = "assignor-metrics";

    /** Why an assignment fell back to Kafka's own assignor, from the least to the most telling. */
    public enum Cause {
        /** No replica could be reached (connection refused or reset). */
        UNREACHABLE,
        /** No answer within {@code stickyd.timeout.ms}, or only stickyd's quick fill within it. */
        TIMEOUT,
        /** stickyd answered with an error status. */
        ERROR_ANSWER,
        /** The answer is not JSON or does not fit the group (or the plug-in failed otherwise). */
        INVALID_ANSWER;

        public String tag() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
    }

    private static final Metrics METRICS = new Metrics(
        new MetricConfig().samples(2).timeWindow(15, TimeUnit.SECONDS),
        List.of(new JmxReporter()),
        Time.SYSTEM,
        new KafkaMetricsContext(JMX_PREFIX));
    private static final Map<String, AssignorMetrics> ALL = new ConcurrentHashMap<>();

    private final Sensor requests;
    private final Sensor failovers;
    private final Sensor fallbacks;
    private final Sensor brokerSolves;
    private final Map<Cause, Sensor> fallbacksByCause = new LinkedHashMap<>();
    private final AtomicBoolean down = new AtomicBoolean();
    private final AtomicLong fallbackCount = new AtomicLong();
    private final AtomicLong brokerSolveCount = new AtomicLong();
    private final AtomicLong fallbacksThisOutage = new AtomicLong();

    private AssignorMetrics(String assignor, String groupType) {
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put("assignor", assignor);
        tags.put("group-type", groupType);
        String prefix = "stickyd." + assignor + "." + groupType + ".";
        requests = METRICS.sensor(prefix + "requests");
        requests.add(new Meter(new WindowedCount(), name("request-rate", "Assignments asked of stickyd per second", tags),
            name("request-total", "Assignments asked of stickyd", tags)));
        requests.add(name("request-latency-avg", "Average time to stickyd's answer or the fallback, ms", tags), new Avg());
        requests.add(name("request-latency-max", "Longest time to stickyd's answer or the fallback, ms", tags), new Max());
        failovers = METRICS.sensor(prefix + "failovers");
        failovers.add(new Meter(new WindowedCount(), name("failover-rate", "Replicas that failed, the next one asked, per second", tags),
            name("failover-total", "Replicas that failed and the next one was asked", tags)));
        fallbacks = METRICS.sensor(prefix + "fallbacks");
        fallbacks.add(new Meter(new WindowedCount(), name("fallback-rate", "Assignments made by Kafka's own assignor per second", tags),
            name("fallback-total", "Assignments made by Kafka's own assignor", tags)));
        brokerSolves = METRICS.sensor(prefix + "broker-solves");
        brokerSolves.add(new Meter(new WindowedCount(), name("broker-solve-rate", "Assignments solved in the broker per second", tags),
            name("broker-solve-total", "Assignments solved in the broker (equal subscriptions), stickyd not asked", tags)));
        for (Cause cause : Cause.values()) {
            Map<String, String> causeTags = new LinkedHashMap<>(tags);
            causeTags.put("cause", cause.tag());
            Sensor sensor = METRICS.sensor(prefix + "fallbacks." + cause.tag(), fallbacks);
            sensor.add(new Meter(new WindowedCount(), name("fallback-rate", "Fallbacks for this cause per second", causeTags),
                name("fallback-total", "Fallbacks for this cause", causeTags)));
            fallbacksByCause.put(cause, sensor);
        }
        METRICS.addMetric(name("outage", "1 while Kafka's own assignor makes the assignments, else 0", tags),
            (Gauge<Integer>) (config, now) -> down.get() ? 1 : 0);
    }

    private static org.apache.kafka.common.MetricName name(String name, String description, Map<String, String> tags) {
        return METRICS.metricName(name, GROUP, description, tags);
    }

    /** The metrics of the assignor {@code assignor} (its name) for {@code groupType} groups. */
    public static AssignorMetrics of(String assignor, String groupType) {
        return ALL.computeIfAbsent(assignor + "\n" + groupType, key -> new AssignorMetrics(assignor, groupType));
    }

    /** Records an answer used; true when it ends an outage ({@link #fallbacksThisOutage()} then says how long it was). */
    public boolean answered(long startedNanos) {
        requests.record(millisSince(startedNanos));
        return down.compareAndSet(true, false);
    }

    /** Records a fallback for {@code cause}; true when it starts an outage. */
    public boolean fellBack(long startedNanos, Exception cause) {
        requests.record(millisSince(startedNanos));
        fallbacksByCause.get(causeOf(cause)).record();
        fallbackCount.incrementAndGet();
        fallbacksThisOutage.incrementAndGet();
        if (down.compareAndSet(false, true)) {
            fallbacksThisOutage.set(1);
            return true;
        }
        return false;
    }

    /** Records an assignment solved in the broker, stickyd not asked. */
    public void solvedInBroker() {
        brokerSolves.record();
        brokerSolveCount.incrementAndGet();
    }

    /** Assignments solved in the broker since the JVM started. */
    public long brokerSolves() {
        return brokerSolveCount.get();
    }

    /** Records that a replica failed and the next one is asked. */
    public void failedOver() {
        failovers.record();
    }

    /** Fallbacks since the JVM started. */
    public long fallbacks() {
        return fallbackCount.get();
    }

    /** Fallbacks in the current (or the last) outage. */
    public long fallbacksThisOutage() {
        return fallbacksThisOutage.get();
    }

    public boolean isDown() {
        return down.get();
    }

    /**
     * The cause a failure counts under: the client's own verdict, a timeout for an answer that is only
     * stickyd's quick fill, else an answer that did not fit.
     */
    public static Cause causeOf(Exception e) {
        if (e instanceof ConsumerResponseReader.QuickFillAnswer) {
            return Cause.TIMEOUT;
        }
        return e instanceof StickydHttpClient.Failure failure ? failure.cause() : Cause.INVALID_ANSWER;
    }

    private static double millisSince(long startedNanos) {
        return (System.nanoTime() - startedNanos) / 1e6;
    }
}
