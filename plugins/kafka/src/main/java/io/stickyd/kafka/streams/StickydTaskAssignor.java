package io.stickyd.kafka.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stickyd.kafka.StickydHttpClient;
import java.io.IOException;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment.AssignedTask;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignor;
import org.apache.kafka.streams.processor.assignment.TaskInfo;
import org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A KIP-924 task assignor ({@code task.assignor.class}) that asks stickyd for a 100% balanced
 * assignment with the most overlap with the previous one (docs/wire-format.md, Streams assignment).
 *
 * <p>Priority order, as the service applies it: every active task assigned once; the active, the
 * stateful (active + standby) and every subtopology's active counts balanced by capacity (stream
 * threads); then the fewest stateful active moves; then the fewest standby moves; a moved active
 * goes preferably to a caught-up client. While a target owner is not caught up (lag above
 * {@code acceptable.recovery.lag}), the task keeps running on a caught-up client and up to
 * {@code max.warmup.replicas} warm-ups (run as standby tasks) restore its state on the target
 * owner; a follow-up rebalance is then requested after {@code probing.rebalance.interval.ms}
 * (or {@code stickyd.probing.rebalance.interval.ms} when set).
 *
 * <p>Mapping: one contract client per Streams process ({@link ProcessId}), capacity = its
 * processing threads, previous active and standby tasks, lags of stateful tasks, rack; the
 * configuration's {@code num.standby.replicas}, {@code max.warmup.replicas} and
 * {@code acceptable.recovery.lag}; each stateful task's restore cost (the largest lag any client
 * reports: a client without its state lags by the whole changelog) as {@code task_costs} with
 * {@code options.stickiness: restore_cost} ({@code stickyd.stickiness=tasks} in the Streams
 * configuration counts moved tasks instead). Client tags (rack-aware assignment tags) are not sent: the
 * contract has racks only.
 *
 * <p>Configuration: {@code stickyd.url} and {@code stickyd.timeout.ms} in the Streams
 * configuration, else {@code STICKYD_URL} / {@code STICKYD_TIMEOUT_MS}. When stickyd does not
 * answer in time, answers an error or an answer that does not fit, Kafka's own
 * {@link StickyTaskAssignor} assigns in-process; that is logged once per outage and counted
 * ({@link #fallbacks()}).
 */
public class StickydTaskAssignor implements TaskAssignor {
    /** Overrides the follow-up delay (Kafka Streams refuses a probing interval below one minute). */
    public static final String FOLLOWUP_CONFIG = "stickyd.probing.rebalance.interval.ms";
    public static final String PATH = "v1/assign/streams";

    private static final Logger LOG = LoggerFactory.getLogger(StickydTaskAssignor.class);
    private static final Outage OUTAGE = new Outage("Kafka Streams task assignor", "streams-client");
    /** Kafka's lag for a task the client runs as active right now (Task.LATEST_OFFSET). */
    private static final long LATEST_OFFSET = -2L;

    private final StickyTaskAssignor fallback = new StickyTaskAssignor();
    private StickydHttpClient endpoint = StickydHttpClient.fromConfig(Map.of(), System.getenv());
    private Long followupOverrideMs;
    private String stickiness = StreamsRequest.RESTORE_COST;

    @Override
    public void configure(Map<String, ?> configs) {
        endpoint = StickydHttpClient.fromConfig(configs, System.getenv());
        Object followup = configs.get(FOLLOWUP_CONFIG);
        followupOverrideMs = followup == null ? null : Long.parseLong(followup.toString().trim());
        stickiness = StreamsRequest.stickinessOf(configs.get(StreamsRequest.STICKINESS_CONFIG));
        fallback.configure(configs);
    }

    /** Fallbacks to Kafka's own assignor in this JVM since it started. */
    public static long fallbacks() {
        return OUTAGE.fallbacks();
    }

    @Override
    public TaskAssignment assign(ApplicationState state) {
        ObjectNode request;
        JsonNode response;
        TaskAssignment assignment;
        long started = System.nanoTime();
        try {
            Map<ProcessId, KafkaStreamsState> clients = state.kafkaStreamsStates(true);
            AssignmentConfigs configs = state.assignmentConfigs();
            Map<String, TaskId> tasks = taskNames(state.allTasks());
            request = request(state.allTasks(), clients, configs).stickiness(stickiness).toJson(solveTimeLimitMs(endpoint));
            response = endpoint.post(PATH, request, OUTAGE::failedOver);
            Set<String> ids = new HashSet<>();
            clients.keySet().forEach(pid -> ids.add(pid.id().toString()));
            StreamsAnswer answer = StreamsAnswer.fromJson(response, ids);
            long followupMs = followupOverrideMs != null ? followupOverrideMs : configs.probingRebalanceIntervalMs();
            assignment = toAssignment(answer, clients.keySet(), tasks, followupMs);
        } catch (IOException | RuntimeException e) {
            OUTAGE.fellBack(LOG, endpoint.describe(), started, e);
            return fallback.assign(state);
        }
        OUTAGE.answered(LOG, endpoint.describe(), started);
        onAnswer(state, request, response);
        return assignment;
    }

    /** The solver's time limit: 70% of the first replica's share of the HTTP timeout (all of it with one replica). */
    static int solveTimeLimitMs(StickydHttpClient http) {
        return Math.max(1, http.firstShareMs() * 7 / 10);
    }

    /** Called with every answer used; tests and benchmarks record it. */
    protected void onAnswer(ApplicationState state, JsonNode request, JsonNode response) {
    }

    static Map<String, TaskId> taskNames(Map<TaskId, TaskInfo> allTasks) {
        Map<String, TaskId> names = new HashMap<>();
        for (TaskId id : allTasks.keySet()) {
            if (id.topologyName() != null) {
                throw new IllegalStateException("named topologies are not supported (task " + id + ")");
            }
            names.put(StreamsRequest.taskName(Integer.toString(id.subtopology()), id.partition()), id);
        }
        return names;
    }

    static StreamsRequest request(
            Map<TaskId, TaskInfo> allTasks, Map<ProcessId, KafkaStreamsState> clients, AssignmentConfigs configs) {
        StreamsRequest request = new StreamsRequest(
                configs.numStandbyReplicas(), configs.maxWarmupReplicas(), configs.acceptableRecoveryLag());
        Set<TaskId> stateful = new HashSet<>();
        allTasks.forEach((id, info) -> {
            request.addTask(Integer.toString(id.subtopology()), id.partition(), info.isStateful());
            if (info.isStateful()) {
                stateful.add(id);
            }
        });
        for (KafkaStreamsState client : new TreeMap<>(clients).values()) {
            Map<String, Long> lags = new HashMap<>();
            client.statefulTasksToLagSums().forEach((task, lag) -> {
                if (stateful.contains(task)) {
                    lags.put(name(task), lag == LATEST_OFFSET ? 0L : lag);
                    // a client without the task's state lags by its whole changelog: the largest
                    // lag is what restoring it from scratch costs
                    request.addTaskCost(name(task), lag);
                }
            });
            request.addClient(
                    client.processId().id().toString(),
                    client.numProcessingThreads(),
                    client.rackId().orElse(null),
                    names(client.previousActiveTasks(), allTasks.keySet()),
                    names(client.previousStandbyTasks(), allTasks.keySet()),
                    lags);
        }
        return request;
    }

    static TaskAssignment toAssignment(
            StreamsAnswer answer, Set<ProcessId> clients, Map<String, TaskId> tasks, long followupMs) {
        Instant deadline = Instant.now().plusMillis(followupMs);
        java.util.List<KafkaStreamsAssignment> out = new java.util.ArrayList<>();
        for (ProcessId pid : new TreeSet<>(clients)) {
            String id = pid.id().toString();
            Set<AssignedTask> assigned = new HashSet<>();
            for (String name : answer.active().get(id)) {
                assigned.add(new AssignedTask(task(tasks, name), AssignedTask.Type.ACTIVE));
            }
            for (String name : answer.standby().get(id)) {
                assigned.add(new AssignedTask(task(tasks, name), AssignedTask.Type.STANDBY));
            }
            KafkaStreamsAssignment client = KafkaStreamsAssignment.of(pid, assigned);
            out.add(answer.followupRebalance() ? client.withFollowupRebalance(deadline) : client);
        }
        return new TaskAssignment(out);
    }

    private static TaskId task(Map<String, TaskId> tasks, String name) {
        TaskId id = tasks.get(name);
        if (id == null) {
            throw new IllegalArgumentException("stickyd assigned unknown task " + name);
        }
        return id;
    }

    private static String name(TaskId id) {
        return StreamsRequest.taskName(Integer.toString(id.subtopology()), id.partition());
    }

    private static SortedSet<String> names(Set<TaskId> ids, Set<TaskId> known) {
        SortedSet<String> out = new TreeSet<>();
        ids.stream().filter(known::contains).forEach(id -> out.add(name(id)));
        return out;
    }
}
