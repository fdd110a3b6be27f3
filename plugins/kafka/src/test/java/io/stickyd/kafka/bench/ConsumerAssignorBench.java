package io.stickyd.kafka.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.management.OperatingSystemMXBean;
import io.stickyd.kafka.AssignorMetrics;
import io.stickyd.kafka.StickydConsumerGroupAssignor;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

/**
 * The JVM side of {@code bench/kafka_assignors.py}: runs Kafka's own consumer assignors on a consumer
 * problem in the contract's format (a file, as {@code bench/layouts.py} writes it) and prints, per
 * assignor, its time and what its answer costs, as one JSON object:
 * {@code {"sticky": {"time_ms": 812.5, "cpu_ms": 820.0, "moves": 0, "min_load": 500, "max_load": 501, "unassigned": 0,
 * "duplicated": 0}, ...}} ({@code time_ms}: the fastest timed call; {@code cpu_ms}: the CPU time this
 * JVM spent per timed call, all its threads, on average; {@code calls}: how many timed calls).
 *
 * <ul>
 *   <li>{@code sticky}: the client-side {@link StickyAssignor} (eager; previous owners travel in its
 *       user data, made the way a consumer makes it: {@code onAssignment} then {@code subscriptionUserData});
 *   <li>{@code cooperative-sticky}: the client-side {@link CooperativeStickyAssignor} (owned partitions and
 *       generation in the subscription). Its first answer withholds partitions changing owner; the
 *       follow-up rebalances the consumers then trigger are run too (up to 5, until nothing is withheld),
 *       and the figures are those of the settled assignment ({@code withheld}: partitions left out by
 *       the first answer; {@code follow_up_rebalances}, {@code follow_up_ms}: their number and time);
 *   <li>{@code uniform}, {@code range}: the KIP-848 group coordinator's built-in assignors, given the
 *       group as the coordinator holds it (current assignment per member, topic ids);
 *   <li>{@code stickyd-plugin}: stickyd's own {@link StickydConsumerGroupAssignor} on that same group, asking
 *       the stickyd service at {@code STICKYD_URL} within {@code STICKYD_TIMEOUT_MS} (half of it is the
 *       solver's time limit): mapping, HTTP, solve, reading and checking the answer, all timed.
 *       {@code fallbacks}: how many timed calls the uniform fallback answered (then the figures are
 *       uniform's, not stickyd's). Every call of a server-side assignor gets the same Assignment objects,
 *       as a coordinator keeps an unchanged member's Assignment from one rebalance to the next, so the
 *       plug-in reads each member's partitions once ({@code HeldPartitions});
 *   <li>{@code stickyd-plugin-new-maps}: the same, but every timed call gets new Assignment objects (as
 *       if every member's assignment had just changed: each member's partitions are read in full);
 *   <li>{@code stickyd-plugin-broker-equal}: the plug-in configured with
 *       {@code stickyd.equal.subscriptions=broker}: a group of equal subscriptions is solved in the JVM
 *       ({@code broker_solves}: how many timed calls were), any other asks the service as above.
 *   <li>{@code stickyd-plugin-broker-unequal}: the plug-in configured with
 *       {@code stickyd.unequal.subscriptions=broker}: a group of unequal subscriptions whose even split
 *       meets the moves' bound is solved in the JVM, any other asks the service as above.
 * </ul>
 *
 * Moves: partitions claimed by a current member (its {@code owned}) that end with another member, as
 * stickyd counts them. Loads count every partition a member ends with. The input is built outside the
 * timed call. Each assignor is first called {@code warm-ups} times (fourth argument, default 3) and
 * those calls are not timed, so the JIT has compiled its hot paths (and stickyd's connection is open);
 * then {@code rounds} (third argument, default 1) runs it that often (a new group spec each time)
 * and reports the fastest. With a fifth argument, a folder, each assignor's answer is also written there as
 * {@code <assignor>.owners}: one big-endian 32-bit member index (-1: nobody) per partition, topics in
 * the problem's order, partitions in order (so that weights can be summed outside the JVM).
 */
public final class ConsumerAssignorBench {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String ENCODING = StickydConsumerGroupAssignor.ENCODING_CONFIG;
    private static final String GROUP = "bench";
    private static final int MAX_FOLLOW_UPS = 5;

