package io.stickyd.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.MemberSubscription;
import org.apache.kafka.coordinator.group.api.assignor.PartitionAssignorException;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;

/**
 * The group coordinator's view of a consumer group as a compact stickyd request
 * (docs/wire-format.md, "The compact encoding"): the same request as {@link ConsumerRequestBuilder}'s
 * JSON, with members and topics by index, one subscription list per distinct subscription, and the
 * current assignment as one member index per partition. Members are sent sorted by id; a claim on a topic the
 * request does not list, or past its partition count, is left out (the JSON request's service
 * ignores it). Groups with racks take the JSON request ({@link #build} returns null).
 */
final class CompactConsumerRequest {
    static final String MEDIA_TYPE = "application/vnd.stickyd.consumer+msgpack";
    static final byte[] MAGIC = "\u00ffstickyd\u0001".getBytes(StandardCharsets.ISO_8859_1);

    /**
     * The body (its first {@code length} bytes), the members in the order sent and the topics in the order sent (with
     * their counts); member m's subscription is {@code subscriptions.get(memberSubscription[m])}, as topic indices.
     */
    record Request(byte[] body, int length, List<String> memberIds, List<Uuid> topicIds, int[] partitions, Claims claims,
                   int[] memberSubscription, List<int[]> subscriptions) {
        /** Every partition the request lists has one claimant at most (no further claimant's run). */
        boolean oneClaimantEach() {
            return claims.runs()[claims.runs().length - 1] == 0;
        }
    }

    /**
     * What the request said each member holds: {@code owners} (per partition slot, its first claimant or
     * -1) and, per member, whether {@code owners} holds all of its current assignment (no claim left out
     * or sent as a run), so that "unchanged" can be checked on the arrays; {@code runs}: the further
     * claimants' runs (member, topic, first, count), the last slot holding the length used.
     */
    record Claims(int[] owners, boolean[] exact, int[] runs) {
    }

    /** A subscription as topic indices, compared by value. */
    private record Indices(int[] values) {
        @Override
        public boolean equals(Object other) {
            return other instanceof Indices that && Arrays.equals(values, that.values);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(values);
        }
    }

    private CompactConsumerRequest() {
    }

    /** The request for {@code group}; {@code seen} keeps each member's assignment read for the next call. */
    static Request build(GroupSpec group, SubscribedTopicDescriber topics, int timeLimitMs, ObjectNode options, HeldPartitions seen) {
        Request read = read(group, topics, seen);
        return read == null ? null : written(read, timeLimitMs, options);
    }

    /**
     * The group as the request would list it, its body not written yet (null and 0); null when a member
     * has a rack.
     */
    static Request read(GroupSpec group, SubscribedTopicDescriber topics, HeldPartitions seen) {
        List<String> memberIds = new ArrayList<>(group.memberIds());
        memberIds.sort(null);
        Map<Uuid, Integer> topicIndex = new HashMap<>();
        List<Uuid> topicIds = new ArrayList<>();
        int[] counts = new int[8];
        Map<Set<Uuid>, Integer> sameSet = new IdentityHashMap<>();
        Map<Indices, Integer> subscriptionIndex = new HashMap<>();
        List<int[]> subscriptions = new ArrayList<>();
        int[] memberSubscription = new int[memberIds.size()];
        // every member subscribes to the same topics: the first one's are read, as Kafka's own assignors do
        boolean homogeneous = group.subscriptionType() == SubscriptionType.HOMOGENEOUS;
        for (int m = 0; m < memberIds.size(); m++) {
            MemberSubscription subscription = group.memberSubscription(memberIds.get(m));
            if (subscription.rackId().isPresent()) {
                return null;
            }
            if (homogeneous && m > 0) {
                continue; // memberSubscription[m] = 0, the first member's
            }
            Set<Uuid> subscribed = subscription.subscribedTopicIds();
            Integer known = sameSet.get(subscribed);
            if (known == null) {
                // iterated, never sized: the coordinator's set may count topics its iterator skips
                int[] indices = new int[8];
                int k = 0;
                for (Uuid topicId : subscribed) {
                    Integer t = topicIndex.get(topicId);
                    if (t == null) {
                        int count = topics.numPartitions(topicId);
                        if (count < 0) {
                            throw new PartitionAssignorException("member " + memberIds.get(m) + " is subscribed to topic "
                                + topicId + ", which is not in the group's topic metadata");
                        }
                        t = topicIds.size();
                        topicIndex.put(topicId, t);
                        topicIds.add(topicId);
                        counts = t < counts.length ? counts : Arrays.copyOf(counts, 2 * counts.length);
                        counts[t] = count;
                    }
                    indices = k < indices.length ? indices : Arrays.copyOf(indices, 2 * indices.length);
                    indices[k++] = t;
                }
                Indices key = new Indices(Arrays.copyOf(indices, k));
                known = subscriptionIndex.get(key);
                if (known == null) {
                    known = subscriptions.size();
                    subscriptionIndex.put(key, known);
                    subscriptions.add(key.values());
                }
                sameSet.put(subscribed, known);
            }
            memberSubscription[m] = known;
        }
        int[] offsets = new int[topicIds.size() + 1];
        for (int t = 0; t < topicIds.size(); t++) {
            offsets[t + 1] = offsets[t] + counts[t];
        }
        int[] owners = new int[offsets[topicIds.size()]];
        Arrays.fill(owners, -1);
        boolean[] exact = new boolean[memberIds.size()];
        int[] runs = claims(group, seen, memberIds, topicIds, topicIndex, counts, offsets, owners, exact);
        return new Request(null, 0, memberIds, topicIds, Arrays.copyOf(counts, topicIds.size()),
            new Claims(owners, exact, runs), memberSubscription, subscriptions);
    }

