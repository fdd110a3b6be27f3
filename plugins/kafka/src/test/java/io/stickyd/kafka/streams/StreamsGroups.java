package io.stickyd.kafka.streams;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import org.apache.kafka.coordinator.group.api.streams.assignor.AssignmentConfigs;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignmentMetadata;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignmentState;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;

/**
 * A streams group as the coordinator hands it to a {@code TaskAssignor}, built from plain values on
 * the public KIP-1357 interfaces only (tests, the driver and the benchmark harness use it).
 */
public final class StreamsGroups {
    private StreamsGroups() {
    }

    /** One member (stream thread): its process, rack and current tasks, keyed by subtopology. */
    public record Member(
            String processId,
            Optional<String> rackId,
            Map<String, Set<Integer>> activeTasks,
            Map<String, Set<Integer>> standbyTasks,
            Map<String, Set<Integer>> warmupTasks,
            Map<String, Map<Integer, Long>> taskOffsets,
            Map<String, Map<Integer, Long>> taskEndOffsets) implements MemberAssignmentMetadata, MemberAssignmentState {

        public static Member of(String processId, Map<String, Set<Integer>> active, Map<String, Set<Integer>> standby) {
            return new Member(processId, Optional.empty(), active, standby, Map.of(), Map.of(), Map.of());
        }

        /** This member reporting its stores' changelog offsets and the changelogs' end offsets. */
        public Member reporting(Map<String, Map<Integer, Long>> offsets, Map<String, Map<Integer, Long>> endOffsets) {
            return new Member(processId, rackId, activeTasks, standbyTasks, warmupTasks, offsets, endOffsets);
        }

        @Override
        public Optional<String> instanceId() {
            return Optional.empty();
        }

        @Override
        public Map<String, String> clientTags() {
            return Map.of();
        }
    }

    /** A group: its members by id and its number of standby replicas. */
    public record Group(SortedMap<String, Member> members, int numStandbyReplicas) implements GroupSpec, AssignmentConfigs {
        @Override
        public Collection<String> memberIds() {
            return members.keySet();
        }

        @Override
        public MemberAssignmentMetadata memberMetadata(String memberId) {
            return members.get(memberId);
        }

        @Override
        public MemberAssignmentState memberAssignmentState(String memberId) {
            return members.get(memberId);
        }

        @Override
        public AssignmentConfigs configs() {
            return this;
        }

        @Override
        public List<String> rackAwareAssignmentTags() {
            return List.of();
        }
    }

    /** A topology: partitions and statefulness per subtopology id, in the map's order. */
    public record Topology(SortedMap<String, Integer> partitions, Set<String> stateful) implements TopologyDescriber {
        @Override
        public List<String> subtopologies() {
            return new ArrayList<>(partitions.keySet());
        }

        @Override
        public int maxNumInputPartitions(String subtopologyId) {
            Integer count = partitions.get(subtopologyId);
            if (count == null) {
                throw new java.util.NoSuchElementException(subtopologyId);
            }
            return count;
        }

        @Override
        public boolean isStateful(String subtopologyId) {
            return stateful.contains(subtopologyId);
        }
    }
}
