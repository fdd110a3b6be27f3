package io.stickyd.kafka.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where stickyd answers and how long to wait: {@code stickyd.url} / {@code stickyd.timeout.ms}
 * from the plug-in's configuration, else the {@code STICKYD_URL} / {@code STICKYD_TIMEOUT_MS}
 * environment variables, else {@code http://127.0.0.1:8000} and 2000 ms. Posts JSON with the
 * JDK's HTTP client and Jackson (both on every broker's and Streams application's classpath).
 */
public final class StickydEndpoint {
    public static final String URL_CONFIG = "stickyd.url";
    public static final String TIMEOUT_CONFIG = "stickyd.timeout.ms";
    public static final String DEFAULT_URL = "http://127.0.0.1:8000";
    public static final long DEFAULT_TIMEOUT_MS = 2000;

    private static final ObjectMapper MAPPER = new ObjectMapper();
    /** One client per timeout (Kafka creates a new assignor per rebalance; clients own threads). */
    private static final Map<Long, HttpClient> CLIENTS = new ConcurrentHashMap<>();

    private final String url;
    private final long timeoutMs;

    public StickydEndpoint(String url, long timeoutMs) {
        if (timeoutMs <= 0) {
            throw new IllegalArgumentException(TIMEOUT_CONFIG + " must be positive, got " + timeoutMs);
        }
        this.url = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
        this.timeoutMs = timeoutMs;
    }

    /** From a plug-in configuration map, falling back to the given environment. */
    public static StickydEndpoint from(Map<String, ?> configs, Map<String, String> env) {
        Object url = configs.get(URL_CONFIG);
        String resolvedUrl = url != null ? url.toString() : env.getOrDefault("STICKYD_URL", DEFAULT_URL);
        Object timeout = configs.get(TIMEOUT_CONFIG);
        String rawTimeout = timeout != null ? timeout.toString() : env.get("STICKYD_TIMEOUT_MS");
        long resolvedTimeout;
        try {
            resolvedTimeout = rawTimeout == null ? DEFAULT_TIMEOUT_MS : Long.parseLong(rawTimeout.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(TIMEOUT_CONFIG + " is not a number of milliseconds: " + rawTimeout, e);
        }
        return new StickydEndpoint(resolvedUrl, resolvedTimeout);
    }

    public String url() {
        return url;
    }

    public long timeoutMs() {
        return timeoutMs;
    }

    /** The solver's time limit: most of the timeout, leaving room for the network and parsing. */
    public int solveTimeLimitMs() {
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeoutMs * 7 / 10));
    }

    /**
     * POSTs {@code body} to {@code path} and returns the parsed answer; any failure (connection,
     * timeout, a non-2xx status, a body that is not JSON) is an {@link IOException} naming it.
     */
    public JsonNode post(String path, JsonNode body) throws IOException {
        HttpRequest request = HttpRequest.newBuilder(URI.create(url + path))
                .timeout(Duration.ofMillis(timeoutMs))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(MAPPER.writeValueAsBytes(body)))
                .build();
        HttpResponse<byte[]> response;
        try {
            HttpClient http = CLIENTS.computeIfAbsent(timeoutMs, ms -> HttpClient.newBuilder()
                    .version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofMillis(ms))
                    .build());
            response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for stickyd at " + url, e);
        } catch (IllegalArgumentException e) {
            throw new IOException("bad stickyd url " + url + ": " + e.getMessage(), e);
        }
        if (response.statusCode() / 100 != 2) {
            String detail = new String(response.body(), java.nio.charset.StandardCharsets.UTF_8);
            throw new IOException("stickyd answered " + response.statusCode() + " on " + path + ": "
                    + detail.substring(0, Math.min(300, detail.length())));
        }
        return MAPPER.readTree(response.body());
    }
}
