package io.stickyd.kafka.streams;

import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The restore costs of a streams group's last request, kept per process id, so that the next
 * request of the same group gives a task nobody reports a changelog end offset for this time its
 * last known cost rather than none. Members report end offsets for the tasks they stand by for, not
 * for the actives they run: when the only standby of a task is killed, the next rebalance would
 * otherwise weigh its state as nothing. Bounded (the least recently seen processes are dropped) and
 * thread-safe.
 */
final class LastCosts {
    private static final int MOST_PROCESSES = 10_000;

    private final Map<String, Map<String, Long>> byProcess = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Map<String, Long>> eldest) {
            return size() > MOST_PROCESSES;
        }
    };

    /**
     * The costs {@code known} now, each task of {@code tasks} without one taking the largest cost
     * the last request of any of {@code processIds} gave it; remembered for those processes.
     */
    synchronized Map<String, Long> complete(Collection<String> processIds, Map<String, Long> known, Set<String> tasks) {
        Map<String, Long> costs = new HashMap<>();
        for (String processId : processIds) {
            Map<String, Long> last = byProcess.get(processId);
            if (last != null) {
                last.forEach((task, cost) -> costs.merge(task, cost, Math::max));
            }
        }
        costs.putAll(known);
        costs.keySet().retainAll(tasks);
        Map<String, Long> kept = Map.copyOf(costs);
        processIds.forEach(processId -> byProcess.put(processId, kept));
        return kept;
    }
}
