package io.stickyd.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.IntBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

/**
 * {@link EqualSubscriptions} on every group of a JSON file (consumer requests of equal subscriptions whose
 * topic names are topic ids, {@link Uuid#toString}), through the plug-in's own path: the group as the
 * coordinator holds it, read as the compact request reads it, solved, and the answer built and checked.
 * Prints one JSON array, per group its assignment (member id -> topic id -> sorted partitions), or null
 * when the closed form does not answer it. Tests compare it with the service's answer.
 */
public final class EqualSubscriptionsDump {
    private static final ObjectMapper JSON = new ObjectMapper();

    private EqualSubscriptionsDump() {
    }

    public static void main(String[] args) throws Exception {
        ArrayNode out = JSON.createArrayNode();
        for (JsonNode problem : JSON.readTree(Files.readAllBytes(Path.of(args[0])))) {
            Map<Uuid, Integer> counts = new HashMap<>();
            problem.get("topics").fields().forEachRemaining(e -> counts.put(Uuid.fromString(e.getKey()), e.getValue().asInt()));
            GroupSpec group = group(problem);
            SubscribedTopicDescriber topics = new SubscribedTopicDescriber() {
                @Override
                public int numPartitions(Uuid topicId) {
                    return counts.getOrDefault(topicId, -1);
                }

                @Override
                public Set<String> racksForPartition(Uuid topicId, int partition) {
                    return Set.of();
                }
            };
            CompactConsumerRequest.Request request = CompactConsumerRequest.read(group, topics, new HeldPartitions());
            EqualSubscriptions.Answer answer = request == null ? null : EqualSubscriptions.solve(request);
            if (answer == null) {
                out.addNull();
                continue;
            }
            GroupAssignment assignment = CompactConsumerAnswer.assignment(IntBuffer.wrap(answer.owners()), answer.unchanged(), request, group);
            ObjectNode members = out.addObject();
            assignment.members().forEach((member, given) -> {
                ObjectNode byTopic = members.putObject(member);
                given.partitions().forEach((topic, partitions) -> {
                    if (!partitions.isEmpty()) {
                        ArrayNode list = byTopic.putArray(topic.toString());
                        new TreeSet<>(partitions).forEach(list::add);
                    }
                });
            });
        }
        System.out.println(JSON.writeValueAsString(out));
    }

    /** The coordinator's spec of the request's members: subscriptions, current assignment, its inverse. */
    private static GroupSpec group(JsonNode problem) {
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
        Map<Uuid, Map<Integer, String>> owners = new HashMap<>();
        for (JsonNode member : problem.get("members")) {
            String id = member.get("id").asText();
            Set<Uuid> subscribed = new HashSet<>();
            member.get("topics").forEach(t -> subscribed.add(Uuid.fromString(t.asText())));
            Map<Uuid, Set<Integer>> held = new HashMap<>();
            member.path("owned").fields().forEachRemaining(e -> {
                Uuid topic = Uuid.fromString(e.getKey());
                Set<Integer> partitions = new HashSet<>();
                e.getValue().forEach(p -> partitions.add(p.asInt()));
                held.put(topic, partitions);
                partitions.forEach(p -> owners.computeIfAbsent(topic, t -> new HashMap<>()).put(p, id));
            });
            members.put(id, new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), subscribed,
                new Assignment(held)));
        }
        return new GroupSpecImpl(members, SubscriptionType.HOMOGENEOUS, owners);
    }
}
