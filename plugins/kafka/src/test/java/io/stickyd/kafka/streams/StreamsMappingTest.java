package io.stickyd.kafka.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskInfo;
import org.apache.kafka.streams.processor.internals.assignment.DefaultKafkaStreamsState;
import org.apache.kafka.streams.processor.internals.assignment.DefaultTaskInfo;
import org.junit.jupiter.api.Test;

/** The contract mapping of the Streams assignors: request building and response reading. */
class StreamsMappingTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void requestCarriesSubtopologiesClientsConfigAndOnlyTheLagsThatDecideCaughtUp() {
        StreamsRequest request = new StreamsRequest(1, 2, 100);
        for (int p = 0; p < 3; p++) {
            request.addTask("0", p, false);
            request.addTask("1", p, true);
        }
        request.addClient("p1", 2, "rack-a", new TreeSet<>(Set.of("1_0")), new TreeSet<>(Set.of("1_1")),
                Map.of("1_0", 0L, "1_1", 5000L, "1_2", 50L));
        request.addClient("p2", 1, null, new TreeSet<>(), new TreeSet<>(),
                Map.of("1_0", 101L, "1_1", -1L, "1_2", 100L));
        ObjectNode json = request.toJson(700);

        assertEquals("[{\"id\":\"0\",\"partitions\":3,\"stateful\":false},{\"id\":\"1\",\"partitions\":3,\"stateful\":true}]",
                json.get("subtopologies").toString());
        JsonNode p1 = json.get("clients").get(0);
        assertEquals(2, p1.get("capacity").asInt());
        assertEquals("rack-a", p1.get("rack").asText());
        // held tasks keep their lag whatever it is; others only when caught up
        assertEquals("{\"1_0\":0,\"1_1\":5000,\"1_2\":50}", p1.get("lags").toString());
        JsonNode p2 = json.get("clients").get(1);
        assertFalse(p2.has("rack"));
        assertEquals("{\"1_2\":100}", p2.get("lags").toString());
        assertEquals("{\"num_standby_replicas\":1,\"max_warmup_replicas\":2,\"acceptable_recovery_lag\":100}",
                json.get("config").toString());
        assertEquals(700, json.get("options").get("time_limit_ms").asInt());
    }

    @Test
    void warmUpsRunAsStandbyTasksAndNothingRunsTwiceOnOneClient() throws Exception {
        JsonNode response = JSON.readTree("{\"assignment\":{"
                + "\"p1\":{\"active\":[\"1_0\",\"0_0\"],\"standby\":[\"1_1\"],\"warmup\":[]},"
                + "\"p2\":{\"active\":[\"1_1\"],\"standby\":[\"1_0\"],\"warmup\":[\"1_2\",\"1_1\"]}},"
                + "\"followup_rebalance\":true}");
        StreamsAnswer answer = StreamsAnswer.fromJson(response, Set.of("p1", "p2"));
        assertEquals(Set.of("0_0", "1_0"), answer.active().get("p1"));
        assertEquals(Set.of("1_1"), answer.standby().get("p1"));
        assertEquals(Set.of("1_0", "1_2"), answer.standby().get("p2"));
        assertEquals(Set.of("1_1", "1_2"), answer.warmups().get("p2"));
        assertTrue(answer.followupRebalance());
    }

    @Test
    void anAnswerMissingAClientIsRefused() throws Exception {
        JsonNode response = JSON.readTree("{\"assignment\":{\"p1\":{\"active\":[]}}}");
        assertThrows(IllegalArgumentException.class, () -> StreamsAnswer.fromJson(response, Set.of("p1", "p2")));
        assertThrows(IllegalArgumentException.class, () -> StreamsAnswer.fromJson(JSON.readTree("{}"), Set.of("p1")));
    }

    @Test
    void theKip924RequestCostsEachStatefulTaskItsLargestReportedLag() {
        // p1 runs 1_0 (lag LATEST), p2 stands by 2 behind, p3 has no state: it lags by the whole
        // changelog (7,000); 1_1 is known to one client only (lag 40); stateless 0_0 has no cost
        ProcessId p1 = new ProcessId(new UUID(0, 1));
        ProcessId p2 = new ProcessId(new UUID(0, 2));
        ProcessId p3 = new ProcessId(new UUID(0, 3));
        TaskId t00 = new TaskId(0, 0);
        TaskId t10 = new TaskId(1, 0);
        TaskId t11 = new TaskId(1, 1);
        Map<ProcessId, KafkaStreamsState> clients = new TreeMap<>(Map.of(
                p1, client(p1, Set.of(t00, t10), Set.of(), Map.of(t10, -2L)),
                p2, client(p2, Set.of(t11), Set.of(t10), Map.of(t10, 2L, t11, 40L)),
                p3, client(p3, Set.of(), Set.of(), Map.of(t10, 7_000L))));
        Map<TaskId, TaskInfo> tasks = new TreeMap<>(Map.of(
                t00, new DefaultTaskInfo(t00, false, Set.of(), Set.of()),
                t10, new DefaultTaskInfo(t10, true, Set.of("store"), Set.of()),
                t11, new DefaultTaskInfo(t11, true, Set.of("store"), Set.of())));
        AssignmentConfigs configs = new AssignmentConfigs(100L, 2, 1, 600_000L, List.of(), 0, 0,
                StreamsConfig.RACK_AWARE_ASSIGNMENT_STRATEGY_NONE);

        ObjectNode json = StickydTaskAssignor.request(tasks, clients, configs).toJson(700);
        assertEquals("restore_cost", json.get("options").get("stickiness").asText());
        assertEquals("{\"1_0\":7000,\"1_1\":40}", json.get("task_costs").toString());

        ObjectNode counted = StickydTaskAssignor.request(tasks, clients, configs).stickiness("tasks").toJson(700);
        assertFalse(counted.has("task_costs"));
        assertFalse(counted.get("options").has("stickiness"));
    }

    private static KafkaStreamsState client(ProcessId id, Set<TaskId> active, Set<TaskId> standby, Map<TaskId, Long> lags) {
        return new DefaultKafkaStreamsState(id, 1, Map.of(), new TreeSet<>(active), new TreeSet<>(standby),
                new TreeMap<>(), Optional.empty(), Optional.of(lags), Optional.empty());
    }

    @Test
    void aLagBelowTheTasksRestoreCostIsSentAsPartOfTheStateLeftOnDisk() {
        StreamsRequest request = new StreamsRequest(1, 0, 0);
        for (int p = 0; p < 3; p++) {
            request.addTask("1", p, true);
        }
        request.addTaskCost("1_0", 1000L);
        request.addTaskCost("1_1", 1000L);
        // p2 once ran 1_0 (its state directory is still there) and never held 1_1
        request.addClient("p2", 1, null, new TreeSet<>(), new TreeSet<>(), Map.of("1_0", 40L, "1_1", 1000L));
        assertEquals("{\"1_0\":40}", request.toJson(700).get("clients").get(0).get("lags").toString());
    }

    @Test
    void taskNamesSplitAtTheLastUnderscore() {
        assertEquals("sub_1", StreamsAnswer.subtopologyOf("sub_1_12"));
        assertEquals(12, StreamsAnswer.partitionOf("sub_1_12"));
    }
}