    /** {@code read} with its body written: the time limit and {@code options} added. */
    static Request written(Request read, int timeLimitMs, ObjectNode options) {
        List<String> memberIds = read.memberIds();
        List<Uuid> topicIds = read.topicIds();
        int[] counts = read.partitions();
        long slots = read.claims().owners().length;
        int capacity = (int) Math.min(Integer.MAX_VALUE - 16, 4 * slots + 64L * memberIds.size() + 48L * topicIds.size() + 1024);
        Msgpack.Writer out = new Msgpack.Writer(capacity).bytes(MAGIC).map(6);
        out.str("topics").array(topicIds.size());
        for (int t = 0; t < topicIds.size(); t++) {
            out.array(2).str(topicIds.get(t).toString()).integer(counts[t]);
        }
        out.str("subscriptions").array(read.subscriptions().size());
        for (int[] indices : read.subscriptions()) {
            out.array(indices.length);
            for (int t : indices) {
                out.integer(t);
            }
        }
        out.str("members").array(memberIds.size());
        for (int m = 0; m < memberIds.size(); m++) {
            out.array(2).str(memberIds.get(m)).integer(read.memberSubscription()[m]);
        }
        int[] runs = read.claims().runs();
        int[] owners = read.claims().owners();
        out.str("owned").int32s(runs, runs[runs.length - 1]);
        out.str("owners").int32s(owners, owners.length);
        out.str("options");
        writeOptions(out, options, timeLimitMs);
        return new Request(out.buffer(), out.length(), memberIds, topicIds, counts, read.claims(),
            read.memberSubscription(), read.subscriptions());
    }

    /**
     * Every member's current assignment: {@code owners} (one slot per partition of every listed topic, in
     * the order of {@code topics}: its member, or -1) filled with the first claimant of each partition,
     * and the runs (member, topic, first, count) of any further claimant; the runs' last slot holds the
     * length used. {@code exact[m]}: all of member m's claims are in {@code owners}.
     */
    private static int[] claims(GroupSpec group, HeldPartitions seen, List<String> memberIds, List<Uuid> topicIds,
                                Map<Uuid, Integer> topicIndex, int[] counts, int[] offsets, int[] owners, boolean[] exact) {
        long layout = seen.layout(topicIds);
        int[] runs = new int[5];
        int used = 0;
        for (int m = 0; m < memberIds.size(); m++) {
            int usedBefore = used;
            boolean all = true;
            HeldPartitions.Held held = seen.of(memberIds.get(m), group.memberAssignment(memberIds.get(m)).partitions());
            int[] topicOf = held.topicIndices(layout, topicIndex);
            for (int k = 0; k < topicOf.length; k++) {
                int t = topicOf[k];
                if (t < 0) {
                    all &= held.start(k) == held.ends[k];
                    continue;
                }
                for (int i = held.start(k); i < held.ends[k]; i++) {
                    int p = held.partitions[i];
                    if (p < 0 || p >= counts[t]) {
                        all = false;
                        continue;
                    }
                    int slot = offsets[t] + p;
                    if (owners[slot] < 0) {
                        owners[slot] = m;
                    } else if (owners[slot] != m) {
                        runs = addRun(runs, used, m, t, p);
                        used += 4;
                    }
                }
            }
            exact[m] = all && used == usedBefore;
        }
        runs[runs.length - 1] = used;
        return runs;
    }

    /** {@code runs} with the run (m, t, p, 1) written at {@code used}, grown if need be (a slot kept free at the end). */
    private static int[] addRun(int[] runs, int used, int m, int t, int p) {
        int[] out = used + 5 > runs.length ? Arrays.copyOf(runs, 2 * runs.length + 5) : runs;
        out[used] = m;
        out[used + 1] = t;
        out[used + 2] = p;
        out[used + 3] = 1;
        return out;
    }

    private static void writeOptions(Msgpack.Writer out, ObjectNode options, int timeLimitMs) {
        Map<String, JsonNode> fields = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = options.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> field = it.next();
            fields.put(field.getKey(), field.getValue());
        }
        fields.putIfAbsent("strategy", StickydHttpClient.JSON.getNodeFactory().textNode("optimal"));
        fields.putIfAbsent("time_limit_ms", StickydHttpClient.JSON.getNodeFactory().numberNode(timeLimitMs));
        out.map(fields.size());
        for (Map.Entry<String, JsonNode> field : fields.entrySet()) {
            out.str(field.getKey());
            JsonNode value = field.getValue();
            if (value.isIntegralNumber()) {
                out.integer(value.asLong());
            } else if (value.isNumber()) {
                out.decimal(value.asDouble());
            } else if (value.isBoolean()) {
                out.bool(value.asBoolean());
            } else if (value.isNull()) {
                out.nil();
            } else {
                out.str(value.asText());
            }
        }
    }
}
