package io.stickyd.kafka.streams.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.Supplier;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import io.stickyd.kafka.streams.StreamsGroups;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignor;
import org.apache.kafka.streams.processor.assignment.TaskInfo;
import org.apache.kafka.streams.processor.assignment.TaskTopicPartition;
import org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor;
import org.apache.kafka.streams.processor.internals.assignment.ClientState;
import org.apache.kafka.streams.processor.internals.assignment.DefaultKafkaStreamsState;
import org.apache.kafka.streams.processor.internals.assignment.DefaultTaskInfo;
import org.apache.kafka.streams.processor.internals.assignment.DefaultTaskTopicPartition;
import org.apache.kafka.streams.processor.internals.assignment.HighAvailabilityTaskAssignor;
import org.apache.kafka.streams.processor.internals.assignment.RackAwareTaskAssignor;

/**
 * The JVM side of {@code bench/streams_kafka.py}: runs Kafka's own Streams task assignors on a
 * problem in the contract's Streams format (a file) and prints what each assigns, as JSON:
 * {@code {"ha": {"time_ms": 12.0, "clients": {"c1": {"active": [...], "standby": [...]}}}, ...}}.
 *
 * <ul>
 *   <li>{@code ha}: HighAvailabilityTaskAssignor, Kafka Streams' default (internal API; warm-ups
 *       are in its standbys, as the application would run them);
 *   <li>{@code sticky}: the KIP-924 StickyTaskAssignor;
 *   <li>{@code broker-sticky}: the KIP-1071 group coordinator's {@code sticky}, one member per
 *       thread.
 * </ul>
 *
 * A client's lag is 0 on its previous actives, the contract's lag where given, else 10^9 (no
 * state). Each assignor runs twice on fresh inputs; the faster (warm) time is reported.
 */
public final class StreamsAssignorBench {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long NO_STATE_LAG = 1_000_000_000L;

    private final List<String> clientIds = new ArrayList<>();
    private final Map<String, ProcessId> pids = new HashMap<>();
    private final Map<String, Integer> capacity = new HashMap<>();
    private final Map<String, SortedSet<TaskId>> prevActive = new HashMap<>();
    private final Map<String, SortedSet<TaskId>> prevStandby = new HashMap<>();
    private final Map<String, Map<TaskId, Long>> lags = new HashMap<>();
    private final Map<TaskId, Boolean> tasks = new TreeMap<>();
    private final Map<String, Integer> partitions = new TreeMap<>();
    private final AssignmentConfigs configs;

    private StreamsAssignorBench(JsonNode problem) {
        problem.get("subtopologies").forEach(s -> {
            int sub = Integer.parseInt(s.get("id").asText());
            partitions.put(s.get("id").asText(), s.get("partitions").asInt());
            for (int p = 0; p < s.get("partitions").asInt(); p++) {
                tasks.put(new TaskId(sub, p), s.path("stateful").asBoolean(true));
            }
        });
        JsonNode config = problem.path("config");
        configs = new AssignmentConfigs(
                config.path("acceptable_recovery_lag").asLong(10_000),
                config.path("max_warmup_replicas").asInt(2),
                config.path("num_standby_replicas").asInt(0),
                600_000L,
                List.of(),
                0,
                0,
                StreamsConfig.RACK_AWARE_ASSIGNMENT_STRATEGY_NONE);
        int n = 0;
        for (JsonNode client : problem.get("clients")) {
            String id = client.get("id").asText();
            clientIds.add(id);
            pids.put(id, new ProcessId(new UUID(0, n++)));
            capacity.put(id, client.path("capacity").asInt(1));
            prevActive.put(id, taskIds(client.path("active")));
            prevStandby.put(id, taskIds(client.path("standby")));
            Map<TaskId, Long> lag = new HashMap<>();
            tasks.forEach((task, stateful) -> {
                if (stateful) {
                    lag.put(task, NO_STATE_LAG);
                }
            });
            client.path("lags").fields().forEachRemaining(e -> lag.put(parse(e.getKey()), e.getValue().asLong()));
            prevActive.get(id).forEach(task -> {
                if (tasks.getOrDefault(task, false)) {
                    lag.put(task, 0L);
                }
            });
            lags.put(id, lag);
        }
    }

