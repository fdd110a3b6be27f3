package io.stickyd.kafka;

/**
 * The KIP-848 server-side assignor {@code stickyd-load}: {@link StickydConsumerGroupAssignor} asking
 * stickyd to balance by load ({@code options.balance: "load"}) rather than by partition counts.
 *
 * <p>List both in {@code group.consumer.assignors}; clients choose this one with
 * {@code group.remote.assignor=stickyd-load}. {@code stickyd.load.tolerance} (0 to 1, the service's
 * default when unset) is how far above the best bottleneck load an answer may stay to move less. The
 * coordinator knows no partition rates: every partition weighs the same, unless
 * {@code stickyd.load.weights=live} asks for the produce rates the service measures on the cluster it
 * watches ({@code partition_weights: "live"}; a service that has none answers 422, and the uniform
 * fallback assigns). Everything else (deadline,
 * checks, the uniform fallback, its count and log) is the consumer assignor's.
 */
public class StickydLoadConsumerGroupAssignor extends StickydConsumerGroupAssignor {
    public static final String NAME = "stickyd-load";

    public StickydLoadConsumerGroupAssignor() {
        super(NAME, true);
    }
}
