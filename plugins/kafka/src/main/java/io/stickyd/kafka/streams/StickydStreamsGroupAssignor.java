package io.stickyd.kafka.streams;

import com.fasterxml.jackson.databind.JsonNode;
import io.stickyd.kafka.StickydHttpClient;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;
import org.apache.kafka.common.Configurable;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignmentState;
import org.apache.kafka.coordinator.group.api.streams.assignor.TaskAssignor;
import org.apache.kafka.coordinator.group.api.streams.assignor.TaskAssignorException;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The broker-side streams task assignor {@code stickyd} (KIP-1071 streams groups, on the public
 * KIP-1357 {@link TaskAssignor} interface of Kafka 4.4), with the same priority order as
 * {@link StickydTaskAssignor}: every active task once; active, stateful and per-subtopology counts
 * balanced by capacity; then the fewest stateful active moves, then the fewest standby moves.
 *
 * <p>Install: the jar in the broker's {@code libs/}, this class in {@code group.streams.assignors}
 * (first to make it the default, else groups choose it with the group config
 * {@code streams.assignor.name=stickyd}), and {@code stickyd.url} / {@code stickyd.timeout.ms} /
 * {@code stickyd.token} in the broker properties (else {@code STICKYD_URL}, ... in its environment).
 *
 * <p>Mapping: one contract client per process id, capacity = its members (stream threads); its
 * previous active tasks, and standby plus warm-up tasks as standbys; lags from the changelog offsets
 * the members report (the task's {@code taskEndOffsets} minus the process's {@code taskOffsets});
 * the member's rack;
 * {@code num.standby.replicas}; each stateful task's restore cost (its changelog end offsets, else
 * the largest changelog offset a member reports, else what the group's last request gave it) as
 * {@code task_costs} with
 * {@code options.stickiness: restore_cost} (broker property {@code stickyd.stickiness=tasks} counts
 * moved tasks instead). The answer's {@code target} is returned: the coordinator itself
 * places warm-up tasks while it reconciles toward it, so the request asks for none. Each process's
 * tasks are dealt to its members: a task stays on the member that had it while that member is under
 * its even share, the rest go to the member with the fewest.
 *
 * <p>The request has one strict deadline ({@code stickyd.timeout.ms}). On a timeout, an error
 * status or an answer that does not fit (a task missing, twice active, unknown, or a standby beside
 * its active), Kafka's built-in {@code sticky} assignor assigns; logged once per outage and counted
 * ({@link #fallbacks()}, and in the JMX metrics with {@code group-type=streams}). Thread-safe, as
 * the interface requires: no state per call beyond the immutable client, the process-wide outage
 * record and the last costs per process.
 */
public class StickydStreamsGroupAssignor implements TaskAssignor, Configurable {
    public static final String NAME = "stickyd";

    private static final Logger LOG = LoggerFactory.getLogger(StickydStreamsGroupAssignor.class);
    private static final Outage OUTAGE = new Outage("Kafka streams group task assignor", "streams");
    // the broker may configure several instances with the same properties: logged once per change
    private static volatile String lastConfigured = "";

    private final StickyTaskAssignor fallback = new StickyTaskAssignor();
    private final LastCosts lastCosts = new LastCosts();
    private volatile StickydHttpClient endpoint;
    private volatile String stickiness = StreamsRequest.RESTORE_COST;

    public StickydStreamsGroupAssignor() {
        this(StickydHttpClient.fromConfig(Map.of(), System.getenv()));
    }

    public StickydStreamsGroupAssignor(StickydHttpClient endpoint) {
        this.endpoint = endpoint;
    }

    @Override
    public void configure(Map<String, ?> configs) {
        StickydHttpClient configured = StickydHttpClient.fromConfig(configs, System.getenv());
        stickiness = StreamsRequest.stickinessOf(configs.get(StreamsRequest.STICKINESS_CONFIG));
        endpoint = configured;
        String described = configured.describe() + " with a " + configured.timeoutMs() + " ms deadline";
        if (!described.equals(lastConfigured)) {
            lastConfigured = described;
            LOG.info("stickyd streams group assignor asks {}", described);
            configured.warmUp();
        }
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String toString() {
        return NAME;
    }

    /** Fallbacks to Kafka's built-in assignor in this JVM since it started. */
    public static long fallbacks() {
        return OUTAGE.fallbacks();
    }

    @Override
    public GroupAssignment assign(GroupSpec groupSpec, TopologyDescriber topology) throws TaskAssignorException {
        StickydHttpClient stickyd = endpoint;
        GroupAssignment assignment;
        long started = System.nanoTime();
        try {
            assignment = solve(stickyd, stickiness, lastCosts, groupSpec, topology);
        } catch (IOException | RuntimeException e) {
            OUTAGE.fellBack(LOG, stickyd.describe(), started, e);
            return fallback.assign(groupSpec, topology);
        }
        OUTAGE.answered(LOG, stickyd.describe(), started);
        return assignment;
    }

    private static GroupAssignment solve(
            StickydHttpClient stickyd, String stickiness, LastCosts lastCosts, GroupSpec groupSpec,
            TopologyDescriber topology)
            throws IOException {
        StreamsRequest request = new StreamsRequest(groupSpec.configs().numStandbyReplicas(), 0, 0L).stickiness(stickiness);
        Set<String> tasks = new TreeSet<>();
        for (String subtopology : topology.subtopologies()) {
            boolean stateful = topology.isStateful(subtopology);
            for (int p = 0; p < topology.maxNumInputPartitions(subtopology); p++) {
                request.addTask(subtopology, p, stateful);
                tasks.add(StreamsRequest.taskName(subtopology, p));
            }
        }
        Map<String, List<String>> membersOf = new TreeMap<>();
        for (String memberId : groupSpec.memberIds()) {
            membersOf.computeIfAbsent(groupSpec.memberMetadata(memberId).processId(), k -> new ArrayList<>()).add(memberId);
        }
        membersOf.values().forEach(list -> list.sort(null));
        Map<String, Long> ends = endOffsets(groupSpec);
        lastCosts.complete(membersOf.keySet(), ends, tasks).forEach(request::addTaskCost);
        membersOf.forEach((processId, memberIds) -> addProcess(request, processId, memberIds, groupSpec, tasks, ends));
        JsonNode response = stickyd.post(StickydTaskAssignor.PATH, request.toJson(StickydTaskAssignor.solveTimeLimitMs(stickyd)), OUTAGE::failedOver);
        Map<String, SortedSet<String>> active = new TreeMap<>();
        Map<String, SortedSet<String>> standby = new TreeMap<>();
        for (String processId : membersOf.keySet()) {
            active.put(processId, targetOf(response, processId, "active"));
            standby.put(processId, targetOf(response, processId, "standby"));
        }
        checkFits(tasks, active, standby);
        Map<String, MemberAssignment> out = new HashMap<>();
        membersOf.forEach((processId, memberIds) ->
                dealToMembers(memberIds, groupSpec, active.get(processId), standby.get(processId), out));
        return new GroupAssignment(out);
    }

    /**
     * Per task, its changelog end offsets as the members report them, else the largest changelog
     * offset a member's local state reached; each is the task's restore cost in the request (where
     * none is reported, the group's last request's: {@link LastCosts}).
     */
    private static Map<String, Long> endOffsets(GroupSpec groupSpec) {
        Map<String, Long> ends = new HashMap<>();
        for (String memberId : groupSpec.memberIds()) {
            MemberAssignmentState state = groupSpec.memberAssignmentState(memberId);
            state.taskEndOffsets().forEach((subtopology, byPartition) -> byPartition.forEach((partition, end) -> {
                if (StreamsRequest.isRecordCount(end)) {
                    ends.merge(StreamsRequest.taskName(subtopology, partition), end, Math::max);
                }
            }));
        }
        // without an end offset, at a cold start (no member runs the task), the furthest offset a
        // member's local state reached stands for it: that member is the caught-up one. A task a
        // member runs is not at a cold start: its runner is the caught-up one, and an older state
        // directory elsewhere would only pass for it
        Map<String, Long> furthest = new HashMap<>();
        Set<String> running = new HashSet<>();
        for (String memberId : groupSpec.memberIds()) {
            MemberAssignmentState state = groupSpec.memberAssignmentState(memberId);
            running.addAll(names(state.activeTasks()));
            state.taskOffsets().forEach((subtopology, byPartition) -> byPartition.forEach((partition, offset) -> {
                if (StreamsRequest.isRecordCount(offset)) {
                    furthest.merge(StreamsRequest.taskName(subtopology, partition), offset, Math::max);
                }
            }));
        }
        furthest.keySet().removeAll(running);
        furthest.forEach(ends::putIfAbsent);
        return ends;
    }

    private static void addProcess(
            StreamsRequest request, String processId, List<String> memberIds, GroupSpec groupSpec, Set<String> tasks,
            Map<String, Long> ends) {
        SortedSet<String> active = new TreeSet<>();
        SortedSet<String> standby = new TreeSet<>();
        Map<String, Long> lags = new HashMap<>();
        String rack = null;
        for (String memberId : memberIds) {
            MemberAssignmentState state = groupSpec.memberAssignmentState(memberId);
            active.addAll(names(state.activeTasks()));
            standby.addAll(names(state.standbyTasks()));
            standby.addAll(names(state.warmupTasks()));
            state.taskOffsets().forEach((subtopology, offsets) -> offsets.forEach((partition, offset) -> {
                String task = StreamsRequest.taskName(subtopology, partition);
                Long end = ends.get(task);
                if (StreamsRequest.isRecordCount(offset) && end != null) {
                    lags.merge(task, Math.max(0L, end - offset), Math::min);
                }
            }));
            rack = rack != null ? rack : groupSpec.memberMetadata(memberId).rackId().orElse(null);
        }
        // a task that left the topology, or that the process runs as active, is not its standby
        active.retainAll(tasks);
        standby.retainAll(tasks);
        standby.removeAll(active);
        lags.keySet().retainAll(tasks);
        request.addClient(processId, memberIds.size(), rack, active, standby, lags);
    }

    private static SortedSet<String> targetOf(JsonNode response, String processId, String kind) {
        JsonNode list = response.path("target").path(processId).path(kind);
        if (!list.isArray()) {
            throw new IllegalArgumentException("stickyd response has no target." + kind + " for process " + processId);
        }
        SortedSet<String> out = new TreeSet<>();
        list.forEach(node -> out.add(node.asText()));
        return out;
    }

    /**
     * Refuses an answer that the group cannot run: every task active on exactly one process, only
     * known tasks, no standby on the process that runs the task's active.
     */
    static void checkFits(Set<String> tasks, Map<String, SortedSet<String>> active, Map<String, SortedSet<String>> standby) {
        Map<String, String> owner = new HashMap<>();
        active.forEach((processId, names) -> names.forEach(task -> {
            if (!tasks.contains(task)) {
                throw new IllegalArgumentException("stickyd assigned unknown task " + task + " to " + processId);
            }
            String other = owner.putIfAbsent(task, processId);
            if (other != null) {
                throw new IllegalArgumentException("stickyd assigned task " + task + " to " + other + " and " + processId);
            }
        }));
        if (owner.size() != tasks.size()) {
            Set<String> missing = new TreeSet<>(tasks);
            missing.removeAll(owner.keySet());
            throw new IllegalArgumentException("stickyd left tasks unassigned: " + missing);
        }
        standby.forEach((processId, names) -> names.forEach(task -> {
            if (!tasks.contains(task) || processId.equals(owner.get(task))) {
                throw new IllegalArgumentException("stickyd gave " + processId + " an invalid standby " + task);
            }
        }));
    }

    /**
     * Deals one process's tasks to its members: a task stays with a member that had it (same
     * kind) while that member holds fewer than its even share, the rest go to the member with the
     * fewest tasks of that kind (then the lowest member id).
     */
    static void dealToMembers(
            List<String> memberIds, GroupSpec groupSpec, Set<String> active, Set<String> standby,
            Map<String, MemberAssignment> out) {
        Map<String, Set<String>> activeOf = deal(memberIds, active, id -> groupSpec.memberAssignmentState(id).activeTasks());
        Map<String, Set<String>> standbyOf = deal(memberIds, standby, id -> {
            MemberAssignmentState state = groupSpec.memberAssignmentState(id);
            Map<String, Set<Integer>> held = new HashMap<>(state.standbyTasks());
            state.warmupTasks().forEach((s, ps) -> held.merge(s, ps, (a, b) -> {
                Set<Integer> both = new TreeSet<>(a);
                both.addAll(b);
                return both;
            }));
            return held;
        });
        for (String id : memberIds) {
            out.put(id, new MemberAssignment(grouped(activeOf.get(id)), grouped(standbyOf.get(id))));
        }
    }

    private static Map<String, Set<String>> deal(
            List<String> memberIds, Set<String> tasks, Function<String, Map<String, Set<Integer>>> previous) {
        Map<String, Set<String>> dealt = new TreeMap<>();
        memberIds.forEach(id -> dealt.put(id, new TreeSet<>()));
        int share = (tasks.size() + memberIds.size() - 1) / Math.max(1, memberIds.size());
        Set<String> left = new TreeSet<>(tasks);
        for (String id : memberIds) {
            for (String task : names(previous.apply(id))) {
                if (left.contains(task) && dealt.get(id).size() < share) {
                    dealt.get(id).add(task);
                    left.remove(task);
                }
            }
        }
        for (String task : left) {
            String fewest = memberIds.get(0);
            for (String id : memberIds) {
                if (dealt.get(id).size() < dealt.get(fewest).size()) {
                    fewest = id;
                }
            }
            dealt.get(fewest).add(task);
        }
        return dealt;
    }

    private static Map<String, Set<Integer>> grouped(Set<String> tasks) {
        Map<String, Set<Integer>> out = new HashMap<>();
        for (String task : tasks) {
            out.computeIfAbsent(StreamsAnswer.subtopologyOf(task), k -> new TreeSet<>()).add(StreamsAnswer.partitionOf(task));
        }
        return out;
    }

    private static SortedSet<String> names(Map<String, Set<Integer>> tasks) {
        SortedSet<String> out = new TreeSet<>();
        tasks.forEach((subtopology, partitions) -> partitions.forEach(p -> out.add(StreamsRequest.taskName(subtopology, p))));
        return out;
    }
}
