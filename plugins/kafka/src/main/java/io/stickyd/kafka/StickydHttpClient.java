package io.stickyd.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Posts a JSON body to a stickyd service and reads the JSON answer, with one strict deadline for the
 * whole exchange (connect, send, wait, read). Only the JDK's HTTP client and Jackson, which every
 * Kafka broker and Streams application already has on its class path.
 *
 * <p>Settings: {@code stickyd.url} and {@code stickyd.timeout.ms} from the given configuration (a
 * broker's properties or a Streams application's config), else the environment variables
 * {@code STICKYD_URL} and {@code STICKYD_TIMEOUT_MS}, else {@link #DEFAULT_URL} and
 * {@link #DEFAULT_TIMEOUT_MS}. {@code stickyd.token} (else {@code STICKYD_TOKEN}), when set, is sent
 * as {@code Authorization: Bearer ...}: a service that requires tokens answers 401 without it.
 */
public final class StickydHttpClient {
    public static final String URL_CONFIG = "stickyd.url";
    public static final String TIMEOUT_MS_CONFIG = "stickyd.timeout.ms";
    public static final String URL_ENV = "STICKYD_URL";
    public static final String TIMEOUT_MS_ENV = "STICKYD_TIMEOUT_MS";
    public static final String TOKEN_CONFIG = "stickyd.token";
    public static final String TOKEN_ENV = "STICKYD_TOKEN";
    public static final String DEFAULT_URL = "http://127.0.0.1:8000";
    public static final int DEFAULT_TIMEOUT_MS = 1000;

    static final ObjectMapper JSON = new ObjectMapper();

    private final URI base;
    private final int timeoutMs;
    private final String token;
    private final HttpClient http;

    public StickydHttpClient(String url, int timeoutMs) {
        this(url, timeoutMs, null);
    }

    /** {@code token} may be null or blank: then no Authorization header is sent. */
    public StickydHttpClient(String url, int timeoutMs, String token) {
        if (timeoutMs <= 0) {
            throw new IllegalArgumentException(TIMEOUT_MS_CONFIG + " must be positive, got " + timeoutMs);
        }
        this.base = URI.create(url.endsWith("/") ? url : url + "/");
        this.timeoutMs = timeoutMs;
        this.token = token == null || token.isBlank() ? null : token.trim();
        this.http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofMillis(timeoutMs))
            .build();
    }

    /** The client the configuration describes (see the class comment for the order of sources). */
    public static StickydHttpClient fromConfig(Map<String, ?> configs, Map<String, String> env) {
        String url = setting(configs, URL_CONFIG, env, URL_ENV, DEFAULT_URL);
        String timeout = setting(configs, TIMEOUT_MS_CONFIG, env, TIMEOUT_MS_ENV, String.valueOf(DEFAULT_TIMEOUT_MS));
        String token = setting(configs, TOKEN_CONFIG, env, TOKEN_ENV, null);
        try {
            return new StickydHttpClient(url, Integer.parseInt(timeout.trim()), token);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(TIMEOUT_MS_CONFIG + " is not an integer: " + timeout, e);
        }
    }

    private static String setting(Map<String, ?> configs, String key, Map<String, String> env, String envKey, String fallback) {
        Object configured = configs.get(key);
        if (configured != null && !configured.toString().isBlank()) {
            return configured.toString();
        }
        String fromEnv = env.get(envKey);
        return fromEnv != null && !fromEnv.isBlank() ? fromEnv : fallback;
    }

    public URI baseUrl() {
        return base;
    }

    public int timeoutMs() {
        return timeoutMs;
    }

    /**
     * Sends one health check in the background and forgets it, so that the first real request does
     * not pay for loading the HTTP client's classes and opening the connection.
     */
    public void warmUp() {
        HttpRequest health = HttpRequest.newBuilder(base.resolve("v1/health")).timeout(Duration.ofMillis(timeoutMs)).GET().build();
        http.sendAsync(health, HttpResponse.BodyHandlers.discarding());
    }

    /**
     * POSTs {@code body} to {@code path} (relative, e.g. "v1/assign/consumer") and returns the parsed
     * answer. Throws {@link IOException} on any failure: no answer within the deadline, a status other
     * than 200, or a body that is not JSON.
     */
    public JsonNode post(String path, JsonNode body) throws IOException {
        return JSON.readTree(post(path, "application/json", JSON.writeValueAsBytes(body)));
    }

    /**
     * POSTs {@code body} of media type {@code contentType} and returns the answer's bytes; throws
     * {@link IOException} as {@link #post(String, JsonNode)} does.
     */
    public byte[] post(String path, String contentType, byte[] body) throws IOException {
        return post(path, contentType, body, body.length);
    }

    /** As {@link #post(String, String, byte[])}, sending the first {@code length} bytes of {@code body}. */
    public byte[] post(String path, String contentType, byte[] body, int length) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        HttpRequest.Builder builder = HttpRequest.newBuilder(base.resolve(path))
            .timeout(Duration.ofMillis(timeoutMs))
            .header("Content-Type", contentType)
            .POST(HttpRequest.BodyPublishers.ofByteArray(body, 0, length));
        if (token != null) {
            builder.header("Authorization", "Bearer " + token);
        }
        HttpRequest request = builder.build();
        CompletableFuture<HttpResponse<byte[]>> exchange = http.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray());
        HttpResponse<byte[]> response;
        try {
            response = exchange.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            exchange.cancel(true);
            throw new IOException("stickyd did not answer within " + timeoutMs + " ms", e);
        } catch (ExecutionException e) {
            throw new IOException("stickyd request failed: " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            exchange.cancel(true);
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for stickyd", e);
        }
        if (response.statusCode() != 200) {
            String text = new String(response.body(), java.nio.charset.StandardCharsets.UTF_8);
            throw new IOException("stickyd answered HTTP " + response.statusCode() + ": "
                + text.substring(0, Math.min(300, text.length())));
        }
        return response.body();
    }
}
