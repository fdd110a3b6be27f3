package io.stickyd.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.IntBuffer;
import java.util.Map;
import org.apache.kafka.common.Configurable;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.PartitionAssignorException;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The KIP-848 server-side assignor {@code stickyd}: the group coordinator's assignment is computed by a
 * stickyd service (balanced first, then fewest moves, proven optimal within its time limit).
 *
 * <p>Install: put the jar in the broker's {@code libs/}, add this class to
 * {@code group.consumer.assignors}, and set {@code stickyd.url} / {@code stickyd.timeout.ms} in the
 * broker properties (or {@code STICKYD_URL} / {@code STICKYD_TIMEOUT_MS} in its environment). Clients
 * choose it with {@code group.remote.assignor=stickyd}.
 *
 * <p>The coordinator waits for {@code assign}, so the service gets a strict deadline (keep it well under
 * the group's heartbeat interval); half of it (of the first replica's share, with several) is the
 * solver's time limit. On any failure (no answer in
 * time, an error status, an answer that does not check out) the group is assigned by Kafka's own
 * {@link UniformAssignor} in-process. Every request, failover and fallback is counted in
 * {@link AssignorMetrics} (JMX {@code kafka.stickyd:type=assignor-metrics,assignor=stickyd,group-type=consumer});
 * an outage is logged once (per assignor: {@code stickyd}, {@code stickyd-load}) when it starts and
 * once when stickyd answers again. {@code stickyd.url}
 * may list several replicas ({@link StickydHttpClient}).
 *
 * <p>As Kafka's own assignors: a member whose partitions do not change gets back the map it held, and a
 * subscribed topic the topic describer does not know throws {@link PartitionAssignorException} (no
 * request, no fallback); a group in which no member subscribes to a topic gets an assignment with no
 * member in it, asking nothing. {@link StickydLoadConsumerGroupAssignor} is the same assignor balancing by load.
 *
 * <p>With {@code stickyd.equal.subscriptions=broker}, a group whose members all subscribe to the same
 * topics (and have no rack) is solved in the broker by {@link EqualSubscriptions}, the closed form of the
 * service's own answer for it, and the service is not asked; by default ({@code service}) every group is
 * asked of the service. With {@code stickyd.unequal.subscriptions=broker}, a group of unequal
 * subscriptions (no rack, one claimant per partition) is solved in the broker by {@link EvenSplit} when an
 * even split moves no more than every even split must (the service's max flow at the moves' bound,
 * optimal too); any other group is asked. {@code stickyd-load} always asks.
 */
public class StickydConsumerGroupAssignor implements ConsumerGroupPartitionAssignor, Configurable {
    public static final String NAME = "stickyd";
    /** How far above the best bottleneck load an answer of {@code stickyd-load} may stay to move less. */
    public static final String LOAD_TOLERANCE_CONFIG = "stickyd.load.tolerance";
    /** {@code live}: {@code stickyd-load} asks for the partitions' produce rates the service measures. */
    public static final String LOAD_WEIGHTS_CONFIG = "stickyd.load.weights";
    /** Whether requests go in the compact encoding ({@code compact}, the default) or as {@code json}. */
    public static final String ENCODING_CONFIG = "stickyd.encoding";
    /** Where a group of equal subscriptions is solved: {@code service} (the default) or {@code broker}. */
    public static final String EQUAL_SUBSCRIPTIONS_CONFIG = "stickyd.equal.subscriptions";
    /** Where a group of unequal subscriptions is solved when its even split meets the moves' bound: {@code service} or {@code broker}. */
    public static final String UNEQUAL_SUBSCRIPTIONS_CONFIG = "stickyd.unequal.subscriptions";
    static final String PATH = "v1/assign/consumer";

    private static final Logger LOG = LoggerFactory.getLogger(StickydConsumerGroupAssignor.class);

    // The broker makes several instances (one per configuration it builds); the metrics and the outage
    // state belong to the process, so that an outage is logged once however many instances see it.
    private static volatile String lastConfigured = "";

