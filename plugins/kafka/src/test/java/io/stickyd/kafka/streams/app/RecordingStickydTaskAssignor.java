package io.stickyd.kafka.streams.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stickyd.kafka.streams.StickydTaskAssignor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import org.apache.kafka.streams.processor.assignment.ApplicationState;

/**
 * {@link StickydTaskAssignor} that appends every answer it uses to {@code stickyd.record.file}
 * (one JSON line: time, each process id's {@code instance} client tag, the request and the
 * response), so a test can compare what the instances run with what stickyd said.
 */
public class RecordingStickydTaskAssignor extends StickydTaskAssignor {
    public static final String RECORD_CONFIG = "stickyd.record.file";
    private static final ObjectMapper JSON = new ObjectMapper();
    private Path recordFile;

    @Override
    public void configure(Map<String, ?> configs) {
        super.configure(configs);
        Object path = configs.get(RECORD_CONFIG);
        recordFile = path == null ? null : Path.of(path.toString());
    }

    @Override
    protected void onAnswer(ApplicationState state, JsonNode request, JsonNode response) {
        if (recordFile == null) {
            return;
        }
        ObjectNode line = JSON.createObjectNode();
        line.put("time_ms", System.currentTimeMillis());
        ObjectNode names = line.putObject("instances");
        state.kafkaStreamsStates(false).forEach((pid, client) ->
                names.put(pid.id().toString(), client.clientTags().getOrDefault("instance", "?")));
        line.set("request", request);
        line.set("response", response);
        try {
            Files.write(recordFile, (JSON.writeValueAsString(line) + "\n").getBytes(StandardCharsets.UTF_8),
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
