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
import org.apache.kafka.coordinator.group.streams.assignor.AssignmentMemberSpec;
import org.apache.kafka.coordinator.group.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.streams.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;
import org.apache.kafka.coordinator.group.streams.assignor.TaskAssignor;
import org.apache.kafka.coordinator.group.streams.assignor.TaskAssignorException;
import org.apache.kafka.coordinator.group.streams.assignor.TaskId;
import org.apache.kafka.coordinator.group.streams.assignor.TopologyDescriber;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A KIP-1071 broker-side streams task assignor (the group coordinator's streams
 * {@link TaskAssignor}) that asks stickyd, with the same priority order as
 * {@link StickydTaskAssignor}: every active task once; active, stateful and per-subtopology counts
 * balanced by capacity; then the fewest stateful active moves, then the fewest standby moves.
 *
 * <p>Mapping: one contract client per process id, capacity = its members (stream threads); its
 * previous active tasks, and standby plus warm-up tasks as standbys; lags from the changelog offsets
 * the members report ({@code taskEndOffsets - taskOffsets}); the member's rack;
 * {@code num.standby.replicas} from the group's assignment configs. The process's tasks are then
 * dealt to its members: each task stays on the member that had it while that member is under its
 * even share, the rest go to the member with the fewest.
 *
 * <p>Warm-ups: the interface has no follow-up (probing) rebalance, and Kafka up to 4.3 sends no
 * {@code max.warmup.replicas} / {@code acceptable.recovery.lag} to assignors, so unless the
 * assignment configs carry both, the members run the answer's {@code target} at once (no warm-ups).
 *
 * <p>Configuration: {@code STICKYD_URL} / {@code STICKYD_TIMEOUT_MS} in the broker's environment
 * (the interface has no configure step). On timeout, error or an answer that does not fit, Kafka's
 * built-in {@code sticky} assignor assigns; logged once per outage and counted ({@link #fallbacks()}).
 *
 * <p>Kafka 4.1 to 4.3 have this interface but no broker setting to select another assignor than the
 * built-in {@code sticky}; this class is ready for a release that has one.
 */
public class StickydStreamsGroupAssignor implements TaskAssignor {
    private static final Logger LOG = LoggerFactory.getLogger(StickydStreamsGroupAssignor.class);
    private static final Outage OUTAGE = new Outage("Kafka streams group (KIP-1071) task assignor");

    private final StickyTaskAssignor fallback = new StickyTaskAssignor();
    private final StickydHttpClient endpoint;

    public StickydStreamsGroupAssignor() {
        this(StickydHttpClient.fromConfig(Map.of(), System.getenv()));
    }

    public StickydStreamsGroupAssignor(StickydHttpClient endpoint) {
        this.endpoint = endpoint;
    }

    @Override
    public String name() {
        return "stickyd";
    }

    /** Fallbacks to Kafka's built-in assignor in this JVM since it started. */
    public static long fallbacks() {
        return OUTAGE.fallbacks();
    }

    @Override
    public GroupAssignment assign(GroupSpec groupSpec, TopologyDescriber topology) throws TaskAssignorException {
        GroupAssignment assignment;
        try {
            assignment = solve(groupSpec, topology);
        } catch (IOException | RuntimeException e) {
            OUTAGE.fellBack(LOG, endpoint.baseUrl().toString(), e);
            return fallback.assign(groupSpec, topology);
        }
        OUTAGE.answered(LOG, endpoint.baseUrl().toString());
        return assignment;
    }

    private GroupAssignment solve(GroupSpec groupSpec, TopologyDescriber topology) throws IOException {
        Map<String, String> configs = groupSpec.assignmentConfigs();
        String maxWarmups = configs.get("max.warmup.replicas");
        String acceptableLag = configs.get("acceptable.recovery.lag");
        boolean warmups = maxWarmups != null && acceptableLag != null;
        StreamsRequest request = new StreamsRequest(
                Integer.parseInt(configs.getOrDefault("num.standby.replicas", "0").trim()),
                warmups ? Integer.parseInt(maxWarmups.trim()) : 0,
                warmups ? Long.parseLong(acceptableLag.trim()) : 0L);
        for (String subtopology : topology.subtopologies()) {
            boolean stateful = topology.isStateful(subtopology);
            int partitions = topology.maxNumInputPartitions(subtopology);
            for (int p = 0; p < partitions; p++) {
                request.addTask(subtopology, p, stateful);
            }
        }
        Map<String, List<String>> membersOf = new TreeMap<>();
        groupSpec.members().forEach((memberId, member) ->
                membersOf.computeIfAbsent(member.processId(), k -> new ArrayList<>()).add(memberId));
        membersOf.values().forEach(list -> list.sort(null));
        for (Map.Entry<String, List<String>> process : membersOf.entrySet()) {
            addProcess(request, process.getKey(), process.getValue(), groupSpec.members());
        }
        JsonNode response = endpoint.post(StickydTaskAssignor.PATH, request.toJson(StickydTaskAssignor.solveTimeLimitMs(endpoint)));
        StreamsAnswer answer = StreamsAnswer.fromJson(response, membersOf.keySet());
        Map<String, MemberAssignment> out = new HashMap<>();
        for (Map.Entry<String, List<String>> process : membersOf.entrySet()) {
            String pid = process.getKey();
            SortedSet<String> active = warmups ? answer.active().get(pid) : targetOf(response, pid, "active");
            SortedSet<String> standby =
                    new TreeSet<>(warmups ? answer.standby().get(pid) : targetOf(response, pid, "standby"));
            SortedSet<String> warm = warmups ? answer.warmups().get(pid) : new TreeSet<>();
            standby.removeAll(warm);
            dealToMembers(process.getValue(), groupSpec.members(), active, standby, warm, out);
        }
        return new GroupAssignment(out);
    }

    private static void addProcess(
            StreamsRequest request, String processId, List<String> memberIds, Map<String, AssignmentMemberSpec> members) {
        SortedSet<String> active = new TreeSet<>();
        SortedSet<String> standby = new TreeSet<>();
        Map<String, Long> lags = new HashMap<>();
        String rack = null;
        for (String memberId : memberIds) {
            AssignmentMemberSpec member = members.get(memberId);
            active.addAll(names(member.activeTasks()));
            standby.addAll(names(member.standbyTasks()));
            standby.addAll(names(member.warmupTasks()));
            member.taskEndOffsets().forEach((task, end) -> {
                Long offset = member.taskOffsets().get(task);
                if (offset != null && offset >= 0 && end != null && end >= 0) {
                    lags.merge(name(task), Math.max(0L, end - offset), Math::min);
                }
            });
            rack = rack != null ? rack : member.rackId().orElse(null);
        }
        standby.removeAll(active);
        request.addClient(processId, memberIds.size(), rack, active, standby, lags);
    }

    private static SortedSet<String> targetOf(JsonNode response, String pid, String kind) {
        JsonNode list = response.path("target").path(pid).path(kind);
        if (!list.isArray()) {
            throw new IllegalArgumentException("stickyd response has no target." + kind + " for client " + pid);
        }
        SortedSet<String> out = new TreeSet<>();
        list.forEach(node -> out.add(node.asText()));
        return out;
    }

    /**
     * Deals one process's tasks to its members: a task stays with a member that had it (same
     * kind) while that member holds fewer than its even share, the rest go to the member with the
     * fewest tasks of that kind (then the lowest member id).
     */
    static void dealToMembers(
            List<String> memberIds,
            Map<String, AssignmentMemberSpec> members,
            Set<String> active,
            Set<String> standby,
            Set<String> warmup,
            Map<String, MemberAssignment> out) {
        Map<String, Set<String>> activeOf = deal(memberIds, active, id -> members.get(id).activeTasks());
        Map<String, Set<String>> standbyOf = deal(memberIds, standby, id -> members.get(id).standbyTasks());
        Map<String, Set<String>> warmupOf = deal(memberIds, warmup, id -> members.get(id).warmupTasks());
        for (String id : memberIds) {
            out.put(id, new MemberAssignment(
                    grouped(activeOf.get(id)), grouped(standbyOf.get(id)), grouped(warmupOf.get(id))));
        }
    }

    private static Map<String, Set<String>> deal(
            List<String> memberIds, Set<String> tasks,
            java.util.function.Function<String, Map<String, Set<Integer>>> previous) {
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
            out.computeIfAbsent(StreamsAnswer.subtopologyOf(task), k -> new HashSet<>())
                    .add(StreamsAnswer.partitionOf(task));
        }
        return out;
    }

    private static String name(TaskId task) {
        return StreamsRequest.taskName(task.subtopologyId(), task.partition());
    }

    private static SortedSet<String> names(Map<String, Set<Integer>> tasks) {
        SortedSet<String> out = new TreeSet<>();
        tasks.forEach((subtopology, partitions) ->
                partitions.forEach(p -> out.add(StreamsRequest.taskName(subtopology, p))));
        return out;
    }
}
