package io.stickyd.kafka.streams;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The Streams request of docs/wire-format.md built from plain values, so that both Kafka APIs
 * (KIP-924's {@code ApplicationState} and KIP-1071's {@code GroupSpec}) map onto one builder.
 *
 * <p>Tasks are named {@code <subtopology>_<partition>} as in Kafka. A client's lags list only the
 * stateful tasks it previously held (active or standby), is caught up on (lag at most
 * {@code acceptable_recovery_lag}) or holds part of the state of (a lag below the task's restore
 * cost: a state directory left on its disk, which the service prefers for a task that moves): the
 * request stays small for applications with many tasks and clients.
 *
 * <p>With {@link #RESTORE_COST} stickiness (the default), the request carries {@code task_costs}
 * (what restoring each stateful task's state costs: its changelog records, from what the members
 * report) and {@code options.stickiness: restore_cost}, so that a large state stays put before a
 * small one; {@link #TASKS} counts moved tasks instead (docs/wire-format.md, "Moves weighed by
 * what they cost to restore").
 */
public final class StreamsRequest {
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
    /** The configuration naming the stickiness: {@code restore_cost} (default) or {@code tasks}. */
    public static final String STICKINESS_CONFIG = "stickyd.stickiness";
    public static final String RESTORE_COST = "restore_cost";
    public static final String TASKS = "tasks";
    /** The largest restore cost the service takes (docs/wire-format.md): no changelog holds more records. */
    public static final long MAX_TASK_COST = 1_000_000_000_000_000L;

    private final SortedMap<String, Integer> partitions = new TreeMap<>();
    private final SortedMap<String, Boolean> stateful = new TreeMap<>();
    private final List<Client> clients = new ArrayList<>();
    private final SortedMap<String, Long> taskCosts = new TreeMap<>();
    private String stickiness = RESTORE_COST;
    private final int numStandbyReplicas;
    private final int maxWarmupReplicas;
    private final long acceptableRecoveryLag;

    public StreamsRequest(int numStandbyReplicas, int maxWarmupReplicas, long acceptableRecoveryLag) {
        this.numStandbyReplicas = numStandbyReplicas;
        this.maxWarmupReplicas = maxWarmupReplicas;
        this.acceptableRecoveryLag = acceptableRecoveryLag;
    }

    /**
     * Whether a reported changelog offset, end offset or lag is a record count: Kafka Streams reports
     * negative sentinels and {@code Long.MAX_VALUE} for what it does not know (its own heartbeat
     * takes {@code Long.MAX_VALUE} as "unknown"); nothing above {@link #MAX_TASK_COST} is a count.
     */
    public static boolean isRecordCount(Long records) {
        return records != null && records >= 0 && records <= MAX_TASK_COST;
    }

    public static String taskName(String subtopology, int partition) {
        return subtopology + "_" + partition;
    }

    /** A task of the topology: its subtopology gets partitions up to this one, stateful if any task is. */
    public void addTask(String subtopology, int partition, boolean isStateful) {
        partitions.merge(subtopology, partition + 1, Math::max);
        stateful.merge(subtopology, isStateful, Boolean::logicalOr);
    }

    /**
     * The stickiness from a configuration value ({@code null}: the default {@code restore_cost}).
     *
     * @throws IllegalArgumentException naming {@link #STICKINESS_CONFIG} for any other value
     */
    public static String stickinessOf(Object configured) {
        String value = configured == null ? RESTORE_COST : configured.toString().trim();
        if (!value.equals(RESTORE_COST) && !value.equals(TASKS)) {
            throw new IllegalArgumentException(
                    STICKINESS_CONFIG + " is " + RESTORE_COST + " or " + TASKS + ", got '" + value + "'");
        }
        return value;
    }

    public StreamsRequest stickiness(String value) {
        stickiness = stickinessOf(value);
        return this;
    }

    /**
     * What restoring a task's state costs (changelog records); the largest of several reports is
     * kept, at least 1 (a task with an empty changelog still costs a move). What is not a record count
     * ({@link #isRecordCount}) is unknown and ignored.
     */
    public void addTaskCost(String task, long records) {
        if (isRecordCount(records)) {
            taskCosts.merge(task, Math.max(1L, records), Math::max);
        }
    }

    public boolean isStateful(String subtopology) {
        return stateful.getOrDefault(subtopology, false);
    }

    /**
     * One Streams client (process). {@code lags} may hold every stateful task's lag (values that are
     * not record counts, {@link #isRecordCount}: unknown, left out); only those the service needs are sent.
     */
    public void addClient(
            String id,
            int capacity,
            String rack,
            SortedSet<String> active,
            SortedSet<String> standby,
            Map<String, Long> lags) {
        clients.add(new Client(id, capacity, rack, active, standby, new TreeMap<>(lags)));
    }

    private record Client(
            String id, int capacity, String rack, SortedSet<String> active, SortedSet<String> standby,
            SortedMap<String, Long> lags) {
    }

    /** A client as JSON, once every task's restore cost is known. */
    private ObjectNode clientJson(Client c) {
        ObjectNode client = JSON.objectNode();
        client.put("id", c.id());
        client.put("capacity", Math.max(1, c.capacity()));
        if (c.rack() != null && !c.rack().isEmpty()) {
            client.put("rack", c.rack());
        }
        c.active().forEach(client.putArray("active")::add);
        c.standby().forEach(client.putArray("standby")::add);
        ObjectNode lagNode = client.putObject("lags");
        c.lags().forEach((task, lag) -> {
            boolean held = c.active().contains(task) || c.standby().contains(task);
            boolean partial = lag != null && lag < taskCosts.getOrDefault(task, 0L);
            if (isRecordCount(lag) && (held || lag <= acceptableRecoveryLag || partial)) {
                lagNode.put(task, lag);
            }
        });
        return client;
    }

    /** The JSON body for {@code POST /v1/assign/streams}. */
    public ObjectNode toJson(int timeLimitMs) {
        ObjectNode root = JSON.objectNode();
        ArrayNode subtopologies = root.putArray("subtopologies");
        for (String id : new TreeSet<>(partitions.keySet())) {
            subtopologies.addObject()
                    .put("id", id)
                    .put("partitions", partitions.get(id))
                    .put("stateful", stateful.get(id));
        }
        ArrayNode clientNodes = root.putArray("clients");
        clients.forEach(c -> clientNodes.add(clientJson(c)));
        root.putObject("config")
                .put("num_standby_replicas", numStandbyReplicas)
                .put("max_warmup_replicas", maxWarmupReplicas)
                .put("acceptable_recovery_lag", acceptableRecoveryLag);
        ObjectNode options = root.putObject("options").put("strategy", "optimal").put("time_limit_ms", timeLimitMs);
        if (stickiness.equals(RESTORE_COST)) {
            options.put("stickiness", RESTORE_COST);
            ObjectNode costs = root.putObject("task_costs");
            taskCosts.forEach((task, cost) -> {
                if (isStateful(StreamsAnswer.subtopologyOf(task))) {
                    costs.put(task, cost);
                }
            });
        }
        return root;
    }
}
