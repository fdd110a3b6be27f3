package io.stickyd.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.junit.jupiter.api.Test;

/** The compact encoding's writer and reader (docs/wire-format.md, "The compact encoding"). */
class CompactCodecTest {
    private static final Uuid ORDERS = new Uuid(7L, 1L);
    private static final Uuid CLICKS = new Uuid(7L, 3L);
    private static final SubscribedTopicDescriber TOPICS = new SubscribedTopicDescriber() {
        @Override
        public int numPartitions(Uuid topicId) {
            return topicId.equals(ORDERS) ? 6 : topicId.equals(CLICKS) ? 2 : -1;
        }

        @Override
        public Set<String> racksForPartition(Uuid topicId, int partition) {
            return Set.of();
        }
    };

    /** a owns orders 0-2 (subscribed to orders), b owns orders 3, 5 and clicks 0 (subscribed to both). */
    private static GroupSpec group() {
        Map<String, MemberSubscriptionAndAssignmentImpl> members = Map.of(
            "a", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), Set.of(ORDERS),
                new Assignment(Map.of(ORDERS, Set.of(2, 0, 1)))),
            "b", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), Set.of(ORDERS, CLICKS),
                new Assignment(Map.of(ORDERS, Set.of(5, 3), CLICKS, Set.of(0)))));
        return new GroupSpecImpl(members, SubscriptionType.HETEROGENEOUS, Map.of());
    }

    private static CompactConsumerRequest.Request request() {
        return CompactConsumerRequest.build(group(), TOPICS, 500, StickydHttpClient.JSON.createObjectNode(), new HeldPartitions());
    }

    @Test
    void theRequestListsMembersSortedTopicsOnceAndTheCurrentAssignmentAsOneOwnerPerPartition() {
        CompactConsumerRequest.Request request = request();
        assertEquals(List.of("a", "b"), request.memberIds());
        assertEquals(List.of(ORDERS, CLICKS), request.topicIds()); // first seen: a reads orders only
        Msgpack.Reader in = new Msgpack.Reader(request.body(), CompactConsumerRequest.MAGIC.length);
        Map<String, Object> seen = new HashMap<>();
        for (int fields = in.map(); fields > 0; fields--) {
            String key = in.str();
            if (key.equals("owned") || key.equals("owners")) {
                seen.put(key, in.int32s());
            } else if (key.equals("members")) {
                int n = in.array();
                for (int m = 0; m < n; m++) {
                    assertEquals(2, in.array());
                    assertEquals(request.memberIds().get(m), in.str());
                    in.integer();
                }
                seen.put(key, n);
            } else {
                in.skip();
                seen.put(key, null);
            }
        }
        assertEquals(Set.of("topics", "subscriptions", "members", "owned", "owners", "options"), seen.keySet());
        assertArrayEquals(new int[] {0, 0, 0, 1, -1, 1, 1, -1}, (int[]) seen.get("owners"));
        assertArrayEquals(new int[0], (int[]) seen.get("owned"));
    }

    private static byte[] answer(int[] owners, int... unchanged) {
        return answer("min-cost-flow", owners, unchanged);
    }

    private static byte[] answer(String solver, int[] owners, int... unchanged) {
        Msgpack.Writer out = new Msgpack.Writer().bytes(CompactConsumerRequest.MAGIC).map(4);
        out.str("assignment").int32s(owners, owners.length);
        out.str("unchanged").array(unchanged.length);
        for (int m : unchanged) {
            out.integer(m);
        }
        out.str("target").nil();
        out.str("stats").map(3).str("optimal").bool(true).str("solver").str(solver).str("warnings").array(0);
        return out.toByteArray();
    }

    @Test
    void anUnchangedMemberGetsBackItsOwnMapAndTheOthersTheirRuns() {
        GroupSpec group = group();
        GroupAssignment got = CompactConsumerAnswer.read(answer(new int[] {0, 0, 0, 1, 1, 1, 1, 1}, 0), request(), group);
        assertSame(group.memberAssignment("a").partitions(), got.members().get("a").partitions());
        assertEquals(Map.of(ORDERS, Set.of(3, 4, 5), CLICKS, Set.of(0, 1)), got.members().get("b").partitions());
    }

    @Test
    void aWrongAnswerIsRefused() {
        CompactConsumerRequest.Request request = request();
        Map<String, byte[]> wrong = new HashMap<>();
        wrong.put("a partition left out", answer(new int[] {0, 0, 0, 1, -1, 1, 1, 1}, 0));
        wrong.put("a member index out of range", answer(new int[] {0, 0, 0, 1, 2, 1, 1, 1}, 0));
        wrong.put("an unsubscribed topic", answer(new int[] {0, 0, 1, 1, 1, 1, 0, 1}));
        wrong.put("an unchanged member given more", answer(new int[] {0, 0, 0, 0, 1, 1, 1, 1}, 0));
        wrong.put("an unchanged member given less", answer(new int[] {0, 0, 1, 1, 1, 1, 1, 1}, 0));
        wrong.put("an unchanged index out of range", answer(new int[] {0, 0, 0, 1, 1, 1, 1, 1}, 5));
        wrong.put("the wrong length", answer(new int[] {0, 0, 0, 1, 1, 1, 1}, 0));
        byte[] good = answer(new int[] {0, 0, 0, 1, 1, 1, 1, 1}, 0);
        wrong.put("truncated", Arrays.copyOf(good, good.length - 3));
        wrong.put("not compact", "{}".getBytes());
        // valid, but only the quick fill: Kafka's uniform assignor answers instead
        wrong.put("the quick fill", answer("quick-fill", new int[] {0, 0, 0, 1, 1, 1, 1, 1}, 0));
        for (Map.Entry<String, byte[]> answer : wrong.entrySet()) {
            assertThrows(IllegalStateException.class, () -> CompactConsumerAnswer.read(answer.getValue(), request, group()),
                answer.getKey());
        }
    }

    @Test
    void aMemberWhoseMapIsTheSameObjectIsNotReadAgainAndANewMapIs() {
        HeldPartitions seen = new HeldPartitions();
        GroupSpec first = group();
        CompactConsumerRequest.Request before = CompactConsumerRequest.build(first, TOPICS, 500,
            StickydHttpClient.JSON.createObjectNode(), seen);
        assertEquals(2, seen.reads());
        // the next rebalance: a keeps its map (the coordinator keeps an unchanged member's Assignment),
        // b's assignment changed (a new map: it gave up orders 5)
        Map<String, MemberSubscriptionAndAssignmentImpl> members = Map.of(
            "a", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), Set.of(ORDERS),
                new Assignment(first.memberAssignment("a").partitions())),
            "b", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), Set.of(ORDERS, CLICKS),
                new Assignment(Map.of(ORDERS, Set.of(3), CLICKS, Set.of(0)))));
        GroupSpec next = new GroupSpecImpl(members, SubscriptionType.HETEROGENEOUS, Map.of());
        CompactConsumerRequest.Request after = CompactConsumerRequest.build(next, TOPICS, 500,
            StickydHttpClient.JSON.createObjectNode(), seen);
        assertEquals(3, seen.reads(), "only b's new map is read");
        assertArrayEquals(new int[] {0, 0, 0, 1, -1, 1, 1, -1}, before.claims().owners());
        assertArrayEquals(new int[] {0, 0, 0, 1, -1, -1, 1, -1}, after.claims().owners());
        CompactConsumerRequest.Request fresh = CompactConsumerRequest.build(next, TOPICS, 500,
            StickydHttpClient.JSON.createObjectNode(), new HeldPartitions());
        assertArrayEquals(Arrays.copyOf(fresh.body(), fresh.length()), Arrays.copyOf(after.body(), after.length()),
            "the same request as one read in full");
    }

    @Test
    void rebalancesThatKeepSomeMapsAndReplaceOthersGiveTheRequestsOfAFreshRead() {
        java.util.Random random = new java.util.Random(11);
        java.util.concurrent.atomic.AtomicLong reads = new java.util.concurrent.atomic.AtomicLong();
        for (int trial = 0; trial < 200; trial++) {
            HeldPartitions seen = new HeldPartitions();
            Map<String, Assignment> held = new HashMap<>(); // the coordinator keeps an unchanged member's Assignment
            for (int rebalance = 0; rebalance < 4; rebalance++) {
                Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
                for (String id : List.of("a", "b", "c")) {
                    if (!held.containsKey(id) || random.nextInt(3) == 0) {
                        held.put(id, new Assignment(randomAssignment(random))); // this member's assignment changed
                    }
                    // the request's topic order (first seen, members by id) changes from one rebalance to the next
                    Set<Uuid> subscribed = List.of(Set.of(ORDERS, CLICKS), Set.of(ORDERS), Set.of(CLICKS)).get(random.nextInt(3));
                    members.put(id, new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(),
                        subscribed, held.get(id)));
                }
                GroupSpec group = new GroupSpecImpl(members, SubscriptionType.HETEROGENEOUS, Map.of());
                CompactConsumerRequest.Request kept = CompactConsumerRequest.build(group, TOPICS, 500,
                    StickydHttpClient.JSON.createObjectNode(), seen);
                CompactConsumerRequest.Request fresh = CompactConsumerRequest.build(group, TOPICS, 500,
                    StickydHttpClient.JSON.createObjectNode(), new HeldPartitions());
                assertArrayEquals(Arrays.copyOf(fresh.body(), fresh.length()), Arrays.copyOf(kept.body(), kept.length()),
                    "trial " + trial + ", rebalance " + rebalance + ": " + held);
                assertArrayEquals(fresh.claims().exact(), kept.claims().exact());
            }
            reads.addAndGet(seen.reads());
        }
        assertTrue(reads.get() < 200 * 4 * 3, "some maps were taken from what was read before");
    }

    /** Up to 3 partitions of orders (some past its end), of clicks, and of a topic nobody reads, as sets or runs. */
    private static Map<Uuid, Set<Integer>> randomAssignment(java.util.Random random) {
        Map<Uuid, Set<Integer>> assignment = new HashMap<>();
        for (Uuid topic : List.of(ORDERS, CLICKS, new Uuid(7L, 9L))) {
            if (random.nextBoolean()) {
                int first = random.nextInt(7);
                int count = 1 + random.nextInt(3);
                assignment.put(topic, random.nextBoolean() ? new IntRunsSet(new int[] {first}, new int[] {count})
                    : new java.util.HashSet<>(java.util.stream.IntStream.range(first, first + count).boxed().toList()));
            }
        }
        return assignment;
    }

    @Test
    void setsThisAssignorAnsweredWithAreReadBackByTheirRuns() {
        Map<String, MemberSubscriptionAndAssignmentImpl> members = Map.of(
            "a", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), Set.of(ORDERS),
                new Assignment(Map.of(ORDERS, new IntRunsSet(new int[] {0, 4}, new int[] {2, 1})))),
            "b", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), Set.of(ORDERS, CLICKS),
                new Assignment(Map.of(ORDERS, new IntRunsSet(new int[] {1, 2}, new int[] {1, 2})))));
        GroupSpec group = new GroupSpecImpl(members, SubscriptionType.HETEROGENEOUS, Map.of());
        CompactConsumerRequest.Request request =
            CompactConsumerRequest.build(group, TOPICS, 500, StickydHttpClient.JSON.createObjectNode(), new HeldPartitions());
        // a holds 0, 1, 4; b claims 1 too (a run), and 2, 3
        assertArrayEquals(new int[] {0, 0, 1, 1, 0, -1, -1, -1}, request.claims().owners());
        assertArrayEquals(new boolean[] {true, false}, request.claims().exact());
        GroupAssignment got = CompactConsumerAnswer.read(answer(new int[] {0, 0, 1, 1, 0, 1, 1, 1}, 0), request, group);
        assertSame(group.memberAssignment("a").partitions(), got.members().get("a").partitions());
        assertEquals(Map.of(ORDERS, Set.of(2, 3, 5), CLICKS, Set.of(0, 1)), got.members().get("b").partitions());
    }

    @Test
    void aMemberUnchangedWithinTheRequestLosesThePartitionsTheRequestCouldNotList() {
        Uuid dropped = new Uuid(7L, 9L); // a topic no member subscribes to any more
        for (Map<Uuid, Set<Integer>> held : List.of(
            Map.of(ORDERS, Set.of(0, 1, 2), dropped, Set.of(0)),
            Map.<Uuid, Set<Integer>>of(ORDERS, Set.of(0, 1, 2, 7)), // past the end of orders
            Map.<Uuid, Set<Integer>>of(ORDERS, new IntRunsSet(new int[] {0}, new int[] {8})))) {
            Map<String, MemberSubscriptionAndAssignmentImpl> members = Map.of(
                "a", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), Set.of(ORDERS),
                    new Assignment(held)),
                "b", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), Set.of(ORDERS, CLICKS),
                    new Assignment(Map.of())));
            GroupSpec group = new GroupSpecImpl(members, SubscriptionType.HETEROGENEOUS, Map.of());
            CompactConsumerRequest.Request request =
                CompactConsumerRequest.build(group, TOPICS, 500, StickydHttpClient.JSON.createObjectNode(), new HeldPartitions());
            assertArrayEquals(new boolean[] {false, true}, request.claims().exact());
            int[] owners = held.containsKey(dropped) || held.get(ORDERS).size() == 4
                ? new int[] {0, 0, 0, 1, 1, 1, 1, 1} : new int[] {0, 0, 0, 0, 0, 0, 1, 1};
            GroupAssignment got = CompactConsumerAnswer.read(answer(owners, 0), request, group);
            Set<Integer> kept = owners[3] == 0 ? Set.of(0, 1, 2, 3, 4, 5) : Set.of(0, 1, 2);
            assertEquals(Map.of(ORDERS, kept), got.members().get("a").partitions(), held.toString());
            assertThrows(IllegalStateException.class,
                () -> CompactConsumerAnswer.read(answer(new int[] {0, 0, 1, 1, 1, 1, 1, 1}, 0), request, group),
                "an unchanged member that loses a partition the request listed");
        }
    }

    @Test
    void aSubscriptionSetIsReadByIterationNotBySize() {
        // as the coordinator's view of a subscription to a topic its metadata does not hold yet
        Set<Uuid> counted = new java.util.AbstractSet<>() {
            @Override
            public java.util.Iterator<Uuid> iterator() {
                return java.util.Collections.emptyIterator();
            }

            @Override
            public int size() {
                return 1;
            }
        };
        Map<String, MemberSubscriptionAndAssignmentImpl> members = Map.of(
            "a", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), counted,
                new Assignment(Map.of())));
        CompactConsumerRequest.Request request = CompactConsumerRequest.build(
            new GroupSpecImpl(members, SubscriptionType.HOMOGENEOUS, Map.of()), TOPICS, 500,
            StickydHttpClient.JSON.createObjectNode(), new HeldPartitions());
        Msgpack.Reader in = new Msgpack.Reader(request.body(), CompactConsumerRequest.MAGIC.length);
        for (int fields = in.map(); fields > 0; fields--) {
            if (in.str().equals("subscriptions")) {
                assertEquals(1, in.array());
                assertEquals(0, in.array(), "an empty subscription, no topic index");
            } else {
                in.skip();
            }
        }
    }

    @Test
    void aHomogeneousGroupsSubscriptionIsReadFromItsFirstMemberOnly() {
        // as Kafka's own assignors read a homogeneous group: the other members' sets are never iterated
        Set<Uuid> unread = new java.util.AbstractSet<>() {
            @Override
            public java.util.Iterator<Uuid> iterator() {
                throw new AssertionError("a homogeneous group's later members' subscriptions are not read");
            }

            @Override
            public int size() {
                return 2;
            }
        };
        Map<String, MemberSubscriptionAndAssignmentImpl> members = Map.of(
            "a", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(),
                new java.util.LinkedHashSet<>(List.of(ORDERS, CLICKS)), new Assignment(Map.of(ORDERS, Set.of(0, 1, 2)))),
            "b", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), unread,
                new Assignment(Map.of(ORDERS, Set.of(3), CLICKS, Set.of(1)))));
        CompactConsumerRequest.Request request = CompactConsumerRequest.build(
            new GroupSpecImpl(members, SubscriptionType.HOMOGENEOUS, Map.of()), TOPICS, 500,
            StickydHttpClient.JSON.createObjectNode(), new HeldPartitions());
        Msgpack.Reader in = new Msgpack.Reader(request.body(), CompactConsumerRequest.MAGIC.length);
        for (int fields = in.map(); fields > 0; fields--) {
            String key = in.str();
            if (key.equals("subscriptions")) {
                assertEquals(1, in.array(), "one subscription list, the first member's");
                assertEquals(2, in.array());
                in.integer();
                in.integer();
            } else if (key.equals("members")) {
                assertEquals(2, in.array());
                for (String id : List.of("a", "b")) {
                    assertEquals(2, in.array());
                    assertEquals(id, in.str());
                    assertEquals(0, in.integer(), id + " reads subscription 0");
                }
            } else if (key.equals("owners")) {
                assertArrayEquals(new int[] {0, 0, 0, 1, -1, -1, -1, 1}, in.int32s());
            } else {
                in.skip();
            }
        }
    }

    @Test
    void everyMemberGetsWhatTheAnswerGivesItWhetherUnchangedOrNot() {
        java.util.Random random = new java.util.Random(5);
        List<String> ids = List.of("a", "b", "c");
        for (int trial = 0; trial < 500; trial++) {
            // one claimant per partition at most, every member reading both topics
            int[] before = new int[8];
            Map<String, Map<Uuid, Set<Integer>>> held = new HashMap<>();
            for (int slot = 0; slot < before.length; slot++) {
                before[slot] = random.nextInt(4) - 1;
                if (before[slot] >= 0) {
                    Uuid topic = slot < 6 ? ORDERS : CLICKS;
                    held.computeIfAbsent(ids.get(before[slot]), id -> new HashMap<>())
                        .computeIfAbsent(topic, t -> new java.util.HashSet<>()).add(slot < 6 ? slot : slot - 6);
                }
            }
            Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
            for (String id : ids) {
                members.put(id, new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(),
                    Set.of(ORDERS, CLICKS), new Assignment(held.getOrDefault(id, Map.of()))));
            }
            GroupSpec group = new GroupSpecImpl(members, SubscriptionType.HETEROGENEOUS, Map.of());
            CompactConsumerRequest.Request request =
                CompactConsumerRequest.build(group, TOPICS, 500, StickydHttpClient.JSON.createObjectNode(), new HeldPartitions());
            // a few slots change hands; the members whose slots all stay are said unchanged
            int[] now = new int[8];
            for (int slot = 0; slot < now.length; slot++) {
                now[slot] = before[slot] >= 0 && random.nextInt(4) > 0 ? before[slot] : random.nextInt(3);
            }
            int[] order = new int[8];
            for (int slot = 0; slot < 8; slot++) {
                order[slot] = request.topicIds().get(0).equals(ORDERS) ? slot : slot < 2 ? slot + 6 : slot - 2;
            }
            int[] sent = new int[8];
            for (int slot = 0; slot < 8; slot++) {
                sent[slot] = now[order[slot]];
            }
            int[] unchanged = java.util.stream.IntStream.range(0, 3)
                .filter(m -> java.util.stream.IntStream.range(0, 8).allMatch(slot -> (before[slot] == m) == (now[slot] == m)))
                .toArray();
            GroupAssignment got = CompactConsumerAnswer.read(answer(sent, unchanged), request, group);
            for (int m = 0; m < 3; m++) {
                Map<Uuid, Set<Integer>> expected = new HashMap<>();
                for (int slot = 0; slot < 8; slot++) {
                    if (now[slot] == m) {
                        expected.computeIfAbsent(slot < 6 ? ORDERS : CLICKS, t -> new java.util.HashSet<>()).add(slot < 6 ? slot : slot - 6);
                    }
                }
                assertEquals(expected, got.members().get(ids.get(m)).partitions(), "trial " + trial + ", member " + m);
            }
        }
    }

    @Test
    void runsAreASetOfPartitionsEqualToAnyOther() {
        IntRunsSet runs = new IntRunsSet(new int[] {0, 4, 9}, new int[] {2, 3, 1});
        assertEquals(Set.of(0, 1, 4, 5, 6, 9), runs);
        assertEquals(runs, Set.of(0, 1, 4, 5, 6, 9));
        assertEquals(Set.of(0, 1, 4, 5, 6, 9).hashCode(), runs.hashCode());
        assertTrue(runs.contains(6) && !runs.contains(7) && !runs.contains(3) && !runs.contains(-1));
        assertArrayEquals(new Object[] {0, 1, 4, 5, 6, 9}, runs.toArray());
    }

    @Test
    void aSetOfOneRunOrNoneIsTheSameSetAsAnyOther() {
        int[] firsts = {3, 7, 20};
        int[] counts = {1, 4, 2};
        IntRunsSet single = new IntRunsSet(firsts, counts, 0, 1); // one partition
        IntRunsSet range = new IntRunsSet(firsts, counts, 1, 2); // a range
        IntRunsSet two = new IntRunsSet(firsts, counts, 1, 3); // the runs from 1 on
        IntRunsSet none = new IntRunsSet(firsts, counts, 2, 2);
        assertEquals(Set.of(3), single);
        assertEquals(Set.of(7, 8, 9, 10), range);
        assertEquals(Set.of(7, 8, 9, 10, 20, 21), two);
        assertEquals(Set.of(), none);
        assertEquals(Set.of(7, 8, 9, 10).hashCode(), range.hashCode());
        assertTrue(range.contains(10) && !range.contains(11) && !range.contains(6) && !single.contains(4));
        assertEquals(List.of(1, 1, 2, 0), List.of(single.runs(), range.runs(), two.runs(), none.runs()));
        assertEquals(List.of(7, 4, 20, 2), List.of(two.first(0), two.count(0), two.first(1), two.count(1)));
        assertEquals(List.of(7, 4), List.of(range.first(0), range.count(0)));
        assertArrayEquals(new Object[] {7, 8, 9, 10, 20, 21}, two.toArray());
    }

    @Test
    void theAssignorSendsTheCompactEncodingAndReadsItsAnswer() throws IOException {
        AtomicReference<String> contentType = new AtomicReference<>();
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/v1/assign/consumer", exchange -> {
            contentType.set(exchange.getRequestHeaders().getFirst("Content-Type"));
            exchange.getRequestBody().readAllBytes();
            byte[] body = answer(new int[] {0, 0, 0, 1, 1, 1, 1, 1}, 0);
            exchange.getResponseHeaders().add("Content-Type", CompactConsumerRequest.MEDIA_TYPE);
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
        try {
            StickydConsumerGroupAssignor assignor = new StickydConsumerGroupAssignor();
            assignor.configure(Map.of(StickydHttpClient.URL_CONFIG, "http://127.0.0.1:" + server.getAddress().getPort(),
                StickydHttpClient.TIMEOUT_MS_CONFIG, "5000"));
            long fallbacks = StickydConsumerGroupAssignor.fallbacks();
            GroupAssignment got = assignor.assign(group(), TOPICS);
            assertEquals(fallbacks, StickydConsumerGroupAssignor.fallbacks());
            assertEquals(CompactConsumerRequest.MEDIA_TYPE, contentType.get());
            assertEquals(Map.of(ORDERS, Set.of(3, 4, 5), CLICKS, Set.of(0, 1)), got.members().get("b").partitions());
        } finally {
            server.stop(0);
        }
    }
}