    private final List<String> topics = new ArrayList<>();
    private final Map<String, Integer> topicIndex = new HashMap<>();
    private final int[] offsets;
    private final List<String> members = new ArrayList<>();
    private final List<List<String>> subscriptions = new ArrayList<>();
    private final List<int[]> owned = new ArrayList<>();
    private final int[] generations;
    private final int[] claimant;
    private Held held;

    /** An assignor's answer as flat partition to member index (-1: nobody), and how many it gave twice. */
    private record Answer(int[] owner, int duplicated) {
    }

    /** One timed call: the assignor's time alone, the CPU time this JVM spent meanwhile (every thread,
     *  the collector's and the HTTP client's included), and its answer. */
    private record Run(double ms, double cpuMs, Answer answer) {
    }

    /** Warm-up calls, then timed calls, last at least this long between them (system property
     *  {@code stickyd.bench.cpu.min.ms}, default 0: just the calls asked), so that the process CPU time,
     *  counted in clock ticks of 10 ms, averages over enough calls of a compiled assignor. */
    private static final long CPU_MIN_MS = Long.getLong("stickyd.bench.cpu.min.ms", 0);
    private static final int MOST_CPU_CALLS = 1000;
    private static final OperatingSystemMXBean OS = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    ConsumerAssignorBench(JsonNode problem) {
        List<Integer> counts = new ArrayList<>();
        problem.get("topics").fields().forEachRemaining(e -> {
            topicIndex.put(e.getKey(), topics.size());
            topics.add(e.getKey());
            counts.add(e.getValue().asInt());
        });
        offsets = new int[topics.size() + 1];
        for (int t = 0; t < topics.size(); t++) {
            offsets[t + 1] = offsets[t] + counts.get(t);
        }
        JsonNode list = problem.get("members");
        generations = new int[list.size()];
        claimant = new int[offsets[topics.size()]];
        Arrays.fill(claimant, -1);
        for (JsonNode member : list) {
            int m = members.size();
            members.add(member.get("id").asText());
            List<String> subscribed = new ArrayList<>();
            member.get("topics").forEach(t -> subscribed.add(t.asText()));
            subscriptions.add(subscribed);
            generations[m] = member.path("generation").asInt(-1);
            List<Integer> flat = new ArrayList<>();
            member.path("owned").fields().forEachRemaining(e -> e.getValue().forEach(p -> {
                int f = offsets[topicIndex.get(e.getKey())] + p.asInt();
                flat.add(f);
                if (claimant[f] < 0) {
                    claimant[f] = m;
                }
            }));
            owned.add(flat.stream().mapToInt(Integer::intValue).toArray());
        }
    }

    public static void main(String[] args) throws Exception {
        long started = System.nanoTime();
        ConsumerAssignorBench bench = new ConsumerAssignorBench(JSON.readTree(Files.readAllBytes(Path.of(args[0]))));
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        int warmUps = args.length > 3 ? Integer.parseInt(args[3]) : 3;
        ObjectNode out = JSON.createObjectNode();
        out.put("read_ms", (System.nanoTime() - started) / 1e6);
        for (String name : args[1].split(",")) {
            ObjectNode node = out.putObject(name);
            node.put("warm_ups", warmUps);
            Answer answer = switch (name) {
                case "sticky" -> bench.timed(node, warmUps, rounds, () -> bench.clientSide(StickyAssignor::new, null, 0));
                case "cooperative-sticky" -> bench.cooperative(node, warmUps, rounds);
                case "uniform" -> bench.timed(node, warmUps, rounds, () -> bench.serverSide(new UniformAssignor()));
                case "range" -> bench.timed(node, warmUps, rounds, () -> bench.serverSide(new RangeAssignor()));
                case "stickyd-plugin" -> bench.stickyd(node, warmUps, rounds, Map.of(ENCODING, "compact"), false);
                case "stickyd-plugin-new-maps" -> bench.stickyd(node, warmUps, rounds, Map.of(ENCODING, "compact"), true);
                case "stickyd-plugin-json" -> bench.stickyd(node, warmUps, rounds, Map.of(ENCODING, "json"), false);
                case "stickyd-plugin-broker-equal" -> bench.stickyd(node, warmUps, rounds,
                    Map.of(ENCODING, "compact", StickydConsumerGroupAssignor.EQUAL_SUBSCRIPTIONS_CONFIG, "broker"), false);
                case "stickyd-plugin-broker-unequal" -> bench.stickyd(node, warmUps, rounds,
                    Map.of(ENCODING, "compact", StickydConsumerGroupAssignor.UNEQUAL_SUBSCRIPTIONS_CONFIG, "broker"), false);
                default -> throw new IllegalArgumentException("unknown assignor " + name);
            };
            bench.figures(answer, node);
            if (args.length > 4) {
                writeOwners(answer, Path.of(args[4], name + ".owners"));
            }
        }
        System.out.println(JSON.writeValueAsString(out));
    }

