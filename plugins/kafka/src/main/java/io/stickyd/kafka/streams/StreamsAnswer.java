package io.stickyd.kafka.streams;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Collections;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What the clients run now according to the service's Streams response: the contract's
 * {@code assignment}, with each warm-up replica run as a standby task (KIP-441), and whether a
 * follow-up (probing) rebalance is due.
 *
 * @param active per client id, the active task names
 * @param standby per client id, the standby and warm-up task names
 * @param warmups per client id, the warm-up task names alone (also in {@code standby})
 * @param followupRebalance the contract's {@code followup_rebalance}
 */
public record StreamsAnswer(
        Map<String, SortedSet<String>> active,
        Map<String, SortedSet<String>> standby,
        Map<String, SortedSet<String>> warmups,
        boolean followupRebalance) {

    /** Reads a response; a client the request named but the response lacks is an error. */
    public static StreamsAnswer fromJson(JsonNode response, Set<String> clientIds) {
        JsonNode assignment = response.path("assignment");
        if (!assignment.isObject()) {
            throw new IllegalArgumentException("stickyd response has no 'assignment' object");
        }
        Map<String, SortedSet<String>> active = new TreeMap<>();
        Map<String, SortedSet<String>> standby = new TreeMap<>();
        Map<String, SortedSet<String>> warmups = new TreeMap<>();
        for (String id : clientIds) {
            JsonNode client = assignment.get(id);
            if (client == null || !client.isObject()) {
                throw new IllegalArgumentException("stickyd response has no assignment for client " + id);
            }
            active.put(id, names(client.path("active")));
            SortedSet<String> warm = names(client.path("warmup"));
            SortedSet<String> replicas = names(client.path("standby"));
            replicas.addAll(warm);
            replicas.removeAll(active.get(id));
            standby.put(id, replicas);
            warmups.put(id, warm);
        }
        return new StreamsAnswer(
                Collections.unmodifiableMap(active),
                Collections.unmodifiableMap(standby),
                Collections.unmodifiableMap(warmups),
                response.path("followup_rebalance").asBoolean(false));
    }

    private static SortedSet<String> names(JsonNode list) {
        SortedSet<String> out = new TreeSet<>();
        if (list.isArray()) {
            list.forEach(node -> out.add(node.asText()));
        }
        return out;
    }

    /** Splits {@code <subtopology>_<partition>} at the last underscore. */
    public static String subtopologyOf(String task) {
        return task.substring(0, task.lastIndexOf('_'));
    }

    public static int partitionOf(String task) {
        return Integer.parseInt(task.substring(task.lastIndexOf('_') + 1));
    }
}
