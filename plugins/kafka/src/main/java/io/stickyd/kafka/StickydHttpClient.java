package io.stickyd.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.Proxy;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

/**
 * Posts a JSON body to a stickyd service and reads the JSON answer, with one strict deadline for the
 * whole exchange (connect, send, wait, read). Only the JDK's HTTP client and Jackson, which every
 * Kafka broker and Streams application already has on its class path.
 *
 * <p>The exchange is the JDK's {@link HttpURLConnection} in its buffered mode (the body is sent with its
 * headers in one write; its streaming mode waits a millisecond on every kept-alive connection first),
 * through no proxy the JVM may be configured with. It keeps connections alive between calls, and sends the
 * POST again, once, on a new connection when a kept-alive one turns out to have been closed by the service.
 * It runs on a thread of this class's own, which the caller waits for until the attempt's share has passed
 * (then the connection is closed and the attempt abandoned): a service that stops answering, or whose answer
 * trickles in, costs no more than the deadline. One hand-off a call, where {@code java.net.http.HttpClient}
 * makes several: through it the plug-in's call took 0.6 ms more for the smallest group and 1-2 ms more at
 * 10,000 partitions (docs/kafka-plugins.md).
 *
 * <p>Settings: {@code stickyd.url} and {@code stickyd.timeout.ms} from the given configuration (a
 * broker's properties or a Streams application's config), else the environment variables
 * {@code STICKYD_URL} and {@code STICKYD_TIMEOUT_MS}, else {@link #DEFAULT_URL} and
 * {@link #DEFAULT_TIMEOUT_MS}. {@code stickyd.token} (else {@code STICKYD_TOKEN}), when set, is sent
 * as {@code Authorization: Bearer ...}: a service that requires tokens answers 401 without it.
 *
 * <p>Replicas: {@code stickyd.url} may list several services, comma-separated, as Kafka's
 * {@code bootstrap.servers} lists brokers. One request tries them in turn within the one deadline,
 * starting with the replica that answered last (then the others in the listed order): each attempt
 * gets an equal share of the time left ({@code left / replicas not yet tried}), so a refused or reset
 * connection moves on at once and a slow replica leaves the next one as much time as it had itself.
 * Any failure of an attempt (refused, reset, no answer in its share, a status other than 200, a body
 * that is not JSON) moves on to the next replica; the request fails when every replica has failed
 * or the deadline has passed.
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

    /** The exchanges' threads: daemons, one kept waiting between calls, more while calls overlap. */
    private static final ExecutorService EXCHANGES = new ThreadPoolExecutor(1, Integer.MAX_VALUE, 60, TimeUnit.SECONDS,
        new SynchronousQueue<>(), task -> {
            Thread thread = new Thread(task, "stickyd-http");
            thread.setDaemon(true);
            return thread;
        });

    /** What a service answered: its status and its body. */
    private record Answer(int status, byte[] body) { }

    /** A failed request, with the cause it counts under in {@link AssignorMetrics}. */
    public static final class Failure extends IOException {
        private final AssignorMetrics.Cause cause;

        Failure(AssignorMetrics.Cause cause, String message, Throwable detail) {
            super(message, detail);
            this.cause = cause;
        }

        public AssignorMetrics.Cause cause() {
            return cause;
        }
    }

    private final List<URI> bases;
    private final int timeoutMs;
    private final String token;
    private final AtomicInteger preferred = new AtomicInteger();

    public StickydHttpClient(String url, int timeoutMs) {
        this(url, timeoutMs, null);
    }

    /** {@code url}: one or several (comma-separated) base URLs; {@code token} may be null or blank. */
    public StickydHttpClient(String url, int timeoutMs, String token) {
        if (timeoutMs <= 0) {
            throw new IllegalArgumentException(TIMEOUT_MS_CONFIG + " must be positive, got " + timeoutMs);
        }
        List<URI> parsed = new ArrayList<>();
        for (String one : url.split(",")) {
            String trimmed = one.trim();
            if (!trimmed.isEmpty()) {
                parsed.add(URI.create(trimmed.endsWith("/") ? trimmed : trimmed + "/"));
            }
        }
        if (parsed.isEmpty()) {
            throw new IllegalArgumentException(URL_CONFIG + " names no URL: '" + url + "'");
        }
        this.bases = List.copyOf(parsed);
        this.timeoutMs = timeoutMs;
        this.token = token == null || token.isBlank() ? null : token.trim();
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

    /** The first replica's base URL. */
    public URI baseUrl() {
        return bases.get(0);
    }

    /** Every replica's base URL, in the configured order. */
    public List<URI> baseUrls() {
        return bases;
    }

    /** The replicas, as written in logs: "http://a:8000/,http://b:8000/". */
    public String describe() {
        return bases.stream().map(URI::toString).collect(Collectors.joining(","));
    }

    public int timeoutMs() {
        return timeoutMs;
    }

    /** The first attempt's share of the deadline: the whole deadline with one replica. */
    public int firstShareMs() {
        return Math.max(1, timeoutMs / bases.size());
    }

    /**
     * Sends one health check to each replica in the background and forgets it, so that the first real
     * request does not pay for loading the HTTP client's classes and opening the connection.
     */
    public void warmUp() {
        for (URI base : bases) {
            CompletableFuture.runAsync(() -> {
                try {
                    HttpURLConnection health = open(base.resolve("v1/health"), timeoutMs);
                    try (InputStream in = health.getInputStream()) {
                        in.readAllBytes();
                    }
                } catch (IOException | RuntimeException e) {
                    // only a warm-up: the first request reports what is wrong
                }
            });
        }
    }

    /** {@link #post(String, JsonNode, Runnable)} without a failover callback. */
    public JsonNode post(String path, JsonNode body) throws IOException {
        return post(path, body, () -> { });
    }

    /**
     * POSTs {@code body} to {@code path} (relative, e.g. "v1/assign/consumer") as JSON and returns the
     * parsed answer, as {@link #post(String, String, byte[], int, Runnable)} does; an answer that is
     * not JSON is an invalid answer.
     */
    public JsonNode post(String path, JsonNode body, Runnable onFailover) throws IOException {
        byte[] bytes = JSON.writeValueAsBytes(body);
        byte[] answer = post(path, "application/json", bytes, bytes.length, onFailover);
        try {
            return JSON.readTree(answer);
        } catch (IOException e) {
            throw new Failure(AssignorMetrics.Cause.INVALID_ANSWER, "stickyd answered no JSON: " + e, e);
        }
    }

    /**
     * POSTs the first {@code length} bytes of {@code body}, of media type {@code contentType}, to
     * {@code path} and returns the answer's bytes, trying the replicas in turn (class comment);
     * {@code onFailover} runs each time a replica failed and the next one is asked. Throws
     * {@link Failure} when none answered in time: its cause is an error status if any replica gave
     * one, else a timeout if any replica was too slow, else unreachable.
     */
    public byte[] post(String path, String contentType, byte[] body, int length, Runnable onFailover) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        int first = preferred.get();
        Failure worst = null;
        for (int tried = 0; tried < bases.size(); tried++) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                break;
            }
            if (tried > 0) {
                onFailover.run();
            }
            int index = (first + tried) % bases.size();
            try {
                byte[] answer = attempt(bases.get(index), path, contentType, body, length, left / (bases.size() - tried));
                preferred.set(index);
                return answer;
            } catch (Failure e) {
                worst = worst == null || e.cause().ordinal() > worst.cause().ordinal() ? e : worst;
            }
        }
        if (worst == null) {
            throw new Failure(AssignorMetrics.Cause.TIMEOUT, "stickyd did not answer within " + timeoutMs + " ms", null);
        }
        throw worst;
    }

    /** A connection to {@code uri} (kept alive by the JDK between calls) that neither goes through a proxy nor follows redirects. */
    private static HttpURLConnection open(URI uri, int timeoutMs) throws IOException {
        HttpURLConnection connection = (HttpURLConnection) uri.toURL().openConnection(Proxy.NO_PROXY);
        connection.setConnectTimeout(timeoutMs);
        connection.setReadTimeout(timeoutMs);
        connection.setInstanceFollowRedirects(false); // a redirect is an answer that is not stickyd's
        connection.setUseCaches(false);
        return connection;
    }

    private byte[] attempt(URI base, String path, String contentType, byte[] body, int length, long shareNanos) throws Failure {
        HttpURLConnection connection;
        try {
            connection = open(base.resolve(path), (int) Math.max(1, Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(shareNanos))));
            connection.setRequestMethod("POST");
        } catch (IOException | IllegalArgumentException e) {
            throw new Failure(AssignorMetrics.Cause.UNREACHABLE, "stickyd request to " + base + " failed: " + e, e);
        }
        connection.setDoOutput(true);
        connection.setRequestProperty("Content-Type", contentType);
        if (token != null) {
            connection.setRequestProperty("Authorization", "Bearer " + token);
        }
        CompletableFuture<Answer> exchange = CompletableFuture.supplyAsync(() -> exchange(connection, body, length), EXCHANGES);
        Answer answer;
        try {
            answer = exchange.get(Math.max(1, shareNanos), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            abandon(connection);
            throw new Failure(AssignorMetrics.Cause.TIMEOUT,
                "stickyd at " + base + " did not answer within " + TimeUnit.NANOSECONDS.toMillis(shareNanos) + " ms", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() instanceof CompletionException wrapped ? wrapped.getCause() : e.getCause();
            boolean slow = cause instanceof SocketTimeoutException;
            throw new Failure(slow ? AssignorMetrics.Cause.TIMEOUT : AssignorMetrics.Cause.UNREACHABLE,
                "stickyd request to " + base + " failed: " + cause, cause);
        } catch (InterruptedException e) {
            abandon(connection);
            Thread.currentThread().interrupt();
            throw new Failure(AssignorMetrics.Cause.UNREACHABLE, "interrupted while waiting for stickyd", e);
        }
        if (answer.status() != 200) {
            String text = new String(answer.body(), StandardCharsets.UTF_8);
            throw new Failure(AssignorMetrics.Cause.ERROR_ANSWER, "stickyd at " + base + " answered HTTP "
                + answer.status() + ": " + text.substring(0, Math.min(300, text.length())), null);
        }
        return answer.body();
    }

    /**
     * Closes the connection of an exchange the caller no longer waits for, on another thread: closing it
     * waits for the exchange's thread to leave the connection's lock (until the end of its current read).
     */
    private static void abandon(HttpURLConnection connection) {
        EXCHANGES.execute(connection::disconnect);
    }

    /** Sends the body and reads the answer, on one of {@link #EXCHANGES}' threads. */
    private static Answer exchange(HttpURLConnection connection, byte[] body, int length) {
        try {
            try (OutputStream out = connection.getOutputStream()) {
                out.write(body, 0, length);
            }
            int status = connection.getResponseCode();
            try (InputStream in = status < 400 ? connection.getInputStream() : connection.getErrorStream()) {
                return new Answer(status, in == null ? new byte[0] : in.readAllBytes());
            }
        } catch (IOException e) {
            connection.disconnect();
            throw new CompletionException(e);
        }
    }
}
