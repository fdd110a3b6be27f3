package io.stickyd.kafka.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import io.stickyd.kafka.StickydHttpClient;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.management.ObjectName;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignment;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The broker-side streams assignor against a scripted stickyd on loopback HTTP: the request it
 * sends, the target it returns per member, and Kafka's built-in {@code sticky} on every failure.
 */
class StickydStreamsGroupAssignorTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The JMX counter of fallbacks for {@code cause} of the streams group assignor in this JVM. */
    private static double fallbacksFor(String cause) throws Exception {
        ObjectName bean = new ObjectName(
            "kafka.stickyd:type=assignor-metrics,assignor=stickyd,group-type=streams,cause=" + cause);
        return ((Number) ManagementFactory.getPlatformMBeanServer().getAttribute(bean, "fallback-total")).doubleValue();
    }

    // stateless subtopology 0 and stateful subtopology 1, two partitions each
    private static final StreamsGroups.Topology TOPOLOGY =
            new StreamsGroups.Topology(new TreeMap<>(Map.of("0", 2, "1", 2)), Set.of("1"));
    // process p1 runs two threads (a1 had 0_0 and 1_0, a2 is new), process p2 one thread (b1 had 0_1, 1_1)
    private static final StreamsGroups.Group GROUP = new StreamsGroups.Group(new TreeMap<>(Map.of(
            "a1", StreamsGroups.Member.of("p1", Map.of("0", Set.of(0), "1", Set.of(0)), Map.of()),
            "a2", StreamsGroups.Member.of("p1", Map.of(), Map.of()),
            "b1", StreamsGroups.Member.of("p2", Map.of("0", Set.of(1), "1", Set.of(1)), Map.of("1", Set.of(0))))), 1);
    private static final String TARGET = "{\"target\": {"
            + "\"p1\": {\"active\": [\"0_0\", \"0_1\", \"1_0\"], \"standby\": [\"1_1\"]},"
            + "\"p2\": {\"active\": [\"1_1\"], \"standby\": [\"1_0\"]}}}";

    private HttpServer server;
    private final AtomicReference<String> answer = new AtomicReference<>(TARGET);
    private final AtomicInteger status = new AtomicInteger(200);
    private final AtomicInteger delayMs = new AtomicInteger(0);
    private final AtomicReference<JsonNode> lastRequest = new AtomicReference<>();

    @BeforeEach
    void startServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(Executors.newFixedThreadPool(8));
        server.createContext("/v1/assign/streams", exchange -> {
            lastRequest.set(JSON.readTree(exchange.getRequestBody()));
            try {
                Thread.sleep(delayMs.get());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            byte[] body = answer.get().getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(status.get(), body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
    }

    @AfterEach
    void stopServer() {
        server.stop(0);
    }

    private StickydStreamsGroupAssignor assignor(int timeoutMs) {
        return new StickydStreamsGroupAssignor(
                new StickydHttpClient("http://127.0.0.1:" + server.getAddress().getPort(), timeoutMs));
    }

    @Test
    void runsStickydsTargetAndDealsEachProcessToItsThreadsKeepingWhatTheyHad() {
        long before = StickydStreamsGroupAssignor.fallbacks();
        GroupAssignment assignment = assignor(2000).assign(GROUP, TOPOLOGY);

        assertEquals(before, StickydStreamsGroupAssignor.fallbacks());
        // p1's three actives: a1 keeps both of its tasks (its even share is 2), a2 gets the third
        assertEquals(new MemberAssignment(Map.of("0", Set.of(0), "1", Set.of(0)), Map.of("1", Set.of(1))),
                assignment.members().get("a1"));
        assertEquals(new MemberAssignment(Map.of("0", Set.of(1)), Map.of()), assignment.members().get("a2"));
        assertEquals(new MemberAssignment(Map.of("1", Set.of(1)), Map.of("1", Set.of(0))), assignment.members().get("b1"));
    }

    @Test
    void theRequestHasOneClientPerProcessWithItsThreadsAsCapacityAndAsksForNoWarmUps() {
        assignor(2000).assign(GROUP, TOPOLOGY);
        JsonNode request = lastRequest.get();
        assertEquals("[{\"id\":\"0\",\"partitions\":2,\"stateful\":false},{\"id\":\"1\",\"partitions\":2,\"stateful\":true}]",
                request.get("subtopologies").toString());
        JsonNode p1 = request.get("clients").get(0);
        assertEquals("p1", p1.get("id").asText());
        assertEquals(2, p1.get("capacity").asInt());
        assertEquals("[\"0_0\",\"1_0\"]", p1.get("active").toString());
        JsonNode p2 = request.get("clients").get(1);
        assertEquals("[\"1_0\"]", p2.get("standby").toString());
        assertEquals("{\"num_standby_replicas\":1,\"max_warmup_replicas\":0,\"acceptable_recovery_lag\":0}",
                request.get("config").toString());
        assertEquals(1400, request.get("options").get("time_limit_ms").asInt());
    }

    @Test
    void theRequestWeighsMovesByTheChangelogSizesTheMembersReport() {
        // a1 runs 1_0 (changelog end 90,000, its store at 89,990); b1 runs 1_1 (end 3,000) and stands
        // by for 1_0 (its store at 80,000): costs are the end offsets, stateless 0_* carry none
        StreamsGroups.Member a1 = StreamsGroups.Member.of("p1", Map.of("0", Set.of(0), "1", Set.of(0)), Map.of())
                .reporting(Map.of("1", Map.of(0, 89_990L)), Map.of("1", Map.of(0, 90_000L)));
        StreamsGroups.Member b1 = StreamsGroups.Member.of("p2", Map.of("0", Set.of(1), "1", Set.of(1)), Map.of("1", Set.of(0)))
                .reporting(Map.of("1", Map.of(0, 80_000L, 1, 3_000L)), Map.of("1", Map.of(1, 3_000L)));
        StreamsGroups.Group group = new StreamsGroups.Group(new TreeMap<>(Map.of("a1", a1, "b1", b1)), 1);
        assignor(2000).assign(group, TOPOLOGY);
        JsonNode request = lastRequest.get();
        assertEquals("restore_cost", request.get("options").get("stickiness").asText());
        assertEquals("{\"1_0\":90000,\"1_1\":3000}", request.get("task_costs").toString());
        // the lags still come from the same reports: b1's standby is 10,000 behind
        assertEquals("{\"1_0\":10000,\"1_1\":0}", request.get("clients").get(1).get("lags").toString());
    }

    @Test
    void kafkasUnknownOffsetIsNeitherARestoreCostNorACaughtUpState() {
        // b1 stands by for 1_0 but reports Long.MAX_VALUE for its offset and end offset (Kafka
        // Streams' "unknown"); it runs 1_1, changelog end 3,000, its store there
        StreamsGroups.Member a1 = StreamsGroups.Member.of("p1", Map.of("0", Set.of(0), "1", Set.of(0)), Map.of());
        StreamsGroups.Member b1 = StreamsGroups.Member.of("p2", Map.of("0", Set.of(1), "1", Set.of(1)), Map.of("1", Set.of(0)))
                .reporting(Map.of("1", Map.of(0, Long.MAX_VALUE, 1, 3_000L)),
                        Map.of("1", Map.of(0, Long.MAX_VALUE, 1, 3_000L)));
        long before = StickydStreamsGroupAssignor.fallbacks();
        assignor(2000).assign(new StreamsGroups.Group(new TreeMap<>(Map.of("a1", a1, "b1", b1)), 1), TOPOLOGY);
        JsonNode request = lastRequest.get();
        assertEquals("{\"1_1\":3000}", request.get("task_costs").toString());
        assertEquals("{\"1_1\":0}", request.get("clients").get(1).get("lags").toString());
        assertEquals(before, StickydStreamsGroupAssignor.fallbacks());
    }

    @Test
    void aTaskWhoseOnlyStandbyIsGoneKeepsTheCostTheGroupsLastRequestGaveIt() {
        // b1 stands by for 1_0 and reports its end offset 90,000; a1 runs it and reports none
        StreamsGroups.Member a1 = StreamsGroups.Member.of("p1", Map.of("0", Set.of(0), "1", Set.of(0)), Map.of());
        StreamsGroups.Member b1 = StreamsGroups.Member.of("p2", Map.of("0", Set.of(1), "1", Set.of(1)), Map.of("1", Set.of(0)))
                .reporting(Map.of("1", Map.of(0, 90_000L)), Map.of("1", Map.of(0, 90_000L)));
        StickydStreamsGroupAssignor assignor = assignor(2000);
        assignor.assign(new StreamsGroups.Group(new TreeMap<>(Map.of("a1", a1, "b1", b1)), 1), TOPOLOGY);
        assertEquals("{\"1_0\":90000}", lastRequest.get().get("task_costs").toString());
        // p2 killed: nobody reports 1_0's end offset any more
        StreamsGroups.Member c1 = StreamsGroups.Member.of("p3", Map.of(), Map.of());
        assignor.assign(new StreamsGroups.Group(new TreeMap<>(Map.of("a1", a1, "c1", c1)), 1), TOPOLOGY);
        assertEquals("{\"1_0\":90000}", lastRequest.get().get("task_costs").toString());
        // another group's processes know nothing of it
        assignor.assign(new StreamsGroups.Group(new TreeMap<>(Map.of(
                "x1", StreamsGroups.Member.of("p8", Map.of("1", Set.of(0)), Map.of()))), 1), TOPOLOGY);
        assertEquals("{}", lastRequest.get().get("task_costs").toString());
    }

    @Test
    void atAColdStartTheProcessWhoseLocalStateReachedFurthestIsTheCaughtUpOne() {
        // nobody runs 1_0 (no end offset reported): p1's store reached 100, p2's 40
        StreamsGroups.Member a1 = StreamsGroups.Member.of("p1", Map.of(), Map.of())
                .reporting(Map.of("1", Map.of(0, 100L)), Map.of());
        StreamsGroups.Member b1 = StreamsGroups.Member.of("p2", Map.of(), Map.of())
                .reporting(Map.of("1", Map.of(0, 40L)), Map.of());
        assignor(2000).assign(new StreamsGroups.Group(new TreeMap<>(Map.of("a1", a1, "b1", b1)), 0), TOPOLOGY);
        JsonNode request = lastRequest.get();
        assertEquals("{\"1_0\":100}", request.get("task_costs").toString());
        assertEquals("{\"1_0\":0}", request.get("clients").get(0).get("lags").toString());
        // p2 holds part of the state (60 behind): not caught up, but where a new replica restores least
        assertEquals("{\"1_0\":60}", request.get("clients").get(1).get("lags").toString());
    }

    @Test
    void anOldStateDirectoryDoesNotPassForTheStateOfATaskAnotherProcessRuns() {
        // a1 runs 1_0 and reports no offsets for it (no standby reports its end); p2 still has a
        // state directory of 1_0 that reached offset 40
        StreamsGroups.Member a1 = StreamsGroups.Member.of("p1", Map.of("1", Set.of(0)), Map.of());
        StreamsGroups.Member b1 = StreamsGroups.Member.of("p2", Map.of(), Map.of())
                .reporting(Map.of("1", Map.of(0, 40L)), Map.of());
        assignor(2000).assign(new StreamsGroups.Group(new TreeMap<>(Map.of("a1", a1, "b1", b1)), 0), TOPOLOGY);
        JsonNode request = lastRequest.get();
        assertEquals("{}", request.get("task_costs").toString());
        assertEquals("{}", request.get("clients").get(1).get("lags").toString());
    }

    @Test
    void stickinessTasksInTheBrokersPropertiesCountsMovedTasksAndAnUnknownValueIsRefused() {
        StickydStreamsGroupAssignor assignor = new StickydStreamsGroupAssignor();
        assignor.configure(Map.of("stickyd.url", "http://127.0.0.1:" + server.getAddress().getPort(),
                "stickyd.stickiness", "tasks"));
        assignor.assign(GROUP, TOPOLOGY);
        assertTrue(lastRequest.get().get("options").path("stickiness").isMissingNode());
        assertTrue(lastRequest.get().path("task_costs").isMissingNode());
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> assignor.configure(Map.of("stickyd.stickiness", "bytes")));
        assertTrue(refused.getMessage().contains("stickyd.stickiness"), refused.getMessage());
    }

    @Test
    void anAnswerThatDoesNotFitFallsBackToKafkasSticky() throws Exception {
        answer.set(TARGET.replace("\"1_1\"], \"standby\": [\"1_0\"]", "], \"standby\": [\"1_0\"]"));
        long before = StickydStreamsGroupAssignor.fallbacks();
        double invalid = fallbacksFor("invalid-answer");
        GroupAssignment assignment = assignor(2000).assign(GROUP, TOPOLOGY);
        assertEquals(before + 1, StickydStreamsGroupAssignor.fallbacks());
        assertEquals(invalid + 1, fallbacksFor("invalid-answer"));
        assertEveryTaskActiveOnce(assignment);
    }

    @Test
    void anErrorStatusFallsBack() throws Exception {
        status.set(503);
        answer.set("{\"detail\": \"busy\"}");
        long before = StickydStreamsGroupAssignor.fallbacks();
        double erring = fallbacksFor("error-answer");
        assertEveryTaskActiveOnce(assignor(2000).assign(GROUP, TOPOLOGY));
        assertEquals(before + 1, StickydStreamsGroupAssignor.fallbacks());
        assertEquals(erring + 1, fallbacksFor("error-answer"));
    }

    @Test
    void aHungStickydFallsBackWithinTheDeadline() throws Exception {
        delayMs.set(3000);
        long before = StickydStreamsGroupAssignor.fallbacks();
        double slow = fallbacksFor("timeout");
        long start = System.nanoTime();
        GroupAssignment assignment = assignor(300).assign(GROUP, TOPOLOGY);
        long tookMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(tookMs < 1500, "took " + tookMs + " ms");
        assertEquals(before + 1, StickydStreamsGroupAssignor.fallbacks());
        assertEquals(slow + 1, fallbacksFor("timeout"));
        assertEveryTaskActiveOnce(assignment);
    }

    @Test
    void isConfiguredFromTheBrokersPropertiesAndNamedStickyd() {
        StickydStreamsGroupAssignor assignor = new StickydStreamsGroupAssignor();
        assignor.configure(Map.of("stickyd.url", "http://127.0.0.1:" + server.getAddress().getPort(),
                "stickyd.timeout.ms", "1500", "node.id", "1"));
        assertEquals("stickyd", assignor.name());
        assertEquals("stickyd", assignor.toString());
        long before = StickydStreamsGroupAssignor.fallbacks();
        assignor.assign(GROUP, TOPOLOGY);
        assertEquals(before, StickydStreamsGroupAssignor.fallbacks());
        assertEquals(1050, lastRequest.get().get("options").get("time_limit_ms").asInt());
    }

    @Test
    void oneInstanceAssignsConcurrentlyFromManyThreads() throws Exception {
        StickydStreamsGroupAssignor assignor = assignor(5000);
        GroupAssignment expected = assignor.assign(GROUP, TOPOLOGY);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<GroupAssignment>> results = new ArrayList<>();
            for (int i = 0; i < 32; i++) {
                results.add(pool.submit(() -> assignor.assign(GROUP, TOPOLOGY)));
            }
            for (Future<GroupAssignment> result : results) {
                assertEquals(expected, result.get());
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void theFitCheckRefusesAStandbyBesideItsActiveAndATaskActiveTwice() {
        Set<String> tasks = Set.of("1_0", "1_1");
        assertThrows(IllegalArgumentException.class, () -> StickydStreamsGroupAssignor.checkFits(tasks,
                Map.of("p1", sorted("1_0", "1_1")), Map.of("p1", sorted("1_0"))));
        assertThrows(IllegalArgumentException.class, () -> StickydStreamsGroupAssignor.checkFits(tasks,
                Map.of("p1", sorted("1_0", "1_1"), "p2", sorted("1_1")), Map.of()));
        assertThrows(IllegalArgumentException.class, () -> StickydStreamsGroupAssignor.checkFits(tasks,
                Map.of("p1", sorted("1_0", "1_1", "2_0")), Map.of()));
        StickydStreamsGroupAssignor.checkFits(tasks, Map.of("p1", sorted("1_0"), "p2", sorted("1_1")),
                Map.of("p1", sorted("1_1"), "p2", sorted("1_0")));
    }

    private static SortedSet<String> sorted(String... names) {
        return new TreeSet<>(List.of(names));
    }

    private static void assertEveryTaskActiveOnce(GroupAssignment assignment) {
        List<String> actives = new ArrayList<>();
        assignment.members().values().forEach(member -> member.activeTasks()
                .forEach((s, ps) -> ps.forEach(p -> actives.add(s + "_" + p))));
        actives.sort(null);
        assertEquals(List.of("0_0", "0_1", "1_0", "1_1"), actives);
    }
}
