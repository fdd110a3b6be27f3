package io.stickyd.kafka.streams.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stickyd.kafka.streams.StickydStreamsGroupAssignor;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.coordinator.group.streams.assignor.AssignmentMemberSpec;
import org.apache.kafka.coordinator.group.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.streams.assignor.GroupSpecImpl;
import org.apache.kafka.coordinator.group.streams.assignor.TaskId;
import org.apache.kafka.coordinator.group.streams.assignor.TopologyDescriber;

/**
 * Runs {@link StickydStreamsGroupAssignor} on a group read from stdin, with Kafka's own group
 * coordinator types ({@code GroupSpecImpl}, {@code AssignmentMemberSpec}), and prints the
 * assignment and the fallback count as JSON (the broker cannot be configured to use it, see the
 * class comment). Input: {@code {"subtopologies": [{"id", "partitions", "stateful"}], "configs": {},
 * "members": [{"id", "process", "rack", "active": {"0": [1]}, "standby": {}, "warmup": {},
 * "offsets": {"1_0": 5}, "end_offsets": {"1_0": 9}}]}}. Output: {@code {"members": {"m1": {"active":
 * ["0_1"], "standby": [], "warmup": []}}, "fallbacks": 0}}.
 */
public final class GroupAssignorDriver {
    private static final ObjectMapper JSON = new ObjectMapper();

    private GroupAssignorDriver() {
    }

    public static void main(String[] args) throws Exception {
        JsonNode input = JSON.readTree(System.in);
        Map<String, Integer> partitions = new HashMap<>();
        Map<String, Boolean> stateful = new HashMap<>();
        List<String> subtopologies = new java.util.ArrayList<>();
        input.get("subtopologies").forEach(s -> {
            subtopologies.add(s.get("id").asText());
            partitions.put(s.get("id").asText(), s.get("partitions").asInt());
            stateful.put(s.get("id").asText(), s.get("stateful").asBoolean());
        });
        Map<String, AssignmentMemberSpec> members = new HashMap<>();
        input.get("members").forEach(m -> members.put(m.get("id").asText(), new AssignmentMemberSpec(
                Optional.empty(),
                Optional.ofNullable(m.path("rack").isTextual() ? m.get("rack").asText() : null),
                tasks(m.path("active")),
                tasks(m.path("standby")),
                tasks(m.path("warmup")),
                m.get("process").asText(),
                Map.of(),
                offsets(m.path("offsets")),
                offsets(m.path("end_offsets")))));
        Map<String, String> configs = new HashMap<>();
        input.path("configs").fields().forEachRemaining(e -> configs.put(e.getKey(), e.getValue().asText()));
        TopologyDescriber topology = new TopologyDescriber() {
            @Override
            public List<String> subtopologies() {
                return subtopologies;
            }

            @Override
            public int maxNumInputPartitions(String subtopologyId) {
                return partitions.get(subtopologyId);
            }

            @Override
            public boolean isStateful(String subtopologyId) {
                return stateful.get(subtopologyId);
            }
        };
        GroupAssignment assignment = new StickydStreamsGroupAssignor().assign(new GroupSpecImpl(members, configs), topology);
        ObjectNode out = JSON.createObjectNode();
        ObjectNode byMember = out.putObject("members");
        assignment.members().forEach((id, member) -> {
            ObjectNode node = byMember.putObject(id);
            names(member.activeTasks()).forEach(node.putArray("active")::add);
            names(member.standbyTasks()).forEach(node.putArray("standby")::add);
            names(member.warmupTasks()).forEach(node.putArray("warmup")::add);
        });
        out.put("fallbacks", StickydStreamsGroupAssignor.fallbacks());
        System.out.println(JSON.writeValueAsString(out));
    }

    private static Map<String, Set<Integer>> tasks(JsonNode node) {
        Map<String, Set<Integer>> out = new HashMap<>();
        node.fields().forEachRemaining(e -> {
            Set<Integer> set = new TreeSet<>();
            e.getValue().forEach(p -> set.add(p.asInt()));
            out.put(e.getKey(), set);
        });
        return out;
    }

    private static Map<TaskId, Long> offsets(JsonNode node) {
        Map<TaskId, Long> out = new HashMap<>();
        node.fields().forEachRemaining(e -> {
            String name = e.getKey();
            int cut = name.lastIndexOf('_');
            out.put(new TaskId(name.substring(0, cut), Integer.parseInt(name.substring(cut + 1))), e.getValue().asLong());
        });
        return out;
    }

    private static TreeSet<String> names(Map<String, Set<Integer>> tasks) {
        TreeSet<String> out = new TreeSet<>();
        tasks.forEach((s, ps) -> ps.forEach(p -> out.add(s + "_" + p)));
        return out;
    }
}