    private final String name;
    private final boolean byLoad;
    private final AssignorMetrics metrics;
    private final UniformAssignor fallback = new UniformAssignor();
    private final HeldPartitions held = new HeldPartitions();
    private volatile StickydHttpClient client = StickydHttpClient.fromConfig(Map.of(), System.getenv());
    private volatile ObjectNode options;
    private volatile boolean liveWeights;
    private volatile boolean compactWire = true;
    private volatile boolean equalInBroker;
    private volatile boolean unequalInBroker;

    public StickydConsumerGroupAssignor() {
        this(NAME, false);
    }

    /** {@code byLoad}: ask for {@code options.balance: "load"} (with {@code stickyd.load.tolerance}). */
    StickydConsumerGroupAssignor(String name, boolean byLoad) {
        this.name = name;
        this.byLoad = byLoad;
        this.metrics = AssignorMetrics.of(name, "consumer");
        this.options = options(Map.of());
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void configure(Map<String, ?> configs) {
        client = StickydHttpClient.fromConfig(configs, System.getenv());
        options = options(configs);
        liveWeights = byLoad && liveWeights(configs);
        Object encoding = configs.get(ENCODING_CONFIG);
        if (encoding != null && !encoding.toString().isBlank()) {
            String chosen = encoding.toString().trim();
            if (!chosen.equals("compact") && !chosen.equals("json")) {
                throw new IllegalArgumentException(ENCODING_CONFIG + " must be compact or json, got " + encoding);
            }
            compactWire = chosen.equals("compact");
        }
        equalInBroker = !byLoad && inBroker(configs, EQUAL_SUBSCRIPTIONS_CONFIG);
        unequalInBroker = !byLoad && inBroker(configs, UNEQUAL_SUBSCRIPTIONS_CONFIG);
        String described = client.describe() + " with a " + client.timeoutMs() + " ms deadline"
            + (equalInBroker ? ", groups of equal subscriptions solved in the broker" : "")
            + (unequalInBroker ? ", groups of unequal subscriptions solved in the broker where even at the moves' bound" : "");
        if (!(name + described).equals(lastConfigured)) {
            lastConfigured = name + described;
            LOG.info("stickyd assignor asks {} (as {})", described, name);
            client.warmUp();
        }
    }

    /** The options this assignor adds to every request; the weights are left out (all partitions equal). */
    private ObjectNode options(Map<String, ?> configs) {
        ObjectNode added = StickydHttpClient.JSON.createObjectNode();
        if (!byLoad) {
            return added;
        }
        added.put("balance", "load");
        Object tolerance = configs.get(LOAD_TOLERANCE_CONFIG);
        if (tolerance != null && !tolerance.toString().isBlank()) {
            double value;
            try {
                value = Double.parseDouble(tolerance.toString().trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(LOAD_TOLERANCE_CONFIG + " is not a number: " + tolerance, e);
            }
            if (!(value >= 0 && value <= 1)) {
                throw new IllegalArgumentException(LOAD_TOLERANCE_CONFIG + " must be between 0 and 1, got " + tolerance);
            }
            added.put("load_tolerance", value);
        }
        return added;
    }

    /** {@code stickyd.equal.subscriptions} or {@code stickyd.unequal.subscriptions}: unset or {@code service}, or {@code broker}. */
    private static boolean inBroker(Map<String, ?> configs, String property) {
        Object where = configs.get(property);
        if (where == null || where.toString().isBlank() || where.toString().trim().equals("service")) {
            return false;
        }
        if (!where.toString().trim().equals("broker")) {
            throw new IllegalArgumentException(property + " must be service or broker, got " + where);
        }
        return true;
    }

    /** {@code stickyd.load.weights}: unset (every partition weighs the same) or {@code live}. */
    private static boolean liveWeights(Map<String, ?> configs) {
        Object weights = configs.get(LOAD_WEIGHTS_CONFIG);
        if (weights == null || weights.toString().isBlank()) {
            return false;
        }
        if (!weights.toString().trim().equals("live")) {
            throw new IllegalArgumentException(LOAD_WEIGHTS_CONFIG + " must be live or unset, got " + weights);
        }
        return true;
    }

    /**
     * The answer of stickyd: in the compact encoding ({@code read}, the group as it lists it) unless
     * configured otherwise, a member has a rack or the weights are the service's live measurement (null).
     */
    private GroupAssignment ask(StickydHttpClient stickyd, GroupSpec group, SubscribedTopicDescriber topics,
                                CompactConsumerRequest.Request read, long started) throws Exception {
        int limitMs = Math.max(1, stickyd.firstShareMs() / 2);
        CompactConsumerRequest.Request compact = read == null ? null : CompactConsumerRequest.written(read, limitMs, options);
        if (compact != null) {
            long built = System.nanoTime();
            byte[] answer = stickyd.post(PATH, CompactConsumerRequest.MEDIA_TYPE, compact.body(), compact.length(), metrics::failedOver);
            long answered = System.nanoTime();
            GroupAssignment assignment = CompactConsumerAnswer.read(answer, compact, group);
            if (LOG.isDebugEnabled()) {
                LOG.debug("stickyd assigned {} members: request {} bytes built in {} ms, answered in {} ms, read in {} ms",
                    compact.memberIds().size(), compact.length(), (built - started) / 1_000_000,
                    (answered - built) / 1_000_000, (System.nanoTime() - answered) / 1_000_000);
            }
            return assignment;
        }
        ConsumerRequestBuilder.Request request = ConsumerRequestBuilder.build(group, topics, limitMs, options);
        if (liveWeights) {
            request.body().put("partition_weights", "live");
        }
        JsonNode answer = stickyd.post(PATH, request.body(), metrics::failedOver);
        return ConsumerResponseReader.read(answer, request, group, topics);
    }

    /** How many assignments the uniform fallback has computed in this process ({@code stickyd} and {@code stickyd-load}). */
    public static long fallbacks() {
        return AssignorMetrics.of(NAME, "consumer").fallbacks()
            + AssignorMetrics.of(StickydLoadConsumerGroupAssignor.NAME, "consumer").fallbacks();
    }

    /** No member subscribes to any topic (or there is no member). */
    private static boolean noSubscription(GroupSpec group) {
        for (String memberId : group.memberIds()) {
            if (!group.memberSubscription(memberId).subscribedTopicIds().isEmpty()) {
                return false;
            }
        }
        return true;
    }

    @Override
    public GroupAssignment assign(GroupSpec group, SubscribedTopicDescriber topics) throws PartitionAssignorException {
        if (noSubscription(group)) {
            return new GroupAssignment(Map.of()); // nothing to assign: no request, as Kafka's uniform answers
        }
        StickydHttpClient stickyd = client;
        long started = System.nanoTime();
        try {
            boolean compact = compactWire && !liveWeights;
            boolean inBroker = equalInBroker || unequalInBroker;
            CompactConsumerRequest.Request read = compact || inBroker ? CompactConsumerRequest.read(group, topics, held) : null;
            EqualSubscriptions.Answer solved = read == null || !inBroker ? null
                : read.subscriptions().size() == 1 ? (equalInBroker ? EqualSubscriptions.solve(read) : null)
                : unequalInBroker ? EvenSplit.solve(read) : null;
            if (solved != null) {
                metrics.solvedInBroker();
                return CompactConsumerAnswer.assignment(IntBuffer.wrap(solved.owners()), solved.unchanged(), read, group);
            }
            GroupAssignment assignment = ask(stickyd, group, topics, compact ? read : null, started);
            if (metrics.answered(started)) {
                LOG.info("stickyd at {} answers again; {} assignments were made by the uniform fallback so far",
                    stickyd.describe(), metrics.fallbacks());
            }
            return assignment;
        } catch (PartitionAssignorException e) {
            throw e; // the group itself cannot be assigned (as with Kafka's own assignors): no fallback
        } catch (Exception e) {
            if (metrics.fellBack(started, e)) {
                LOG.warn("stickyd at {} failed ({}); assigning with Kafka's uniform assignor until it answers again (fallback #{})",
                    stickyd.describe(), e.toString(), metrics.fallbacks());
            }
            return fallback.assign(group, topics);
        }
    }
}