    public static void main(String[] args) throws Exception {
        JsonNode problem = JSON.readTree(Files.readAllBytes(Path.of(args[0])));
        StreamsAssignorBench bench = new StreamsAssignorBench(problem);
        ObjectNode out = JSON.createObjectNode();
        for (String name : args[1].split(",")) {
            Supplier<Map<String, SortedSet<String>[]>> run = switch (name) {
                case "ha" -> bench::highAvailability;
                case "sticky" -> () -> bench.kip924(new StickyTaskAssignor());
                case "broker-sticky" -> bench::brokerSticky;
                default -> throw new IllegalArgumentException("unknown assignor " + name);
            };
            double best = Double.MAX_VALUE;
            Map<String, SortedSet<String>[]> result = null;
            for (int round = 0; round < 2; round++) {
                long started = System.nanoTime();
                result = run.get();
                best = Math.min(best, (System.nanoTime() - started) / 1e6);
            }
            ObjectNode node = out.putObject(name);
            node.put("time_ms", best);
            ObjectNode clients = node.putObject("clients");
            result.forEach((id, kinds) -> {
                ObjectNode client = clients.putObject(id);
                kinds[0].forEach(client.putArray("active")::add);
                kinds[1].forEach(client.putArray("standby")::add);
            });
        }
        System.out.println(JSON.writeValueAsString(out));
    }

    private Map<String, SortedSet<String>[]> highAvailability() {
        Map<ProcessId, ClientState> states = new TreeMap<>();
        for (String id : clientIds) {
            states.put(pids.get(id), new ClientState(prevActive.get(id), prevStandby.get(id), lags.get(id),
                    Map.of(), capacity.get(id), pids.get(id)));
        }
        Set<TaskId> stateful = new TreeSet<>();
        tasks.forEach((task, isStateful) -> {
            if (isStateful) {
                stateful.add(task);
            }
        });
        // rack awareness off (strategy "none"): Kafka consults the rack assignor only to learn that
        RackAwareTaskAssignor racks = new RackAwareTaskAssignor(Cluster.empty(), Map.of(), Map.of(), Map.of(),
                Map.of(), null, configs, Time.SYSTEM);
        new HighAvailabilityTaskAssignor().assign(states, tasks.keySet(), stateful, racks, configs);
        Map<String, SortedSet<String>[]> out = new TreeMap<>();
        for (String id : clientIds) {
            ClientState state = states.get(pids.get(id));
            out.put(id, kinds(names(state.activeTasks()), names(state.standbyTasks())));
        }
        return out;
    }

    private Map<String, SortedSet<String>[]> kip924(TaskAssignor assignor) {
        Map<ProcessId, KafkaStreamsState> states = new TreeMap<>();
        for (String id : clientIds) {
            states.put(pids.get(id), new DefaultKafkaStreamsState(pids.get(id), capacity.get(id), Map.of(),
                    prevActive.get(id), prevStandby.get(id), new TreeMap<>(), Optional.empty(),
                    Optional.of(lags.get(id)), Optional.empty()));
        }
        Map<TaskId, TaskInfo> infos = new TreeMap<>();
        // a source partition per task, and a changelog partition per stateful task (Kafka's sticky
        // assignor gives standbys to tasks with a changelog)
        tasks.forEach((task, isStateful) -> {
            Set<TaskTopicPartition> partitions = new HashSet<>();
            partitions.add(new DefaultTaskTopicPartition(
                    new TopicPartition("source-" + task.subtopology(), task.partition()), true, false, () -> { }));
            if (isStateful) {
                partitions.add(new DefaultTaskTopicPartition(
                        new TopicPartition("changelog-" + task.subtopology(), task.partition()), false, true, () -> { }));
            }
            infos.put(task, new DefaultTaskInfo(task, isStateful, isStateful ? Set.of("store") : Set.of(), partitions));
        });
        ApplicationState application = new ApplicationState() {
            @Override
            public Map<ProcessId, KafkaStreamsState> kafkaStreamsStates(boolean computeTaskLags) {
                return states;
            }

            @Override
            public AssignmentConfigs assignmentConfigs() {
                return configs;
            }

            @Override
            public Map<TaskId, TaskInfo> allTasks() {
                return infos;
            }
        };
        Map<ProcessId, String> idOf = new HashMap<>();
        pids.forEach((id, pid) -> idOf.put(pid, id));
        Map<String, SortedSet<String>[]> out = new TreeMap<>();
        for (KafkaStreamsAssignment client : assignor.assign(application).assignment()) {
            SortedSet<String> active = new TreeSet<>();
            SortedSet<String> standby = new TreeSet<>();
            client.tasks().values().forEach(task ->
                    (task.type() == KafkaStreamsAssignment.AssignedTask.Type.ACTIVE ? active : standby)
                            .add(task.id().toString()));
            out.put(idOf.get(client.processId()), kinds(active, standby));
        }
        clientIds.forEach(id -> out.putIfAbsent(id, kinds(new TreeSet<>(), new TreeSet<>())));
        return out;
    }

