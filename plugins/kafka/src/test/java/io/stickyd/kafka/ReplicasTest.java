package io.stickyd.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Several replicas in {@code stickyd.url}, on loopback HTTP: a replica that refuses, answers an error
 * or is too slow for its share of the deadline moves the request on to the next one, the whole
 * request stays within the one deadline, and the replica that answered is asked first next time.
 */
class ReplicasTest {
    private final List<HttpServer> servers = new ArrayList<>();

    /** A replica that waits {@code delayMs}, then answers {@code status} with {"ok": true}; counts its requests. */
    private String replica(int status, long delayMs, AtomicInteger seen) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/v1/assign/consumer", exchange -> {
            seen.incrementAndGet();
            try {
                Thread.sleep(delayMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            byte[] body = "{\"ok\": true}".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(status, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
        server.start();
        servers.add(server);
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** A loopback address where nothing listens (connections are refused). */
    private static String refusing() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return "http://127.0.0.1:" + socket.getLocalPort();
        }
    }

    @AfterEach
    void stop() {
        servers.forEach(server -> server.stop(0));
    }

    private static IOException failure(StickydHttpClient client) {
        return assertThrows(IOException.class, () -> client.post("v1/assign/consumer", StickydHttpClient.JSON.createObjectNode()));
    }

    @Test
    void aRefusingReplicaMovesOnToTheNextAndTheAnsweringOneIsAskedFirstAfterwards() throws IOException {
        AtomicInteger seen = new AtomicInteger();
        AtomicInteger failovers = new AtomicInteger();
        StickydHttpClient client = new StickydHttpClient(refusing() + " , " + replica(200, 0, seen), 2000);
        assertEquals(2, client.baseUrls().size());
        assertTrue(client.post("v1/assign/consumer", StickydHttpClient.JSON.createObjectNode(), failovers::incrementAndGet)
            .get("ok").asBoolean());
        assertEquals(1, failovers.get());
        client.post("v1/assign/consumer", StickydHttpClient.JSON.createObjectNode(), failovers::incrementAndGet);
        assertEquals(1, failovers.get(), "the replica that answered is asked first");
        assertEquals(2, seen.get());
    }

    @Test
    void aSlowReplicaGetsItsShareAndTheNextAnswersWithinTheDeadline() throws IOException {
        AtomicInteger slow = new AtomicInteger();
        AtomicInteger fast = new AtomicInteger();
        StickydHttpClient client = new StickydHttpClient(replica(200, 3000, slow) + "," + replica(200, 0, fast), 1000);
        assertEquals(500, client.firstShareMs());
        long started = System.nanoTime();
        assertTrue(client.post("v1/assign/consumer", StickydHttpClient.JSON.createObjectNode()).get("ok").asBoolean());
        long tookMs = (System.nanoTime() - started) / 1_000_000;
        assertTrue(tookMs >= 450 && tookMs < 1000, "took " + tookMs + " ms");
        assertEquals(1, slow.get());
        assertEquals(1, fast.get());
    }

    @Test
    void anErrorStatusMovesOnAndWhenEveryReplicaFailsTheMostTellingCauseIsKept() throws IOException {
        AtomicInteger erring = new AtomicInteger();
        AtomicInteger fine = new AtomicInteger();
        StickydHttpClient failingOver = new StickydHttpClient(replica(503, 0, erring) + "," + replica(200, 0, fine), 1000);
        failingOver.post("v1/assign/consumer", StickydHttpClient.JSON.createObjectNode());
        assertEquals(1, fine.get());

        StickydHttpClient allDown = new StickydHttpClient(refusing() + "," + refusing(), 1000);
        assertEquals(AssignorMetrics.Cause.UNREACHABLE, AssignorMetrics.causeOf(failure(allDown)));
        StickydHttpClient downAndErring = new StickydHttpClient(refusing() + "," + replica(500, 0, erring), 1000);
        assertEquals(AssignorMetrics.Cause.ERROR_ANSWER, AssignorMetrics.causeOf(failure(downAndErring)));
        StickydHttpClient slowAndDown = new StickydHttpClient(replica(200, 2000, new AtomicInteger()) + "," + refusing(), 400);
        long started = System.nanoTime();
        assertEquals(AssignorMetrics.Cause.TIMEOUT, AssignorMetrics.causeOf(failure(slowAndDown)));
        assertTrue((System.nanoTime() - started) / 1_000_000 < 1000, "the deadline holds");
    }

    @Test
    void aUrlListWithoutAUrlIsRefusedNamingTheSetting() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new StickydHttpClient(" , ", 1000));
        assertTrue(e.getMessage().contains("stickyd.url"), e.getMessage());
    }
}
