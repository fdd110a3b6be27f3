package io.stickyd.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
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
 * the group's heartbeat interval); half of it is the solver's time limit. On any failure (no answer in
 * time, an error status, an answer that does not check out) the group is assigned by Kafka's own
 * {@link UniformAssignor} in-process. Every fallback is counted; an outage is logged once when it
 * starts and once when stickyd answers again.
 *
 * <p>As Kafka's own assignors: a member whose partitions do not change gets back the map it held, and a
 * subscribed topic the topic describer does not know throws {@link PartitionAssignorException} (no
 * request, no fallback). {@link StickydLoadConsumerGroupAssignor} is the same assignor balancing by load.
 */
public class StickydConsumerGroupAssignor implements ConsumerGroupPartitionAssignor, Configurable {
    public static final String NAME = "stickyd";
    /** How far above the best bottleneck load an answer of {@code stickyd-load} may stay to move less. */
    public static final String LOAD_TOLERANCE_CONFIG = "stickyd.load.tolerance";
    static final String PATH = "v1/assign/consumer";

    private static final Logger LOG = LoggerFactory.getLogger(StickydConsumerGroupAssignor.class);

    // The broker makes several instances (one per configuration it builds); the count and the outage
    // state belong to the process, so that an outage is logged once however many instances see it.
    private static final AtomicLong FALLBACKS = new AtomicLong();
    private static final AtomicBoolean IN_OUTAGE = new AtomicBoolean();
    private static volatile String lastConfigured = "";

    private final String name;
    private final boolean byLoad;
    private final UniformAssignor fallback = new UniformAssignor();
    private volatile StickydHttpClient client = StickydHttpClient.fromConfig(Map.of(), System.getenv());
    private volatile ObjectNode options;
    private volatile boolean compactWire = true;

    public StickydConsumerGroupAssignor() {
        this(NAME, false);
    }

    /** {@code byLoad}: ask for {@code options.balance: "load"} (with {@code stickyd.load.tolerance}). */
    StickydConsumerGroupAssignor(String name, boolean byLoad) {
        this.name = name;
        this.byLoad = byLoad;
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
        Object encoding = configs.get(ENCODING_CONFIG);
        if (encoding != null && !encoding.toString().isBlank()) {
            String chosen = encoding.toString().trim();
            if (!chosen.equals("compact") && !chosen.equals("json")) {
                throw new IllegalArgumentException(ENCODING_CONFIG + " must be compact or json, got " + encoding);
            }
            compactWire = chosen.equals("compact");
        }
        String described = client.baseUrl() + " with a " + client.timeoutMs() + " ms deadline";
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

    /** Whether requests go in the compact encoding ({@code stickyd.encoding=compact}, the default) or as JSON. */
    public static final String ENCODING_CONFIG = "stickyd.encoding";

    /** The answer of stickyd: in the compact encoding unless configured otherwise or a member has a rack. */
    private GroupAssignment ask(StickydHttpClient stickyd, GroupSpec group, SubscribedTopicDescriber topics) throws Exception {
        long started = System.nanoTime();
        int limitMs = Math.max(1, stickyd.timeoutMs() / 2);
        CompactConsumerRequest.Request compact = compactWire ? CompactConsumerRequest.build(group, topics, limitMs, options) : null;
        if (compact != null) {
            long built = System.nanoTime();
            byte[] answer = stickyd.post(PATH, CompactConsumerRequest.MEDIA_TYPE, compact.body(), compact.length());
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
        JsonNode answer = stickyd.post(PATH, request.body());
        return ConsumerResponseReader.read(answer, request, group, topics);
    }

    /** How many assignments the uniform fallback has computed in this process. */
    public static long fallbacks() {
        return FALLBACKS.get();
    }

    @Override
    public GroupAssignment assign(GroupSpec group, SubscribedTopicDescriber topics) throws PartitionAssignorException {
        StickydHttpClient stickyd = client;
        try {
            GroupAssignment assignment = ask(stickyd, group, topics);
            if (IN_OUTAGE.compareAndSet(true, false)) {
                LOG.info("stickyd at {} answers again; {} assignments were made by the uniform fallback so far",
                    stickyd.baseUrl(), FALLBACKS.get());
            }
            return assignment;
        } catch (PartitionAssignorException e) {
            throw e; // the group itself cannot be assigned (as with Kafka's own assignors): no fallback
        } catch (Exception e) {
            long count = FALLBACKS.incrementAndGet();
            if (IN_OUTAGE.compareAndSet(false, true)) {
                LOG.warn("stickyd at {} failed ({}); assigning with Kafka's uniform assignor until it answers again (fallback #{})",
                    stickyd.baseUrl(), e.toString(), count);
            }
            return fallback.assign(group, topics);
        }
    }
}