    /** Calls `call` `warmUps` times untimed (none when negative: the caller warmed it), then runs it (it
     *  builds its input and times only the assignor) `rounds` times; with {@link #CPU_MIN_MS}, each part
     *  goes on until its calls took that long, so that the JIT has compiled the assignor before the CPU
     *  time is counted. */
    private Answer timed(ObjectNode node, int warmUps, int rounds, Supplier<Run> call) {
        if (warmUps >= 0) {
            warmUp(warmUps, call);
        }
        double best = Double.MAX_VALUE;
        double wall = 0;
        double cpu = 0;
        int calls = 0;
        Answer answer = null;
        // at least `rounds` calls; more, up to MOST_CPU_CALLS, until they have taken CPU_MIN_MS between them
        while (calls < rounds || (wall < CPU_MIN_MS && calls < MOST_CPU_CALLS)) {
            Run run = call.get();
            best = Math.min(best, run.ms());
            wall += run.ms();
            cpu += run.cpuMs();
            calls++;
            answer = run.answer();
        }
        node.put("time_ms", best);
        node.put("cpu_ms", cpu / calls);
        node.put("calls", calls);
        return answer;
    }

    /** `warmUps` untimed calls, or more until they took {@link #CPU_MIN_MS} between them. */
    private static void warmUp(int warmUps, Supplier<Run> call) {
        double wall = 0;
        for (int w = 0; w < warmUps || (wall < CPU_MIN_MS && w < MOST_CPU_CALLS); w++) {
            wall += call.get().ms();
        }
    }

    /** stickyd's KIP-848 assignor, configured from the environment as a broker without properties is,
     *  and from {@code configs} ({@code stickyd.encoding}: its requests compact or json); {@code newMaps}: every member's
     *  Assignment a new object in each timed call (as if every member's assignment had just changed). */
    private Answer stickyd(ObjectNode node, int warmUps, int rounds, Map<String, String> configs, boolean newMaps) {
        StickydConsumerGroupAssignor assignor = new StickydConsumerGroupAssignor();
        assignor.configure(configs);
        warmUp(warmUps, () -> serverSide(assignor));
        long fallbacks = StickydConsumerGroupAssignor.fallbacks();
        long brokerSolves = AssignorMetrics.of(StickydConsumerGroupAssignor.NAME, "consumer").brokerSolves();
        // warmed above (the fallback count starts after the warm-up): no second warm-up
        Answer answer = timed(node, -1, rounds, () -> {
            if (newMaps) {
                held = null;
            }
            return serverSide(assignor);
        });
        node.put("fallbacks", StickydConsumerGroupAssignor.fallbacks() - fallbacks);
        node.put("broker_solves", AssignorMetrics.of(StickydConsumerGroupAssignor.NAME, "consumer").brokerSolves() - brokerSolves);
        return answer;
    }

    private Answer cooperative(ObjectNode node, int warmUps, int rounds) {
        Answer first = timed(node, warmUps, rounds, () -> clientSide(CooperativeStickyAssignor::new, null, 0));
        node.put("withheld", count(first.owner(), -1));
        Answer settled = first;
        double followUpMs = 0;
        int followUps = 0;
        while (count(settled.owner(), -1) > 0 && followUps < MAX_FOLLOW_UPS) {
            Run next = clientSide(CooperativeStickyAssignor::new, settled.owner(), followUps);
            followUpMs += next.ms();
            followUps++;
            settled = next.answer();
        }
        node.put("follow_up_rebalances", followUps);
        node.put("follow_up_ms", followUpMs);
        return settled;
    }

