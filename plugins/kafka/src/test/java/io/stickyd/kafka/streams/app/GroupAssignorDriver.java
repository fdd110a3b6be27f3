package io.stickyd.kafka.streams.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stickyd.kafka.streams.StickydStreamsGroupAssignor;
import io.stickyd.kafka.streams.StreamsGroups;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;

/**
 * Runs {@link StickydStreamsGroupAssignor} on a group read from stdin, through the public KIP-1357
 * interfaces ({@link StreamsGroups}), and prints the assignment and the fallback count as JSON. Input: {@code {"subtopologies": [{"id", "partitions", "stateful"}], "configs": {},
 * "members": [{"id", "process", "rack", "active": {"0": [1]}, "standby": {}, "warmup": {},
 * "offsets": {"1_0": 5}, "end_offsets": {"1_0": 9}}]}}. Output: {@code {"members": {"m1": {"active":
 * ["0_1"], "standby": []}}, "fallbacks": 0}}.
 */
public final class GroupAssignorDriver {
    private static final ObjectMapper JSON = new ObjectMapper();

    private GroupAssignorDriver() {
    }

    public static void main(String[] args) throws Exception {
        JsonNode input = JSON.readTree(System.in);
        SortedMap<String, Integer> partitions = new TreeMap<>();
        Set<String> stateful = new HashSet<>();
        input.get("subtopologies").forEach(s -> {
            partitions.put(s.get("id").asText(), s.get("partitions").asInt());
            if (s.get("stateful").asBoolean()) {
                stateful.add(s.get("id").asText());
            }
        });
        SortedMap<String, StreamsGroups.Member> members = new TreeMap<>();
        input.get("members").forEach(m -> members.put(m.get("id").asText(), new StreamsGroups.Member(
                m.get("process").asText(),
                Optional.ofNullable(m.path("rack").isTextual() ? m.get("rack").asText() : null),
                tasks(m.path("active")),
                tasks(m.path("standby")),
                tasks(m.path("warmup")),
                offsets(m.path("offsets")),
                offsets(m.path("end_offsets")))));
        int standbys = input.path("configs").path("num.standby.replicas").asInt(0);
        GroupAssignment assignment = new StickydStreamsGroupAssignor()
                .assign(new StreamsGroups.Group(members, standbys), new StreamsGroups.Topology(partitions, stateful));
        ObjectNode out = JSON.createObjectNode();
        ObjectNode byMember = out.putObject("members");
        assignment.members().forEach((id, member) -> {
            ObjectNode node = byMember.putObject(id);
            names(member.activeTasks()).forEach(node.putArray("active")::add);
            names(member.standbyTasks()).forEach(node.putArray("standby")::add);
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

    private static Map<String, Map<Integer, Long>> offsets(JsonNode node) {
        Map<String, Map<Integer, Long>> out = new HashMap<>();
        node.fields().forEachRemaining(e -> {
            String name = e.getKey();
            int cut = name.lastIndexOf('_');
            out.computeIfAbsent(name.substring(0, cut), k -> new HashMap<>())
                    .put(Integer.parseInt(name.substring(cut + 1)), e.getValue().asLong());
        });
        return out;
    }

    private static TreeSet<String> names(Map<String, Set<Integer>> tasks) {
        TreeSet<String> out = new TreeSet<>();
        tasks.forEach((s, ps) -> ps.forEach(p -> out.add(s + "_" + p)));
        return out;
    }
}
