package io.stickyd.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;

/**
 * The metrics as JMX shows them, Kafka's style: requests, latency, failovers, fallbacks by cause and
 * the outage gauge, on the MBeans {@code kafka.stickyd:type=assignor-metrics,assignor=...,group-type=...}.
 */
class AssignorMetricsTest {
    private static final MBeanServer JMX = ManagementFactory.getPlatformMBeanServer();

    private static double read(String name, String attribute) throws Exception {
        return ((Number) JMX.getAttribute(new ObjectName(name), attribute)).doubleValue();
    }

    @Test
    void requestsFallbacksByCauseAndTheOutageGaugeAreReadOverJmx() throws Exception {
        AssignorMetrics metrics = AssignorMetrics.of("stickyd-test", "consumer");
        assertSame(metrics, AssignorMetrics.of("stickyd-test", "consumer"), "one per assignor and group type in a JVM");
        String bean = "kafka.stickyd:type=assignor-metrics,assignor=stickyd-test,group-type=consumer";
        assertEquals(0, read(bean, "outage"));

        assertFalse(metrics.answered(System.nanoTime() - 5_000_000), "an answer outside an outage ends none");
        Exception refused = new StickydHttpClient.Failure(AssignorMetrics.Cause.UNREACHABLE, "refused", null);
        assertTrue(metrics.fellBack(System.nanoTime(), refused), "the first fallback starts an outage");
        assertFalse(metrics.fellBack(System.nanoTime(), new IllegalArgumentException("task missing")));
        metrics.failedOver();
        assertEquals(1, read(bean, "outage"));
        assertEquals(3, read(bean, "request-total"));
        assertEquals(2, read(bean, "fallback-total"));
        assertEquals(1, read(bean, "failover-total"));
        assertTrue(read(bean, "request-latency-max") >= 5, "the answer took 5 ms or more");
        assertEquals(1, read(bean + ",cause=unreachable", "fallback-total"));
        assertEquals(1, read(bean + ",cause=invalid-answer", "fallback-total"));
        assertEquals(0, read(bean + ",cause=timeout", "fallback-total"));

        assertTrue(metrics.answered(System.nanoTime()), "the next answer ends the outage");
        assertEquals(2, metrics.fallbacksThisOutage());
        assertEquals(0, read(bean, "outage"));
    }

    @Test
    void aFailureCountsUnderTheClientsVerdictElseAsAnInvalidAnswer() {
        assertEquals(AssignorMetrics.Cause.TIMEOUT,
            AssignorMetrics.causeOf(new StickydHttpClient.Failure(AssignorMetrics.Cause.TIMEOUT, "slow", null)));
        assertEquals(AssignorMetrics.Cause.INVALID_ANSWER, AssignorMetrics.causeOf(new IOException("not JSON")));
        assertEquals("error-answer", AssignorMetrics.Cause.ERROR_ANSWER.tag());
    }
}
