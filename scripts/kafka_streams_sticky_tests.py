"""Apache Kafka's own unit tests of its broker-side streams `sticky` task assignor (group-coordinator's
`StickyTaskAssignorTest`) run against `StickydStreamsGroupAssignor` and a live `stickyd serve`.

The test source is downloaded from Kafka's repository at a release tag (or read from a local copy),
the assignor under test is substituted, and it is compiled and run in a temporary folder: nothing
of Kafka's test is kept in this repository. Each test also fails if stickyd did not answer (the
plug-in would otherwise fall back to Kafka's own `sticky` and pass for it).

    .venv/bin/python scripts/kafka_streams_sticky_tests.py                 # tag 4.4.0, from GitHub
    .venv/bin/python scripts/kafka_streams_sticky_tests.py --source StickyTaskAssignorTest.java
    .venv/bin/python scripts/kafka_streams_sticky_tests.py --baseline   # Kafka's own assignor, to compare

Needs plugins/kafka built (`mvn -q -B -f plugins/kafka/pom.xml package`) and Maven (it fetches
JUnit's console launcher and mockito-core, which the test imports, into the local repository).
Prints JUnit's tree; exits 0 when the tests ran, whatever they found, 2 when they could not run.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_sources import kafka_file, maven_jar  # noqa: E402 (beside this script)

from stickyd.cli.child_service import running_service  # noqa: E402
from tests.kafka.jvm import KAFKA_LIBS, PLUGIN_JAR, kafka_jars_built  # noqa: E402

TEST_PATH = (
    "group-coordinator/src/test/java/org/apache/kafka/coordinator/group/streams/assignor/StickyTaskAssignorTest.java"
)
TEST_CLASS = "org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignorTest"
JARS = {
    "org.junit.platform:junit-platform-console-standalone:1.11.4": "junit-platform-console-standalone-1.11.4.jar",
    "org.mockito:mockito-core:5.14.2": "mockito-core-5.14.2.jar",
}
ASSIGNOR = "io.stickyd.kafka.streams.StickydStreamsGroupAssignor"
# a generous deadline: the tests measure what the assignor answers, not how fast
UNDER_TEST = (
    f"private final {ASSIGNOR} assignor = new {ASSIGNOR}("
    'new io.stickyd.kafka.StickydHttpClient(System.getenv("STICKYD_URL"), 20000));'
)
ANSWERED = f"""
    private long fallbacksBefore;

    @org.junit.jupiter.api.BeforeEach
    void countFallbacks() {{
        fallbacksBefore = {ASSIGNOR}.fallbacks();
    }}

    @org.junit.jupiter.api.AfterEach
    void stickydAnswered() {{
        assertEquals(fallbacksBefore, {ASSIGNOR}.fallbacks(), "stickyd did not answer: Kafka's sticky assigned");
    }}
"""
# Kafka's file at some commits calls a three-argument createMemberMetadata that it does not define
THREE_ARGUMENTS = """
    private MemberMetadataAndStateImpl createMemberMetadata(
        final String processId,
        final Map<String, Set<Integer>> prevActiveTasks,
        final Map<String, Set<Integer>> prevStandbyTasks
    ) {
        return createMemberMetadata(processId, prevActiveTasks, prevStandbyTasks, Map.of());
    }
}
"""


def source_text(source: str | None, tag: str) -> str:
    if source:
        return Path(source).read_text()
    text = kafka_file(TEST_PATH, tag)
    if text is None:
        raise SystemExit(f"{TEST_PATH} is not at {tag}: adapt the script")
    return text


def substituted(text: str, baseline: bool) -> str:
    """Kafka's test with stickyd's assignor in place of `new StickyTaskAssignor()`, and the check
    that stickyd answered around every test (`baseline`: Kafka's own assignor stays)."""
    field = re.compile(r"private final StickyTaskAssignor assignor = new StickyTaskAssignor\(\);")
    if not field.search(text):
        raise SystemExit("the test file no longer declares `assignor = new StickyTaskAssignor()`: adapt the script")
    if not baseline:
        text = field.sub(UNDER_TEST, text, count=1)
        text = text.replace(
            "public class StickyTaskAssignorTest {", "public class StickyTaskAssignorTest {" + ANSWERED, 1
        )
    three = re.search(r"createMemberMetadata\(\s*final String processId,\s*final Map<[^)]*?prevStandbyTasks\s*\)", text)
    if "createMemberMetadata(entry.getValue().processId()" in text and not three:
        text = text[: text.rstrip().rfind("}")] + THREE_ARGUMENTS
    return text


def jars() -> list[Path]:
    return [maven_jar(artifact, name) for artifact, name in JARS.items()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", help="a local copy of StickyTaskAssignorTest.java (default: download)")
    parser.add_argument("--tag", default="4.4.0", help="Kafka's release tag to download the test from")
    parser.add_argument("--baseline", action="store_true", help="run them against Kafka's own assignor (the jar's)")
    args = parser.parse_args()
    if not kafka_jars_built():
        print("plugins/kafka is not built: mvn -q -B -f plugins/kafka/pom.xml package", file=sys.stderr)
        return 2
    launcher, mockito = jars()
    with tempfile.TemporaryDirectory(prefix="kafka-sticky-tests-") as tmp:
        work = Path(tmp)
        test = work / "src" / "StickyTaskAssignorTest.java"
        test.parent.mkdir(parents=True)
        test.write_text(substituted(source_text(args.source, args.tag), args.baseline))
        classpath = os.pathsep.join([f"{KAFKA_LIBS}/*", str(PLUGIN_JAR), str(mockito), str(launcher)])
        classes = work / "classes"
        compiled = subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", classpath, str(test)])
        if compiled.returncode != 0:
            return 2
        with running_service({"STICKYD_WORKERS": "1"}) as service:
            run = subprocess.run(
                [
                    "java",
                    "-cp",
                    os.pathsep.join([str(classes), classpath]),
                    "org.junit.platform.console.ConsoleLauncher",
                    "execute",
                    "--disable-banner",
                    "--disable-ansi-colors",
                    "--details=tree",
                    f"--select-class={TEST_CLASS}",
                ],
                env={**os.environ, "STICKYD_URL": service.url},
            )
    return 0 if run.returncode in (0, 1) else 2


if __name__ == "__main__":
    sys.exit(main())
