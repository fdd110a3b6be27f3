package io.stickyd.kafka.streams.app;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stickyd.kafka.streams.StickydTaskAssignor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StandbyUpdateListener;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.TaskId;

/**
 * The Kafka Streams application the tests and the churn benchmark run as separate processes.
 *
 * <p>Topology: subtopology 0 reads {@code input} (any key, the value is a word), re-keys each
 * record by its word and writes the repartition topic; subtopology 1 counts per word in a
 * persistent (RocksDB) store with a changelog and writes every new count to {@code output}. So
 * the tasks {@code 0_p} are stateless and {@code 1_p} stateful.
 *
 * <p>Arguments are {@code key=value}: {@code bootstrap}, {@code name} (this instance), {@code
 * state_dir}, {@code status} (a JSON file rewritten every 200 ms: Streams state, the active and
 * standby tasks from the local threads' metadata, records restored into active tasks' stores and
 * records loaded by standby (and warm-up) tasks, fallbacks), {@code assignor}
 * ({@code stickyd} | {@code sticky} (Kafka's KIP-924 StickyTaskAssignor) | {@code ha} (Kafka's
 * default HighAvailabilityTaskAssignor) | {@code broker} (none in the application: with
 * {@code group.protocol=streams} the broker's streams group assignor assigns, KIP-1071)); every
 * other argument is a Streams configuration
 * (e.g. {@code stickyd.url=...}, {@code num.standby.replicas=1}). Stops cleanly on SIGTERM.
 */
public final class CountApp {
    private static final ObjectMapper JSON = new ObjectMapper();

    private CountApp() {
    }

    public static Topology topology(String input, String output) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((key, word) -> word)
                .groupByKey()
                .count(Materialized.as("word-counts"))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> arguments = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("arguments are key=value, got " + arg);
            }
            arguments.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        String name = arguments.remove("name");
        Path status = Path.of(arguments.remove("status"));
        String assignor = arguments.remove("assignor");
        String input = arguments.getOrDefault("input", "input");
        String output = arguments.getOrDefault("output", "output");
        arguments.remove("input");
        arguments.remove("output");

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "stickyd-count");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, arguments.remove("bootstrap"));
        props.put(StreamsConfig.STATE_DIR_CONFIG, arguments.remove("state_dir"));
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        props.put(StreamsConfig.CLIENT_TAG_PREFIX + "instance", name);
        props.put(StreamsConfig.CLIENT_ID_CONFIG, "count-" + name);
        switch (assignor) {
            case "stickyd" -> props.put(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG,
                    RecordingStickydTaskAssignor.class.getName());
            case "sticky" -> props.put(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG,
                    org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor.class.getName());
            case "ha", "broker" -> { }
            default -> throw new IllegalArgumentException("assignor is stickyd, sticky, ha or broker, got " + assignor);
        }
        props.putAll(arguments);

        AtomicLong restored = new AtomicLong();
        KafkaStreams streams = new KafkaStreams(topology(input, output), props);
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition partition, String store, long start, long end) {
            }

            @Override
            public void onBatchRestored(TopicPartition partition, String store, long batchEnd, long count) {
                restored.addAndGet(count);
            }

            @Override
            public void onRestoreEnd(TopicPartition partition, String store, long total) {
            }
        });
        AtomicLong standbyLoaded = new AtomicLong();
        streams.setStandbyUpdateListener(new StandbyUpdateListener() {
            @Override
            public void onUpdateStart(TopicPartition partition, String store, long start) {
            }

            @Override
            public void onBatchLoaded(TopicPartition partition, String store, TaskId task, long batchEnd,
                    long batchSize, long currentEnd) {
                standbyLoaded.addAndGet(batchSize);
            }

            @Override
            public void onUpdateSuspended(TopicPartition partition, String store, long storeOffset, long currentEnd,
                    SuspendReason reason) {
            }
        });
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            stopped.countDown();
        }));
        streams.start();
        while (stopped.getCount() > 0) {
            writeStatus(status, name, streams, restored.get(), standbyLoaded.get());
            Thread.sleep(200);
        }
    }

    private static void writeStatus(Path status, String name, KafkaStreams streams, long restored, long standbyLoaded) {
        TreeSet<String> active = new TreeSet<>();
        TreeSet<String> standby = new TreeSet<>();
        try {
            for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
                thread.activeTasks().forEach(task -> active.add(task.taskId().toString()));
                thread.standbyTasks().forEach(task -> standby.add(task.taskId().toString()));
            }
        } catch (RuntimeException e) {
            return; // not started or shutting down
        }
        ObjectNode node = JSON.createObjectNode();
        node.put("name", name);
        node.put("state", streams.state().name());
        node.put("time_ms", System.currentTimeMillis());
        active.forEach(node.putArray("active")::add);
        standby.forEach(node.putArray("standby")::add);
        node.put("restored_records", restored);
        node.put("standby_records", standbyLoaded);
        node.put("fallbacks", StickydTaskAssignor.fallbacks());
        try {
            Path tmp = status.resolveSibling(status.getFileName() + ".tmp");
            Files.write(tmp, JSON.writeValueAsBytes(node));
            Files.move(tmp, status, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            System.err.println("cannot write status " + status + ": " + e);
        }
    }
}
