package io.stickyd.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A service that requires tokens gets one from {@code stickyd.token} or STICKYD_TOKEN, on loopback HTTP. */
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
}