    // ---- the client-side assignors (classic protocol, run by the group leader) ----

    /** `current` (flat partition to member) replaces the problem's owned partitions in follow-up `round`. */
    private Run clientSide(Supplier<AbstractStickyAssignor> make, int[] current, int round) {
        Map<String, List<PartitionInfo>> partitions = new HashMap<>();
        for (int t = 0; t < topics.size(); t++) {
            List<PartitionInfo> infos = new ArrayList<>();
            for (int p = 0; p < offsets[t + 1] - offsets[t]; p++) {
                infos.add(new PartitionInfo(topics.get(t), p, null, null, null));
            }
            partitions.put(topics.get(t), infos);
        }
        List<List<TopicPartition>> held = new ArrayList<>();
        members.forEach(m -> held.add(new ArrayList<>()));
        if (current == null) {
            for (int m = 0; m < members.size(); m++) {
                for (int f : owned.get(m)) {
                    held.get(m).add(partition(f));
                }
            }
        } else {
            for (int f = 0; f < current.length; f++) {
                if (current[f] >= 0) {
                    held.get(current[f]).add(partition(f));
                }
            }
        }
        Map<String, Subscription> subs = new HashMap<>();
        for (int m = 0; m < members.size(); m++) {
            int generation = current == null ? generations[m] : Math.max(generations[m], 0) + 1 + round;
            AbstractStickyAssignor consumerSide = make.get();
            if (!held.get(m).isEmpty()) {
                consumerSide.onAssignment(new ConsumerPartitionAssignor.Assignment(held.get(m)),
                        new ConsumerGroupMetadata(GROUP, generation, members.get(m), Optional.empty()));
            }
            ByteBuffer userData = consumerSide.subscriptionUserData(new HashSet<>(subscriptions.get(m)));
            subs.put(members.get(m), new Subscription(subscriptions.get(m), userData, held.get(m), generation,
                    Optional.empty()));
        }
        AbstractStickyAssignor leader = make.get();
        long cpu = OS.getProcessCpuTime();
        long started = System.nanoTime();
        Map<String, List<TopicPartition>> result = leader.assignPartitions(partitions, subs);
        double ms = (System.nanoTime() - started) / 1e6;
        double cpuMs = (OS.getProcessCpuTime() - cpu) / 1e6;
        Map<String, Integer> memberIndex = memberIndex();
        return new Run(ms, cpuMs, collect(result, memberIndex,
                tps -> tps.stream().mapToInt(tp -> offsets[topicIndex.get(tp.topic())] + tp.partition()).toArray()));
    }

    // ---- the server-side assignors (KIP-848, run by the group coordinator) ----

