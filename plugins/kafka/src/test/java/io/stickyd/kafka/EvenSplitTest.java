package io.stickyd.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
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
 * A group of unequal subscriptions solved in the broker ({@code stickyd.unequal.subscriptions=broker}):
 * when it answers, every member ends with the even share or one more and keeps as many partitions as the
 * best such assignment, found by trying every one; it declines only when no even split keeps as many as
 * the bound allows; through the assignor the service is not asked.
 */
class EvenSplitTest {
    private static final List<Uuid> TOPIC_IDS = EqualSubscriptionsTest.TOPIC_IDS;

    private static SubscribedTopicDescriber topics(int[] counts) {
        return EqualSubscriptionsTest.topics(counts);
    }

    /** Member m subscribes to the topics t with {@code reads[m][t]}; {@code owner[t][p]}: its member or -1. */
    private static GroupSpec group(boolean[][] reads, int[][] owner) {
        Map<String, MemberSubscriptionAndAssignmentImpl> spec = new HashMap<>();
        for (int m = 0; m < reads.length; m++) {
            Set<Uuid> subscribed = new HashSet<>();
            Map<Uuid, Set<Integer>> held = new HashMap<>();
            for (int t = 0; t < owner.length; t++) {
                if (reads[m][t]) {
                    subscribed.add(TOPIC_IDS.get(t));
                }
                for (int p = 0; p < owner[t].length; p++) {
                    if (owner[t][p] == m) {
                        held.computeIfAbsent(TOPIC_IDS.get(t), id -> new HashSet<>()).add(p);
                    }
                }
            }
            spec.put("m" + m, new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), subscribed,
                new Assignment(held)));
        }
        return new GroupSpecImpl(spec, SubscriptionType.HETEROGENEOUS, Map.of());
    }

    /** Per slot of the request, the members that may take it. */
    private static int[][] takers(CompactConsumerRequest.Request request) {
        int[][] bySlot = new int[request.claims().owners().length][];
        int slot = 0;
        for (int t = 0; t < request.topicIds().size(); t++) {
            int topic = t;
            int[] readers = java.util.stream.IntStream.range(0, request.memberIds().size())
                .filter(m -> Arrays.stream(request.subscriptions().get(request.memberSubscription()[m])).anyMatch(x -> x == topic))
                .toArray();
            for (int p = 0; p < request.partitions()[t]; p++) {
                bySlot[slot++] = readers;
            }
        }
        return bySlot;
    }

    /** Partitions kept by their current owners in an assignment, -1 when it is not an even split. */
    private static int keptIfEven(int[] owners, int[] before, boolean[] live, int share) {
        int[] load = new int[live.length];
        int kept = 0;
        for (int s = 0; s < owners.length; s++) {
            load[owners[s]]++;
            kept += owners[s] == before[s] ? 1 : 0;
        }
        for (int m = 0; m < live.length; m++) {
            if (live[m] && (load[m] < share || load[m] > share + 1)) {
                return -1;
            }
        }
        return kept;
    }

    /** The most partitions an even split keeps, every assignment to the topics' readers tried; -1 when none is even. */
    private static int bestKept(int[][] takers, int[] before, boolean[] live, int share) {
        int[] choice = new int[takers.length];
        int[] owners = new int[takers.length];
        int best = -1;
        while (true) {
            for (int s = 0; s < takers.length; s++) {
                owners[s] = takers[s][choice[s]];
            }
            best = Math.max(best, keptIfEven(owners, before, live, share));
            int s = 0;
            while (s < takers.length && ++choice[s] == takers[s].length) {
                choice[s++] = 0;
            }
            if (s == takers.length) {
                return best;
            }
        }
    }

    @Test
    void everyAnswerIsEvenAndKeepsAsManyAsTheBestEvenSplitAndOnlyAChainMakesItDecline() {
        Random random = new Random(1848);
        int answered = 0;
        int declined = 0;
        for (int trial = 0; trial < 600; trial++) {
            int members = 2 + random.nextInt(3);
            int[] counts = {1 + random.nextInt(3), random.nextInt(4), random.nextInt(3)};
            boolean[][] reads = new boolean[members][3];
            for (int m = 0; m < members; m++) {
                reads[m][random.nextInt(3)] = true;
                reads[m][random.nextInt(3)] = true;
            }
            int[][] owner = new int[3][];
            for (int t = 0; t < 3; t++) {
                // held by a member (subscribed to the topic or not), or by nobody
                owner[t] = random.ints(counts[t], -1, members).toArray();
            }
            CompactConsumerRequest.Request request = CompactConsumerRequest.read(group(reads, owner), topics(counts), new HeldPartitions());
            int[][] takers = takers(request);
            int[] before = request.claims().owners();
            boolean[] live = new boolean[members];
            int units = before.length;
            for (int[] readers : takers) {
                for (int m : readers) {
                    live[m] = true;
                }
            }
            int liveCount = (int) java.util.stream.IntStream.range(0, members).filter(m -> live[m]).count();
            if (liveCount == 0) {
                continue;
            }
            int share = units / liveCount;
            int best = bestKept(takers, before, live, share);
            String what = "trial " + trial + ": reads " + Arrays.deepToString(reads) + ", owners " + Arrays.deepToString(owner);
            EqualSubscriptions.Answer answer = EvenSplit.solve(request);
            if (answer == null) {
                declined++;
                assertTrue(best < boundKept(request, takers, live, share), what);
                continue;
            }
            answered++;
            for (int s = 0; s < before.length; s++) {
                int slot = s;
                assertTrue(Arrays.stream(takers[s]).anyMatch(m -> m == answer.owners()[slot]), "a reader of its topic: " + what);
            }
            assertEquals(best, keptIfEven(answer.owners(), before, live, share), what);
            for (int m : answer.unchanged()) {
                for (int s = 0; s < before.length; s++) {
                    assertEquals(before[s] == m, answer.owners()[s] == m, "unchanged member " + m + ": " + what);
                }
            }
        }
        assertTrue(answered > 100 && declined > 10, answered + " answered, " + declined + " declined");
    }

    /** What the bound lets an even split keep: every member's valid claims up to the share, one more for the extra's first. */
    private static int boundKept(CompactConsumerRequest.Request request, int[][] takers, boolean[] live, int share) {
        int[] before = request.claims().owners();
        int[] holds = new int[live.length];
        for (int s = 0; s < before.length; s++) {
            int slot = s;
            if (before[s] >= 0 && Arrays.stream(takers[s]).anyMatch(m -> m == before[slot])) {
                holds[before[s]]++;
            }
        }
        int liveCount = 0;
        int over = 0;
        int kept = 0;
        for (int m = 0; m < live.length; m++) {
            liveCount += live[m] ? 1 : 0;
            over += holds[m] > share ? 1 : 0;
            kept += Math.min(holds[m], share);
        }
        return kept + Math.min(before.length - share * liveCount, over);
    }

    private static StickydConsumerGroupAssignor configured(String where) throws IOException {
        return EqualSubscriptionsTest.configured(StickydConsumerGroupAssignor.UNEQUAL_SUBSCRIPTIONS_CONFIG, where);
    }

    @Test
    void solvedInTheBrokerAGroupOfUnequalSubscriptionsNeedsNoService() throws IOException {
        // m0 reads topics 0 and 1 and holds all 4 of topic 0; m1 reads topic 0 only; m2 reads topic 1, 2 new partitions
        boolean[][] reads = {{true, true, false}, {true, false, false}, {false, true, false}};
        int[][] owner = {{0, 0, 0, 0}, {-1, -1}, {}};
        int[] counts = {4, 2, 0};
        AssignorMetrics metrics = AssignorMetrics.of(StickydConsumerGroupAssignor.NAME, "consumer");
        long fallbacks = metrics.fallbacks();
        long solves = metrics.brokerSolves();
        GroupAssignment assignment = configured("broker").assign(group(reads, owner), topics(counts));
        assertEquals(fallbacks, metrics.fallbacks(), "the service (unreachable) was not asked");
        assertEquals(solves + 1, metrics.brokerSolves());
        // m0 gives its two highest-numbered of topic 0 to m1, m2 takes both new partitions of topic 1
        assertEquals(Map.of(TOPIC_IDS.get(0), Set.of(0, 1)), assignment.members().get("m0").partitions());
        assertEquals(Map.of(TOPIC_IDS.get(0), Set.of(2, 3)), assignment.members().get("m1").partitions());
        assertEquals(Map.of(TOPIC_IDS.get(1), Set.of(0, 1)), assignment.members().get("m2").partitions());

        // by default the same group is asked of the service: unreachable, it falls back
        GroupAssignment asked = configured("service").assign(group(reads, owner), topics(counts));
        assertNotNull(asked);
        assertEquals(fallbacks + 1, metrics.fallbacks());
    }

    @Test
    void aGroupWhoseEvenSplitNeedsAChainIsAskedOfTheService() {
        // m0 must give up one of topic 1, which only m2 also reads; m2 is even and only m1 is short, of topic 0
        boolean[][] reads = {{true, true, false}, {true, false, false}, {true, true, false}};
        int[][] owner = {{1, 2, 2}, {0, 0, 0}, {}};
        CompactConsumerRequest.Request request = CompactConsumerRequest.read(group(reads, owner), topics(new int[] {3, 3, 0}),
            new HeldPartitions());
        assertNull(EvenSplit.solve(request));
    }

    @Test
    void anyOtherValueIsRefused() {
        StickydConsumerGroupAssignor assignor = new StickydConsumerGroupAssignor();
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
            () -> assignor.configure(Map.of(StickydConsumerGroupAssignor.UNEQUAL_SUBSCRIPTIONS_CONFIG, "jvm")));
        assertTrue(refused.getMessage().contains(StickydConsumerGroupAssignor.UNEQUAL_SUBSCRIPTIONS_CONFIG));
    }
}
