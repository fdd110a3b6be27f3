"""scripts/kafka_consumer_assignor_tests.py end to end, offline: Kafka's own test files cannot be
fetched here, so the test writes small test classes of its own under the names and packages the
script looks for (`--source DIR`), and the script substitutes the plug-in, compiles them, starts a
real `stickyd serve` and runs them with JUnit. Checked: a test through `assignor.assign` and one
through `CommonAssignorTests` (parameterized, so its `@ValueSource` braces are inside the method's
annotations) run against stickyd and pass; a test that does not call the assignor is left out and
named; a file the script needs that the folder lacks stops it, naming the file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.kafka.jvm import kafka_jars_built

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "kafka_consumer_assignor_tests.py"
ASSIGNOR_PACKAGE = "org.apache.kafka.coordinator.group.assignor"

IMPORTS = """
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.PartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.fail;
"""

# two members of a group reading one topic of four partitions: a holds 0-1, b holds 2-3 (or nothing)
COMMON = f"""package {ASSIGNOR_PACKAGE};
{IMPORTS}
public class CommonAssignorTests {{
    static final Uuid ORDERS = new Uuid(7L, 1L);
    static final SubscribedTopicDescriber TOPICS = new SubscribedTopicDescriber() {{
        public int numPartitions(Uuid topicId) {{
            return topicId.equals(ORDERS) ? 4 : -1;
        }}

        public Set<String> racksForPartition(Uuid topicId, int partition) {{
            return Set.of();
        }}
    }};

    static GroupSpecImpl group(boolean held, SubscriptionType type) {{
        return new GroupSpecImpl(Map.of(
            "a", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), Set.of(ORDERS),
                held ? new Assignment(Map.of(ORDERS, Set.of(0, 1))) : Assignment.EMPTY),
            "b", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), Set.of(ORDERS),
                held ? new Assignment(Map.of(ORDERS, Set.of(2, 3))) : Assignment.EMPTY)),
            type, held ? Map.of(ORDERS, Map.of(0, "a", 1, "a", 2, "b", 3, "b")) : Map.of());
    }}

    public static void testAssignmentReuse(PartitionAssignor assignor, SubscriptionType type, boolean held) {{
        GroupSpecImpl group = group(held, type);
        GroupAssignment assignment = assignor.assign(group, TOPICS);
        int given = 0;
        for (String member : new String[] {{"a", "b"}}) {{
            given += assignment.members().get(member).partitions().get(ORDERS).size();
            if (held) {{
                assertSame(group.memberAssignment(member).partitions(), assignment.members().get(member).partitions());
            }}
        }}
        assertEquals(4, given);
    }}
}}
"""


def java_test_class(name: str, subscription: str) -> str:
    return f"""package {ASSIGNOR_PACKAGE};
{IMPORTS}
public class {name} {{
    private final UniformAssignor assignor = new UniformAssignor();

    @ParameterizedTest
    @ValueSource(booleans = {{false, true}})
    public void testAssignmentReuse(boolean held) {{
        CommonAssignorTests.testAssignmentReuse(assignor, SubscriptionType.{subscription}, held);
    }}

    @Test
    public void testBalanced() {{
        GroupAssignment assignment = assignor.assign(
            CommonAssignorTests.group(false, SubscriptionType.{subscription}), CommonAssignorTests.TOPICS);
        assertEquals(2, assignment.members().get("a").partitions().get(CommonAssignorTests.ORDERS).size());
    }}

    @Test
    public void testTheBuilderItself() {{
        fail("a test that does not call the assignor is left out");
    }}
}}
"""


def write_sources(folder: Path) -> None:
    runtime = folder / "coordinator-common/src/test/java/org/apache/kafka/coordinator/common/runtime"
    group = folder / "group-coordinator/src/test/java/org/apache/kafka/coordinator/group"
    assignor = group / "assignor"
    for path in (runtime, assignor):
        path.mkdir(parents=True, exist_ok=True)
    (runtime / "MetadataImageBuilder.java").write_text(
        "package org.apache.kafka.coordinator.common.runtime;\npublic class MetadataImageBuilder {}\n"
    )
    (group / "AssignmentTestUtil.java").write_text(
        "package org.apache.kafka.coordinator.group;\npublic class AssignmentTestUtil {}\n"
    )
    (assignor / "CommonAssignorTests.java").write_text(COMMON)
    for name, subscription in (
        ("UniformHomogeneousAssignmentBuilderTest", "HOMOGENEOUS"),
        ("UniformHeterogeneousAssignmentBuilderTest", "HETEROGENEOUS"),
    ):
        (assignor / f"{name}.java").write_text(java_test_class(name, subscription))


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_script_runs_the_tests_through_the_assignor_against_a_live_stickyd(tmp_path: Path) -> None:
    if not kafka_jars_built():
        pytest.skip("Kafka jars not built: run `mvn -q -B -f plugins/kafka/pom.xml package` (scripts/test does)")
    write_sources(tmp_path)
    run = run_script("--source", str(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "left out (not through the assignor interface): testTheBuilderItself" in run.stderr
    assert "[         6 tests successful      ]" in run.stdout, run.stdout
    assert "[         0 tests failed          ]" in run.stdout, run.stdout
    assert "Kafka's uniform assigned" not in run.stdout

    (tmp_path / "group-coordinator/src/test/java/org/apache/kafka/coordinator/group/AssignmentTestUtil.java").unlink()
    missing = run_script("--source", str(tmp_path))
    assert missing.returncode != 0
    assert "AssignmentTestUtil.java is not under" in missing.stderr
