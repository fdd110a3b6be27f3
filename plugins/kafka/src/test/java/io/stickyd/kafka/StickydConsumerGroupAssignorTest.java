package io.stickyd.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.PartitionAssignorException;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The assignors at Kafka's interface, on the coordinator's own spec classes and a stub stickyd: unchanged
 * members get their map back, unknown topics are refused as Kafka's assignors refuse them, and
 * {@code stickyd-load} asks for balance by load (and, with {@code stickyd.load.weights=live}, the measured rates).
 */
class StickydConsumerGroupAssignorTest {
    private static final Uuid ORDERS = new Uuid(7L, 1L);
    private static final Uuid GONE = new Uuid(7L, 2L);

    private static final SubscribedTopicDescriber TOPICS = new SubscribedTopicDescriber() {
        public int numPartitions(Uuid topicId) {
            return topicId.equals(ORDERS) ? 4 : -1;
        }

        public Set<String> racksForPartition(Uuid topicId, int partition) {
            return Set.of();
        }
    };

    private HttpServer server;
    private final AtomicReference<JsonNode> asked = new AtomicReference<>();
    private final AtomicInteger requests = new AtomicInteger();
    private volatile String answer = "{}";

    @BeforeEach
    void startServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/v1/assign/consumer", exchange -> {
            requests.incrementAndGet();
            asked.set(StickydHttpClient.JSON.readTree(exchange.getRequestBody().readAllBytes()));
            byte[] body = answer.replace("T", ORDERS.toString()).getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
    }

    @AfterEach
    void stopServer() {
        server.stop(0);
    }

    private <A extends StickydConsumerGroupAssignor> A configured(A assignor, Map<String, Object> extra) {
        Map<String, Object> configs = new HashMap<>(extra);
        configs.put(StickydHttpClient.URL_CONFIG, "http://127.0.0.1:" + server.getAddress().getPort());
        configs.put(StickydHttpClient.TIMEOUT_MS_CONFIG, "5000");
        configs.putIfAbsent(StickydConsumerGroupAssignor.ENCODING_CONFIG, "json"); // this stub speaks JSON
        assignor.configure(configs);
        return assignor;
    }

    /** The coordinator's spec: a owns orders 0-2 and b owns 3, both subscribed to `topics`. */
    private static GroupSpec group(Set<Uuid> topics) {
        Map<String, MemberSubscriptionAndAssignmentImpl> members = Map.of(
            "a", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), topics,
                new Assignment(Map.of(ORDERS, Set.of(0, 1, 2)))),
            "b", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), topics,
                new Assignment(Map.of(ORDERS, Set.of(3)))));
        Map<Uuid, Map<Integer, String>> owners = Map.of(ORDERS, Map.of(0, "a", 1, "a", 2, "a", 3, "b"));
        return new GroupSpecImpl(members, SubscriptionType.HOMOGENEOUS, owners);
    }

    @Test
    void aMemberWhoseAssignmentIsUnchangedGetsBackTheVeryMapItHeld() {
        answer = "{\"assignment\": {\"a\": {\"T\": [0, 1]}, \"b\": {\"T\": [3, 2]}}}";
        GroupSpec group = group(Set.of(ORDERS));
        long fallbacks = StickydConsumerGroupAssignor.fallbacks();
        GroupAssignment assignment = configured(new StickydConsumerGroupAssignor(), Map.of()).assign(group, TOPICS);
        assertEquals(fallbacks, StickydConsumerGroupAssignor.fallbacks());
        assertEquals(Map.of(ORDERS, Set.of(0, 1)), assignment.members().get("a").partitions());
        assertEquals(Map.of(ORDERS, Set.of(2, 3)), assignment.members().get("b").partitions());
        assertNotSame(group.memberAssignment("b").partitions(), assignment.members().get("b").partitions());

        answer = "{\"assignment\": {\"a\": {\"T\": [2, 1, 0]}, \"b\": {\"T\": [3]}}}";
        assignment = configured(new StickydConsumerGroupAssignor(), Map.of()).assign(group, TOPICS);
        assertSame(group.memberAssignment("a").partitions(), assignment.members().get("a").partitions());
        assertSame(group.memberAssignment("b").partitions(), assignment.members().get("b").partitions());
    }

    @Test
    void anAnswerMadeByStickydsQuickFillIsLeftForKafkasUniformAssignor() {
        // valid, but only what the members held plus the rest dealt out: stickyd had no time to balance
        answer = "{\"assignment\": {\"a\": {\"T\": [0, 1, 2]}, \"b\": {\"T\": [3]}}, "
            + "\"stats\": {\"solver\": \"quick-fill\", \"fallback\": true}}";
        GroupSpec group = group(Set.of(ORDERS));
        long fallbacks = StickydConsumerGroupAssignor.fallbacks();
        GroupAssignment assignment = configured(new StickydConsumerGroupAssignor(), Map.of()).assign(group, TOPICS);
        assertEquals(fallbacks + 1, StickydConsumerGroupAssignor.fallbacks());
        assertEquals(1, requests.get());
        assertEquals(AssignorMetrics.Cause.TIMEOUT, AssignorMetrics.causeOf(new ConsumerResponseReader.QuickFillAnswer()));
        GroupAssignment uniform = new UniformAssignor().assign(group, TOPICS);
        for (String member : group.memberIds()) {
            assertEquals(uniform.members().get(member).partitions(), assignment.members().get(member).partitions());
        }

        answer = answer.replace("quick-fill", "kip54-sticky"); // the KIP-54 heuristic's answer is taken
        assignment = configured(new StickydConsumerGroupAssignor(), Map.of()).assign(group, TOPICS);
        assertEquals(fallbacks + 1, StickydConsumerGroupAssignor.fallbacks());
        assertEquals(Map.of(ORDERS, Set.of(0, 1, 2)), assignment.members().get("a").partitions());
    }

    @Test
    void aSubscribedTopicTheDescriberDoesNotKnowIsRefusedAsKafkasUniformAssignorRefusesIt() {
        GroupSpec group = group(Set.of(ORDERS, GONE));
        assertThrows(PartitionAssignorException.class, () -> new UniformAssignor().assign(group, TOPICS));
        long fallbacks = StickydConsumerGroupAssignor.fallbacks();
        PartitionAssignorException refused = assertThrows(PartitionAssignorException.class,
            () -> configured(new StickydConsumerGroupAssignor(), Map.of()).assign(group, TOPICS));
        assertTrue(refused.getMessage().contains(GONE.toString()), refused.getMessage());
        assertEquals(fallbacks, StickydConsumerGroupAssignor.fallbacks(), "no fallback for a group nobody can assign");
        assertEquals(0, requests.get(), "stickyd is not asked");
    }

    @Test
    void aGroupInWhichNoMemberSubscribesGetsNoMemberAsKafkasUniformAnswersAndAsksNothing() {
        GroupSpec group = group(Set.of());
        assertEquals(Map.of(), new UniformAssignor().assign(group, TOPICS).members());
        GroupSpec noMember = new GroupSpecImpl(Map.of(), SubscriptionType.HOMOGENEOUS, Map.of());
        long fallbacks = StickydConsumerGroupAssignor.fallbacks();
        for (StickydConsumerGroupAssignor assignor : new StickydConsumerGroupAssignor[] {
            configured(new StickydConsumerGroupAssignor(), Map.of()),
            configured(new StickydLoadConsumerGroupAssignor(), Map.of())}) {
            assertEquals(Map.of(), assignor.assign(group, TOPICS).members());
            assertEquals(Map.of(), assignor.assign(noMember, TOPICS).members());
        }
        assertEquals(fallbacks, StickydConsumerGroupAssignor.fallbacks());
        assertEquals(0, requests.get(), "stickyd is not asked");
    }

    @Test
    void theLoadAssignorIsNamedStickydLoadAndAsksForBalanceByLoadWithTheBrokersTolerance() {
        answer = "{\"assignment\": {\"a\": {\"T\": [0, 1]}, \"b\": {\"T\": [2, 3]}}}";
        StickydLoadConsumerGroupAssignor load = configured(new StickydLoadConsumerGroupAssignor(),
            Map.of(StickydConsumerGroupAssignor.LOAD_TOLERANCE_CONFIG, "0.1"));
        assertEquals("stickyd-load", load.name());
        load.assign(group(Set.of(ORDERS)), TOPICS);
        JsonNode options = asked.get().path("options");
        assertEquals("load", options.path("balance").asText());
        assertEquals(0.1, options.path("load_tolerance").asDouble());
        assertEquals("optimal", options.path("strategy").asText());
        assertFalse(asked.get().has("partition_weights"), "the coordinator knows no rates: equal weights");

        configured(new StickydConsumerGroupAssignor(), Map.of()).assign(group(Set.of(ORDERS)), TOPICS);
        assertEquals("stickyd", new StickydConsumerGroupAssignor().name());
        assertNull(asked.get().path("options").get("balance"), "the consumer assignor balances counts");
    }

    @Test
    void aToleranceOutsideZeroToOneIsRefusedNamingTheProperty() {
        for (String bad : new String[] {"1.5", "-0.1", "a lot", "NaN"}) {
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> configured(new StickydLoadConsumerGroupAssignor(),
                    Map.of(StickydConsumerGroupAssignor.LOAD_TOLERANCE_CONFIG, bad)), bad);
            assertTrue(refused.getMessage().startsWith("stickyd.load.tolerance"), refused.getMessage());
        }
    }

    @Test
    void withLiveWeightsTheLoadAssignorAsksForTheMeasuredRatesAndTheConsumerAssignorDoesNot() {
        answer = "{\"assignment\": {\"a\": {\"T\": [0, 1]}, \"b\": {\"T\": [2, 3]}}}";
        Map<String, Object> live = Map.of(StickydConsumerGroupAssignor.LOAD_WEIGHTS_CONFIG, "live");
        configured(new StickydLoadConsumerGroupAssignor(), live).assign(group(Set.of(ORDERS)), TOPICS);
        assertEquals("live", asked.get().path("partition_weights").asText());
        configured(new StickydConsumerGroupAssignor(), live).assign(group(Set.of(ORDERS)), TOPICS);
        assertFalse(asked.get().has("partition_weights"), "counts need no weights");
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
            () -> configured(new StickydLoadConsumerGroupAssignor(),
                Map.of(StickydConsumerGroupAssignor.LOAD_WEIGHTS_CONFIG, "bytes")));
        assertTrue(refused.getMessage().startsWith("stickyd.load.weights"), refused.getMessage());
    }
}
