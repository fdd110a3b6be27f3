package io.stickyd.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberSubscription;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.modern.MemberAssignmentImpl;
import org.junit.jupiter.api.Test;

/** The coordinator's group in contract words, and answers that must not reach the coordinator. */
class ConsumerMappingTest {
    private static final Uuid ORDERS = Uuid.randomUuid();
    private static final Map<String, Set<Uuid>> SUBSCRIPTIONS = Map.of("a", Set.of(ORDERS), "b", Set.of(ORDERS));
    private static final Map<String, Map<Uuid, Set<Integer>>> OWNED = Map.of("a", Map.of(ORDERS, Set.of(0, 1, 2)), "b", Map.of());

    private static final SubscribedTopicDescriber TOPICS = new SubscribedTopicDescriber() {
        public int numPartitions(Uuid topicId) {
            return topicId.equals(ORDERS) ? 4 : -1;
        }

        public Set<String> racksForPartition(Uuid topicId, int partition) {
            return Set.of();
        }
    };

    private static final GroupSpec GROUP = new GroupSpec() {
        public java.util.Collection<String> memberIds() {
            return SUBSCRIPTIONS.keySet();
        }

        public SubscriptionType subscriptionType() {
            return SubscriptionType.HOMOGENEOUS;
        }

        public boolean isPartitionAssigned(Uuid topicId, int partition) {
            return OWNED.values().stream().anyMatch(m -> m.getOrDefault(topicId, Set.of()).contains(partition));
        }

        public boolean isPartitionAssignable(Uuid topicId, int partition) {
            return true;
        }

        public MemberSubscription memberSubscription(String memberId) {
            return new MemberSubscription() {
                public Optional<String> rackId() {
                    return Optional.empty();
                }

                public Optional<String> instanceId() {
                    return Optional.empty();
                }

                public Set<Uuid> subscribedTopicIds() {
                    return SUBSCRIPTIONS.get(memberId);
                }
            };
        }

        public MemberAssignment memberAssignment(String memberId) {
            return new MemberAssignmentImpl(OWNED.get(memberId));
        }
    };

    private static JsonNode answer(String json) throws Exception {
        return StickydHttpClient.JSON.readTree(json.replace("T", ORDERS.toString()));
    }

    @Test
    void requestKeysTopicsByIdAndSendsTheCurrentAssignmentAsOwned() {
        ConsumerRequestBuilder.Request request = ConsumerRequestBuilder.build(GROUP, TOPICS, 250);
        JsonNode body = request.body();
        assertEquals(4, body.path("topics").path(ORDERS.toString()).asInt());
        assertEquals("a", body.path("members").get(0).path("id").asText());
        assertEquals(List.of(0, 1, 2), StickydHttpClient.JSON.convertValue(
            body.path("members").get(0).path("owned").path(ORDERS.toString()), List.class));
        assertEquals(250, body.path("options").path("time_limit_ms").asInt());
        assertEquals(false, body.has("partition_racks"));
    }

    @Test
    void aCompleteAnswerBecomesTheGroupAssignment() throws Exception {
        ConsumerRequestBuilder.Request request = ConsumerRequestBuilder.build(GROUP, TOPICS, 250);
        GroupAssignment assignment = ConsumerResponseReader.read(
            answer("{\"assignment\": {\"a\": {\"T\": [0, 1]}, \"b\": {\"T\": [2, 3]}}}"), request, GROUP, TOPICS);
        assertEquals(Set.of(0, 1), assignment.members().get("a").partitions().get(ORDERS));
        assertEquals(Set.of(2, 3), assignment.members().get("b").partitions().get(ORDERS));
    }

    @Test
    void answersThatDoNotCheckOutAreRefused() throws Exception {
        ConsumerRequestBuilder.Request request = ConsumerRequestBuilder.build(GROUP, TOPICS, 250);
        for (String bad : List.of(
            "{\"assignment\": {\"a\": {\"T\": [0, 1]}, \"b\": {\"T\": [1, 2, 3]}}}",
            "{\"assignment\": {\"a\": {\"T\": [0, 1]}, \"b\": {\"T\": [2]}}}",
            "{\"assignment\": {\"a\": {\"T\": [0, 1]}, \"b\": {\"T\": [2, 4]}}}",
            "{\"assignment\": {\"a\": {\"T\": [0, 1, 2, 3]}}}",
            "{\"assignment\": {\"a\": {\"T\": [0, 1]}, \"x\": {\"T\": [2, 3]}}}")) {
            assertThrows(IllegalStateException.class, () -> ConsumerResponseReader.read(answer(bad), request, GROUP, TOPICS), bad);
        }
    }
}
