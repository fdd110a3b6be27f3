package io.stickyd.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A service that requires tokens gets one from {@code stickyd.token} or STICKYD_TOKEN, on loopback HTTP; a
 * kept-alive connection the service has closed is not a failure; an answer that trickles in is cut off at
 * the deadline.
 */
class StickydHttpClientTest {
    private HttpServer server;
    private final AtomicReference<String> authorization = new AtomicReference<>();

    @BeforeEach
    void startServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/v1/assign/consumer", exchange -> {
            authorization.set(exchange.getRequestHeaders().getFirst("Authorization"));
            boolean allowed = "Bearer stk_secret".equals(authorization.get());
            byte[] body = (allowed ? "{\"ok\": true}" : "{\"detail\": \"authorization\"}").getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(allowed ? 200 : 401, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
    }

    @AfterEach
    void stopServer() {
        server.stop(0);
    }

    private String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @Test
    void theConfiguredTokenIsSentAsABearerToken() throws IOException {
        StickydHttpClient client = StickydHttpClient.fromConfig(
            Map.of("stickyd.url", url(), "stickyd.token", "stk_secret"), Map.of("STICKYD_TOKEN", "stk_other"));
        assertTrue(client.post("v1/assign/consumer", StickydHttpClient.JSON.createObjectNode()).get("ok").asBoolean());
        assertEquals("Bearer stk_secret", authorization.get());
    }

    @Test
    void theEnvironmentsTokenIsUsedWhenTheConfigurationHasNone() throws IOException {
        StickydHttpClient client = StickydHttpClient.fromConfig(Map.of("stickyd.url", url()), Map.of("STICKYD_TOKEN", "stk_secret"));
        client.post("v1/assign/consumer", StickydHttpClient.JSON.createObjectNode());
        assertEquals("Bearer stk_secret", authorization.get());
    }

    @Test
    void withoutATokenNoHeaderIsSentAndA401IsAFailure() {
        StickydHttpClient client = StickydHttpClient.fromConfig(Map.of("stickyd.url", url()), Map.of());
        IOException refused = assertThrows(IOException.class,
            () -> client.post("v1/assign/consumer", StickydHttpClient.JSON.createObjectNode()));
        assertTrue(refused.getMessage().contains("HTTP 401"), refused.getMessage());
        assertNull(authorization.get());
    }

    /**
     * A loopback HTTP/1.1 server on raw sockets: on each connection it reads one request and answers
     * {"ok": true} with a Content-Length and no {@code Connection: close} (so the client keeps the
     * connection), writing the body a byte every {@code trickleMs}; then it closes the connection.
     */
    private static ServerSocket rawServer(AtomicInteger connections, long trickleMs) throws IOException {
        ServerSocket listening = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread serving = new Thread(() -> {
            while (!listening.isClosed()) {
                try (Socket socket = listening.accept()) {
                    connections.incrementAndGet();
                    BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.ISO_8859_1));
                    int length = 0;
                    for (String line = in.readLine(); line != null && !line.isEmpty(); line = in.readLine()) {
                        if (line.toLowerCase().startsWith("content-length:")) {
                            length = Integer.parseInt(line.substring("content-length:".length()).trim());
                        }
                    }
                    in.skip(length);
                    byte[] body = "{\"ok\": true}".getBytes(StandardCharsets.UTF_8);
                    OutputStream out = socket.getOutputStream();
                    out.write(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n")
                        .getBytes(StandardCharsets.ISO_8859_1));
                    for (byte b : body) {
                        out.write(b);
                        out.flush();
                        Thread.sleep(trickleMs);
                    }
                } catch (IOException | InterruptedException e) {
                    // the next connection, or the server is closed
                }
            }
        });
        serving.setDaemon(true);
        serving.start();
        return listening;
    }

    @Test
    void aKeptAliveConnectionTheServiceHasClosedIsNotAFailure() throws Exception {
        AtomicInteger connections = new AtomicInteger();
        try (ServerSocket server = rawServer(connections, 0)) {
            StickydHttpClient client = new StickydHttpClient("http://127.0.0.1:" + server.getLocalPort(), 2000);
            for (int call = 0; call < 3; call++) {
                assertTrue(client.post("v1/assign/consumer", StickydHttpClient.JSON.createObjectNode()).get("ok").asBoolean());
                Thread.sleep(100); // the server has closed the connection the client keeps by now
            }
            assertEquals(3, connections.get(), "each call after the first found its kept connection closed and opened one");
        }
    }

    @Test
    void anAnswerThatTricklesInIsCutOffAtTheDeadline() throws Exception {
        try (ServerSocket server = rawServer(new AtomicInteger(), 100)) {
            StickydHttpClient client = new StickydHttpClient("http://127.0.0.1:" + server.getLocalPort(), 400);
            long started = System.nanoTime();
            IOException slow = assertThrows(IOException.class,
                () -> client.post("v1/assign/consumer", StickydHttpClient.JSON.createObjectNode()));
            long tookMs = (System.nanoTime() - started) / 1_000_000;
            assertEquals(AssignorMetrics.Cause.TIMEOUT, AssignorMetrics.causeOf(slow), slow.toString());
            assertTrue(tookMs >= 390 && tookMs < 700, "took " + tookMs + " ms: every byte came within the read timeout");
        }
    }
}
