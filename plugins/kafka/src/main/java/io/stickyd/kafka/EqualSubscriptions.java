package io.stickyd.kafka;

import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import org.apache.kafka.common.Uuid;

/**
 * A group whose members all subscribe to the same topics, solved in the broker
 * ({@code stickyd.equal.subscriptions=broker}). Its optimum has a closed form, the service's
 * {@code direct-equal} solver (solvers/consumer/equal.py); this is the same construction on the
 * same arrays, so it gives the answer the service would give.
 *
 * <p>Balanced: every member gets floor(P/M) or ceil(P/M) partitions. Fewest moves: a member can keep
 * at most min(owned, quota) of what it owns, so the P mod M larger quotas go first to the members
 * that own at least ceil(P/M) (ties: the first by id), each member keeps exactly that many (its
 * lowest-numbered), and no balanced assignment keeps more. Partitions are numbered as the service
 * numbers them: topics in the order of their ids' names, each topic's partitions in order.
 */
final class EqualSubscriptions {
    /** Member index per partition slot (the request's slots), and the members whose assignment is unchanged. */
    record Answer(int[] owners, int[] unchanged) {
    }

    /** The topics in the order of their ids' names ({@code byName}), for the topic list last seen. */
    private record TopicOrder(List<Uuid> topicIds, int[] byName) {
    }

    // a group's topics rarely change between rebalances, and a Uuid's name is made anew each time it is asked for
    private static volatile TopicOrder lastOrder = new TopicOrder(List.of(), new int[0]);

    private EqualSubscriptions() {
    }

    /**
     * The optimum, or null when the request is not one the closed form answers: members with different
     * subscriptions, or a partition claimed by two members (resolved by the service).
     */
    static Answer solve(CompactConsumerRequest.Request request) {
        if (request.subscriptions().size() != 1 || !request.oneClaimantEach()) {
            return null;
        }
        int members = request.memberIds().size();
        int[] owners = request.claims().owners().clone();
        int[] own = new int[members];
        for (int m : owners) {
            if (m >= 0) {
                own[m]++;
            }
        }
        int[] quota = quotas(own, owners.length);
        int[] slots = serviceOrder(request);
        // a member over its quota keeps its lowest-numbered partitions: it gives up its highest-numbered
        int[] excess = new int[members];
        long toGiveUp = 0;
        for (int m = 0; m < members; m++) {
            excess[m] = Math.max(0, own[m] - quota[m]);
            toGiveUp += excess[m];
        }
        for (int i = slots.length - 1; i >= 0 && toGiveUp > 0; i--) {
            int m = owners[slots[i]];
            if (m >= 0 && excess[m] > 0) {
                owners[slots[i]] = -1;
                excess[m]--;
                toGiveUp--;
            }
        }
        // released and unowned partitions fill the members still below quota, in id order
        int m = 0;
        int room = quota[0] - Math.min(own[0], quota[0]);
        for (int slot : slots) {
            if (owners[slot] >= 0) {
                continue;
            }
            while (room == 0) {
                m++;
                room = quota[m] - Math.min(own[m], quota[m]);
            }
            owners[slot] = m;
            room--;
        }
        // a member that owned exactly its quota keeps all of it and gets nothing
        int[] unchanged = new int[members];
        int same = 0;
        for (int k = 0; k < members; k++) {
            if (own[k] == quota[k]) {
                unchanged[same++] = k;
            }
        }
        return new Answer(owners, Arrays.copyOf(unchanged, same));
    }

    /** Each member's quota: floor(P/M), one more for the first P mod M that own at least that many, then the first others. */
    private static int[] quotas(int[] own, int partitions) {
        int members = own.length;
        int base = partitions / members;
        int extra = partitions % members;
        int[] quota = new int[members];
        Arrays.fill(quota, base);
        // the larger quotas go to members that can fill them with what they already own
        for (int m = 0; m < members && extra > 0; m++) {
            if (own[m] >= base + 1) {
                quota[m]++;
                extra--;
            }
        }
        for (int m = 0; m < members && extra > 0; m++) {
            if (own[m] < base + 1) {
                quota[m]++;
                extra--;
            }
        }
        return quota;
    }

    /** The request's slots in the service's order: topics by their ids' names, then partitions. */
    private static int[] serviceOrder(CompactConsumerRequest.Request request) {
        int topics = request.topicIds().size();
        int[] partitions = request.partitions();
        int[] offsets = new int[topics + 1];
        for (int t = 0; t < topics; t++) {
            offsets[t + 1] = offsets[t] + partitions[t];
        }
        int[] slots = new int[offsets[topics]];
        int i = 0;
        for (int t : byName(request.topicIds())) {
            for (int slot = offsets[t]; slot < offsets[t + 1]; slot++) {
                slots[i++] = slot;
            }
        }
        return slots;
    }

    /** Topic indices in the order of the topics' names (the ids' strings), as the service sorts them. */
    private static int[] byName(List<Uuid> topicIds) {
        TopicOrder last = lastOrder;
        if (last.topicIds().equals(topicIds)) {
            return last.byName();
        }
        String[] names = new String[topicIds.size()];
        Integer[] order = new Integer[topicIds.size()];
        for (int t = 0; t < names.length; t++) {
            names[t] = topicIds.get(t).toString();
            order[t] = t;
        }
        Arrays.sort(order, Comparator.comparing(t -> names[t]));
        int[] byName = Arrays.stream(order).mapToInt(Integer::intValue).toArray();
        lastOrder = new TopicOrder(List.copyOf(topicIds), byName);
        return byName;
    }
}