    private Run serverSide(ConsumerGroupPartitionAssignor assignor) {
        Uuid[] ids = new Uuid[topics.size()];
        Map<Uuid, Integer> counts = new HashMap<>();
        Map<String, Uuid> idOf = new HashMap<>();
        for (int t = 0; t < ids.length; t++) {
            ids[t] = new Uuid(0x5717CDL, t + 1);
            counts.put(ids[t], offsets[t + 1] - offsets[t]);
            idOf.put(topics.get(t), ids[t]);
        }
        if (held == null) {
            held = currentAssignment(ids);
        }
        Map<String, MemberSubscriptionAndAssignmentImpl> specs = new HashMap<>();
        boolean homogeneous = true;
        for (int m = 0; m < members.size(); m++) {
            Set<Uuid> subscribed = new HashSet<>();
            subscriptions.get(m).forEach(t -> subscribed.add(idOf.get(t)));
            homogeneous &= new HashSet<>(subscriptions.get(m)).equals(new HashSet<>(subscriptions.get(0)));
            specs.put(members.get(m), new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(),
                    subscribed, held.members().get(m)));
        }
        GroupSpecImpl spec = new GroupSpecImpl(specs,
                homogeneous ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS, held.inverted());
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                return counts.getOrDefault(topicId, -1);
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                return Set.of();
            }
        };
        long cpu = OS.getProcessCpuTime();
        long started = System.nanoTime();
        GroupAssignment result = assignor.assign(spec, describer);
        double ms = (System.nanoTime() - started) / 1e6;
        double cpuMs = (OS.getProcessCpuTime() - cpu) / 1e6;
        Map<Uuid, Integer> topicOfId = new HashMap<>();
        for (int t = 0; t < ids.length; t++) {
            topicOfId.put(ids[t], t);
        }
        return new Run(ms, cpuMs, collect(result.members(), memberIndex(), member -> member.partitions().entrySet()
                .stream()
                .flatMapToInt(e -> e.getValue().stream().mapToInt(p -> offsets[topicOfId.get(e.getKey())] + p))
                .toArray()));
    }

    /** The coordinator's current assignment: each member's (immutable) Assignment, and who owns what. */
    private record Held(List<Assignment> members, Map<Uuid, Map<Integer, String>> inverted) {
    }

    /**
     * The current assignment as the coordinator holds it, built once: every call gets the same
     * Assignment objects, as a coordinator keeps an unchanged member's Assignment from one rebalance to
     * the next (a member whose assignment changed gets a new one, made from its record).
     */
    private Held currentAssignment(Uuid[] ids) {
        List<Assignment> assignments = new ArrayList<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        for (int m = 0; m < members.size(); m++) {
            Map<Uuid, Set<Integer>> assigned = new HashMap<>();
            for (int f : owned.get(m)) {
                if (claimant[f] == m) {
                    int t = topicOf(f);
                    assigned.computeIfAbsent(ids[t], k -> new HashSet<>()).add(f - offsets[t]);
                    inverted.computeIfAbsent(ids[t], k -> new HashMap<>()).put(f - offsets[t], members.get(m));
                }
            }
            assignments.add(new Assignment(assigned));
        }
        return new Held(assignments, inverted);
    }

    // ---- figures, measured the same way for every assignor ----

    private <T> Answer collect(Map<String, T> result, Map<String, Integer> memberIndex, Function<T, int[]> flat) {
        int[] owner = new int[claimant.length];
        Arrays.fill(owner, -1);
        int duplicated = 0;
        for (Map.Entry<String, T> entry : result.entrySet()) {
            int m = memberIndex.get(entry.getKey());
            for (int f : flat.apply(entry.getValue())) {
                duplicated += owner[f] >= 0 ? 1 : 0;
                owner[f] = m;
            }
        }
        return new Answer(owner, duplicated);
    }

    void figures(Answer answer, ObjectNode node) {
        int[] loads = new int[members.size()];
        int moves = 0;
        for (int f = 0; f < claimant.length; f++) {
            int m = answer.owner()[f];
            if (m >= 0) {
                loads[m]++;
            }
            moves += claimant[f] >= 0 && m != claimant[f] ? 1 : 0;
        }
        node.put("moves", moves);
        node.put("min_load", Arrays.stream(loads).min().orElse(0));
        node.put("max_load", Arrays.stream(loads).max().orElse(0));
        node.put("unassigned", count(answer.owner(), -1));
        node.put("duplicated", answer.duplicated());
    }

    private static void writeOwners(Answer answer, Path file) throws java.io.IOException {
        ByteBuffer bytes = ByteBuffer.allocate(4 * answer.owner().length);
        bytes.asIntBuffer().put(answer.owner());
        Files.write(file, bytes.array());
    }

    private static int count(int[] values, int value) {
        int n = 0;
        for (int v : values) {
            n += v == value ? 1 : 0;
        }
        return n;
    }

    private Map<String, Integer> memberIndex() {
        Map<String, Integer> index = new HashMap<>();
        for (int m = 0; m < members.size(); m++) {
            index.put(members.get(m), m);
        }
        return index;
    }

    private int topicOf(int flat) {
        int t = Arrays.binarySearch(offsets, flat);
        return t >= 0 ? nextTopic(t) : -t - 2;
    }

    /** With empty topics several offsets are equal: the topic a flat index at an offset belongs to. */
    private int nextTopic(int t) {
        while (offsets[t + 1] == offsets[t]) {
            t++;
        }
        return t;
    }

    private TopicPartition partition(int flat) {
        int t = topicOf(flat);
        return new TopicPartition(topics.get(t), flat - offsets[t]);
    }
}