    private Map<String, SortedSet<String>[]> brokerSticky() {
        TreeMap<String, StreamsGroups.Member> members = new TreeMap<>();
        Map<String, String> clientOf = new HashMap<>();
        for (String id : clientIds) {
            for (int thread = 0; thread < capacity.get(id); thread++) {
                String member = id + "-" + thread;
                clientOf.put(member, id);
                members.put(member, StreamsGroups.Member.of(pids.get(id).id().toString(),
                        thread == 0 ? grouped(prevActive.get(id)) : Map.of(),
                        thread == 0 ? grouped(prevStandby.get(id)) : Map.of()));
            }
        }
        TreeMap<String, Integer> counts = new TreeMap<>(partitions);
        Set<String> stateful = new HashSet<>();
        counts.keySet().forEach(s -> {
            if (tasks.get(new TaskId(Integer.parseInt(s), 0))) {
                stateful.add(s);
            }
        });
        GroupAssignment assignment = new org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor()
                .assign(new StreamsGroups.Group(members, configs.numStandbyReplicas()),
                        new StreamsGroups.Topology(counts, stateful));
        Map<String, SortedSet<String>[]> out = new TreeMap<>();
        clientIds.forEach(id -> out.put(id, kinds(new TreeSet<>(), new TreeSet<>())));
        assignment.members().forEach((member, parts) -> {
            SortedSet<String>[] kinds = out.get(clientOf.get(member));
            parts.activeTasks().forEach((s, ps) -> ps.forEach(p -> kinds[0].add(s + "_" + p)));
            parts.standbyTasks().forEach((s, ps) -> ps.forEach(p -> kinds[1].add(s + "_" + p)));
        });
        return out;
    }

    @SuppressWarnings("unchecked")
    private static SortedSet<String>[] kinds(SortedSet<String> active, SortedSet<String> standby) {
        return new SortedSet[] {active, standby};
    }

    private static Map<String, Set<Integer>> grouped(Set<TaskId> ids) {
        Map<String, Set<Integer>> out = new HashMap<>();
        ids.forEach(id -> out.computeIfAbsent(Integer.toString(id.subtopology()), k -> new TreeSet<>()).add(id.partition()));
        return out;
    }

    private static SortedSet<String> names(Set<TaskId> ids) {
        SortedSet<String> out = new TreeSet<>();
        ids.forEach(id -> out.add(id.toString()));
        return out;
    }

    private static TaskId parse(String name) {
        int cut = name.lastIndexOf('_');
        return new TaskId(Integer.parseInt(name.substring(0, cut)), Integer.parseInt(name.substring(cut + 1)));
    }

    private static SortedSet<TaskId> taskIds(JsonNode names) {
        SortedSet<TaskId> out = new TreeSet<>();
        names.forEach(name -> out.add(parse(name.asText())));
        return out;
    }
}
