package io.stickyd.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.stream.IntStream;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.junit.jupiter.api.Test;

/**
 * A group of equal subscriptions solved in the broker ({@code stickyd.equal.subscriptions=broker}):
 * balanced and keeping as many partitions as the best balanced assignment found by trying every one,
 * left to the service when its members' subscriptions differ, and the service not asked.
 */
class EqualSubscriptionsTest {
    static final List<Uuid> TOPIC_IDS = List.of(new Uuid(9L, 3L), new Uuid(9L, 1L), new Uuid(9L, 2L));

    /** Topic i of {@code TOPIC_IDS} has {@code counts[i]} partitions. */
    static SubscribedTopicDescriber topics(int[] counts) {
        return new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                int t = TOPIC_IDS.indexOf(topicId);
                return t < 0 ? -1 : counts[t];
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                return Set.of();
            }
        };
    }

    /** Members m0.. all subscribed to the first {@code counts.length} topics; {@code owner[t][p]}: its member or -1. */
    private static GroupSpec group(int members, int[][] owner, SubscriptionType type) {
        Set<Uuid> subscribed = new HashSet<>(TOPIC_IDS.subList(0, owner.length));
        Map<String, MemberSubscriptionAndAssignmentImpl> spec = new HashMap<>();
        // the coordinator's partition -> member map, as Kafka's uniform assignor reads it
        Map<Uuid, Map<Integer, String>> owners = new HashMap<>();
        for (int t = 0; t < owner.length; t++) {
            for (int p = 0; p < owner[t].length; p++) {
                if (owner[t][p] >= 0) {
                    owners.computeIfAbsent(TOPIC_IDS.get(t), id -> new HashMap<>()).put(p, "m" + owner[t][p]);
                }
            }
        }
        for (int m = 0; m < members; m++) {
            Map<Uuid, Set<Integer>> held = new HashMap<>();
            for (int t = 0; t < owner.length; t++) {
                Set<Integer> partitions = new HashSet<>();
                for (int p = 0; p < owner[t].length; p++) {
                    if (owner[t][p] == m) {
                        partitions.add(p);
                    }
                }
                if (!partitions.isEmpty()) {
                    held.put(TOPIC_IDS.get(t), partitions);
                }
            }
            spec.put("m" + m, new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), subscribed,
                new Assignment(held)));
        }
        return new GroupSpecImpl(spec, type, owners);
    }

    /** The most partitions any assignment with loads at most one apart lets their current owners keep: every one tried. */
    private static int bestKept(int[] current, int members) {
        int slots = current.length;
        int[] choice = new int[slots];
        int best = -1;
        for (long code = 0; code < Math.round(Math.pow(members, slots)); code++) {
            long rest = code;
            int[] load = new int[members];
            int kept = 0;
            for (int s = 0; s < slots; s++) {
                choice[s] = (int) (rest % members);
                rest /= members;
                load[choice[s]]++;
                kept += choice[s] == current[s] ? 1 : 0;
            }
            int most = Arrays.stream(load).max().orElse(0);
            int least = Arrays.stream(load).min().orElse(0);
            if (most - least <= 1) {
                best = Math.max(best, kept);
            }
        }
        return best;
    }

    @Test
    void everyAnswerIsBalancedAndKeepsAsManyPartitionsAsTheBestBalancedAssignment() {
        Random random = new Random(848);
        for (int trial = 0; trial < 400; trial++) {
            int members = 1 + random.nextInt(4);
            int[] counts = IntStream.range(0, 1 + random.nextInt(3)).map(t -> random.nextInt(3)).toArray();
            int[][] owner = new int[counts.length][];
            for (int t = 0; t < counts.length; t++) {
                // a partition held by one member, or by nobody (new, or its member left)
                owner[t] = IntStream.range(0, counts[t]).map(p -> random.nextInt(members + 2) - 1).map(m -> m >= members ? -1 : m).toArray();
            }
            CompactConsumerRequest.Request request = CompactConsumerRequest.read(
                group(members, owner, SubscriptionType.HOMOGENEOUS), topics(counts), new HeldPartitions());
            EqualSubscriptions.Answer answer = EqualSubscriptions.solve(request);
            assertNotNull(answer);
            int[] before = request.claims().owners();
            int[] load = new int[members];
            int kept = 0;
            for (int slot = 0; slot < before.length; slot++) {
                assertTrue(answer.owners()[slot] >= 0 && answer.owners()[slot] < members, "every partition assigned");
                load[answer.owners()[slot]]++;
                kept += answer.owners()[slot] == before[slot] ? 1 : 0;
            }
            String what = "trial " + trial + ": " + Arrays.deepToString(owner) + " over " + members;
            assertTrue(Arrays.stream(load).max().getAsInt() - Arrays.stream(load).min().getAsInt() <= 1, what);
            assertEquals(bestKept(before, members), kept, what);
            // unchanged: exactly the members that end with what they held
            List<Integer> same = new ArrayList<>();
            for (int m = 0; m < members; m++) {
                int member = m;
                if (IntStream.range(0, before.length).allMatch(s -> (before[s] == member) == (answer.owners()[s] == member))) {
                    same.add(m);
                }
            }
            assertArrayEquals(same.stream().mapToInt(Integer::intValue).toArray(), answer.unchanged(), what);
        }
    }

    @Test
    void aGroupWhoseMembersSubscribeToDifferentTopicsIsLeftToTheService() {
        int[] counts = {2, 2};
        GroupSpec group = group(2, new int[][] {{0, 1}, {1, -1}}, SubscriptionType.HOMOGENEOUS);
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
        members.put("m0", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(),
            Set.of(TOPIC_IDS.get(0)), new Assignment(group.memberAssignment("m0").partitions())));
        members.put("m1", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(),
            Set.of(TOPIC_IDS.get(0), TOPIC_IDS.get(1)), new Assignment(group.memberAssignment("m1").partitions())));
        GroupSpec mixed = new GroupSpecImpl(members, SubscriptionType.HETEROGENEOUS, Map.of());
        assertNull(EqualSubscriptions.solve(CompactConsumerRequest.read(mixed, topics(counts), new HeldPartitions())));
    }

    /** A loopback port nothing listens on: any request to it fails at once. */
    static int closedPort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    private static StickydConsumerGroupAssignor configured(String where) throws IOException {
        return configured(StickydConsumerGroupAssignor.EQUAL_SUBSCRIPTIONS_CONFIG, where);
    }

    /** The assignor with {@code property} set to {@code where} and a service that cannot be reached. */
    static StickydConsumerGroupAssignor configured(String property, String where) throws IOException {
        StickydConsumerGroupAssignor assignor = new StickydConsumerGroupAssignor();
        assignor.configure(Map.of(StickydHttpClient.URL_CONFIG, "http://127.0.0.1:" + closedPort(),
            StickydHttpClient.TIMEOUT_MS_CONFIG, "2000", property, where));
        return assignor;
    }

    @Test
    void solvedInTheBrokerAGroupOfEqualSubscriptionsNeedsNoServiceAndGivesUnchangedMembersTheirOwnMaps() throws IOException {
        // m0 holds 0-2, m1 holds 3 of topic 0 (4 partitions): m0 gives one up to m1; m2 holds nothing, two new partitions
        int[][] owner = {{0, 0, 0, 1}, {-1, -1}};
        GroupSpec group = group(3, owner, SubscriptionType.HOMOGENEOUS);
        AssignorMetrics metrics = AssignorMetrics.of(StickydConsumerGroupAssignor.NAME, "consumer");
        long fallbacks = metrics.fallbacks();
        long solves = metrics.brokerSolves();
        GroupAssignment assignment = configured("broker").assign(group, topics(new int[] {4, 2}));
        assertEquals(fallbacks, metrics.fallbacks(), "the service (unreachable) was not asked");
        assertEquals(solves + 1, metrics.brokerSolves());
        int[] loads = assignment.members().values().stream()
            .mapToInt(a -> a.partitions().values().stream().mapToInt(Set::size).sum()).sorted().toArray();
        assertArrayEquals(new int[] {2, 2, 2}, loads);
        // each keeps what it can: m0 its two lowest-numbered, m1 its one
        assertTrue(assignment.members().get("m0").partitions().get(TOPIC_IDS.get(0)).containsAll(Set.of(0, 1)));
        assertTrue(assignment.members().get("m1").partitions().get(TOPIC_IDS.get(0)).contains(3));

        // nobody moves: every member keeps the very map it held
        int[][] settled = {{0, 0, 1, 1}, {2, 2}};
        GroupSpec steady = group(3, settled, SubscriptionType.HOMOGENEOUS);
        GroupAssignment again = configured("broker").assign(steady, topics(new int[] {4, 2}));
        for (String member : List.of("m0", "m1", "m2")) {
            assertSame(steady.memberAssignment(member).partitions(), again.members().get(member).partitions());
        }

        // by default the service is asked: unreachable, Kafka's uniform assignor answers
        configured("service").assign(group, topics(new int[] {4, 2}));
        assertEquals(fallbacks + 1, metrics.fallbacks());
        assertThrows(IllegalArgumentException.class, () -> configured("jvm"));
    }
}
