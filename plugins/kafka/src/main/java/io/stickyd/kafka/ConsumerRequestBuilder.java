package io.stickyd.kafka;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.MemberSubscription;
import org.apache.kafka.coordinator.group.api.assignor.PartitionAssignorException;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;

/**
 * Turns the group coordinator's view of a consumer group into a stickyd consumer request
 * (docs/wire-format.md, consumer assignment). Topic keys are the topic ids (the coordinator does not pass names). The current target
 * assignment is the members' {@code owned} partitions; it is the coordinator's own record, so no
 * generations are sent. Partition racks (KIP-881) are sent only when some member has a rack.
 * A subscribed topic id the describer does not know is refused with {@link PartitionAssignorException},
 * as Kafka's own assignors refuse it.
 */
final class ConsumerRequestBuilder {
    private ConsumerRequestBuilder() {
    }

    /** The request, and the topic key to topic id map that reading its answer needs. */
    record Request(ObjectNode body, Map<String, Uuid> topicIds) {
    }

    static Request build(GroupSpec group, SubscribedTopicDescriber topics, int timeLimitMs) {
        return build(group, topics, timeLimitMs, StickydHttpClient.JSON.createObjectNode());
    }

    /** {@code options}: what the assignor adds to the request's options (e.g. balance by load). */
    static Request build(GroupSpec group, SubscribedTopicDescriber topics, int timeLimitMs, ObjectNode options) {
        ObjectNode body = StickydHttpClient.JSON.createObjectNode();
        ObjectNode counts = body.putObject("topics");
        ArrayNode members = body.putArray("members");
        Map<String, Uuid> topicIds = new HashMap<>();
        boolean anyRack = false;
        for (String memberId : new TreeSet<>(group.memberIds())) {
            MemberSubscription subscription = group.memberSubscription(memberId);
            ObjectNode member = members.addObject().put("id", memberId);
            ArrayNode subscribed = member.putArray("topics");
            for (Uuid topicId : subscription.subscribedTopicIds()) {
                String key = topicId.toString();
                subscribed.add(key);
                if (topicIds.containsKey(key)) {
                    continue;
                }
                int count = topics.numPartitions(topicId);
                if (count < 0) {
                    throw new PartitionAssignorException("member " + memberId + " is subscribed to topic " + key
                        + ", which is not in the group's topic metadata");
                }
                if (count > 0) {
                    topicIds.put(key, topicId);
                    counts.put(key, count);
                }
            }
            ObjectNode owned = member.putObject("owned");
            for (Map.Entry<Uuid, Set<Integer>> claim : group.memberAssignment(memberId).partitions().entrySet()) {
                if (!claim.getValue().isEmpty()) {
                    ArrayNode partitions = owned.putArray(claim.getKey().toString());
                    new TreeSet<>(claim.getValue()).forEach(partitions::add);
                }
            }
            if (subscription.rackId().isPresent()) {
                member.put("rack", subscription.rackId().get());
                anyRack = true;
            }
        }
        if (anyRack) {
            addPartitionRacks(body.putObject("partition_racks"), topicIds, topics);
        }
        body.putObject("options").put("strategy", "optimal").put("time_limit_ms", timeLimitMs).setAll(options);
        return new Request(body, topicIds);
    }

    private static void addPartitionRacks(ObjectNode racks, Map<String, Uuid> topicIds, SubscribedTopicDescriber topics) {
        for (Map.Entry<String, Uuid> topic : new TreeMap<>(topicIds).entrySet()) {
            ArrayNode perPartition = racks.putArray(topic.getKey());
            for (int partition = 0; partition < topics.numPartitions(topic.getValue()); partition++) {
                ArrayNode replicaRacks = perPartition.addArray();
                new TreeSet<>(topics.racksForPartition(topic.getValue(), partition)).forEach(replicaRacks::add);
            }
        }
    }
}
