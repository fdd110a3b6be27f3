package io.stickyd.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.modern.MemberAssignmentImpl;

/**
 * Reads stickyd's answer into the coordinator's {@link GroupAssignment}. It trusts nothing it cannot
 * check cheaply: every member of the group must be in the answer and no other, each partition must
 * exist, belong to a topic the member subscribes to, and be given to exactly one member. Anything else
 * throws {@link IllegalStateException}, which the assignor turns into its fallback.
 *
 * <p>A member whose partitions do not change gets back the very map the group spec gave it (its current
 * assignment), as Kafka's own assignors do: the coordinator finds it unchanged without comparing it
 * partition by partition.
 */
final class ConsumerResponseReader {
    private ConsumerResponseReader() {
    }

    /**
     * Refuses an answer stickyd made with its quick fill (no time left for its solver or the KIP-54
     * heuristic): valid, but no better balanced than what the members held, so Kafka's uniform
     * assignor answers instead (the assignor's fallback).
     */
    static void refuseQuickFill(String solver) {
        if ("quick-fill".equals(solver)) {
            throw new QuickFillAnswer();
        }
    }

    /** stickyd answered in time, but with its quick fill: counted as a timeout. */
    static final class QuickFillAnswer extends IllegalStateException {
        QuickFillAnswer() {
            super("stickyd had time only for its quick fill (stickyd.timeout.ms is short for this group)");
        }
    }

    static GroupAssignment read(JsonNode answer, ConsumerRequestBuilder.Request request, GroupSpec group, SubscribedTopicDescriber topics) {
        refuseQuickFill(answer.path("stats").path("solver").asText(""));
        JsonNode assignment = answer.path("assignment");
        if (!assignment.isObject() || assignment.size() != group.memberIds().size()) {
            throw new IllegalStateException("answer's assignment does not list exactly the group's members");
        }
        Map<Uuid, BitSet> given = new HashMap<>();
        Map<String, MemberAssignment> members = new HashMap<>();
        for (String memberId : group.memberIds()) {
            JsonNode perTopic = assignment.get(memberId);
            if (perTopic == null || !perTopic.isObject()) {
                throw new IllegalStateException("answer has no assignment for member " + memberId);
            }
            Set<Uuid> subscribed = group.memberSubscription(memberId).subscribedTopicIds();
            Map<Uuid, Set<Integer>> partitions = new HashMap<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = perTopic.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> entry = it.next();
                Uuid topicId = request.topicIds().get(entry.getKey());
                if (topicId == null || !subscribed.contains(topicId)) {
                    throw new IllegalStateException("member " + memberId + " given unknown or unsubscribed topic " + entry.getKey());
                }
                int count = topics.numPartitions(topicId);
                BitSet taken = given.computeIfAbsent(topicId, id -> new BitSet(count));
                Set<Integer> numbers = new HashSet<>();
                for (JsonNode number : entry.getValue()) {
                    int partition = number.asInt(-1);
                    if (!number.isInt() || partition < 0 || partition >= count || taken.get(partition)) {
                        throw new IllegalStateException("partition " + number + " of " + entry.getKey() + " out of range or given twice");
                    }
                    taken.set(partition);
                    numbers.add(partition);
                }
                if (!numbers.isEmpty()) {
                    partitions.put(topicId, numbers);
                }
            }
            Map<Uuid, Set<Integer>> current = group.memberAssignment(memberId).partitions();
            members.put(memberId, new MemberAssignmentImpl(partitions.equals(current) ? current : partitions));
        }
        for (Uuid topicId : request.topicIds().values()) {
            BitSet taken = given.get(topicId);
            if (taken == null || taken.cardinality() != topics.numPartitions(topicId)) {
                throw new IllegalStateException("answer leaves partitions of topic " + topicId + " unassigned");
            }
        }
        return new GroupAssignment(members);
    }
}
