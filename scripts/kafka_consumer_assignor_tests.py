"""Apache Kafka's own unit tests of its KIP-848 `uniform` consumer assignor (group-coordinator's
`UniformHomogeneousAssignmentBuilderTest`, `UniformHeterogeneousAssignmentBuilderTest` and the
`CommonAssignorTests` they share) run against `StickydConsumerGroupAssignor` and a live `stickyd serve`.

As `kafka_streams_sticky_tests.py` does for the Streams assignor: the test sources (and the two test
helpers they import, `AssignmentTestUtil` and `MetadataImageBuilder`) are downloaded from Kafka's
repository at a release tag, or read from a local folder; the assignor under test is substituted;
they are compiled and run in a temporary folder, so nothing of Kafka's tests is kept in this
repository. Only the tests that go through the assignor interface (`assignor.assign(...)`, directly
or through `CommonAssignorTests`) run; a test that builds Kafka's assignment builders itself is left
out and listed. Each test also fails if stickyd did not answer (the plug-in would otherwise fall back
to Kafka's `uniform` and pass for it).

    .venv/bin/python scripts/kafka_consumer_assignor_tests.py                  # tag 4.4.0, from GitHub
    .venv/bin/python scripts/kafka_consumer_assignor_tests.py --source ~/kafka  # a checkout, or a folder of the files
    .venv/bin/python scripts/kafka_consumer_assignor_tests.py --baseline        # Kafka's own assignor, to compare
    .venv/bin/python scripts/kafka_consumer_assignor_tests.py --assignor stickyd-load

`--source` takes a folder: each file is looked up by its name anywhere under it (a Kafka checkout at
the tag, or a flat folder holding the `.java` files). Needs plugins/kafka built
(`mvn -q -B -f plugins/kafka/pom.xml package`) and Maven (it fetches JUnit's console launcher into
the local repository). Prints JUnit's tree; exits 0 when the tests ran, whatever they found, 2 when
they could not run.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_sources import kafka_file, maven_jar  # noqa: E402 (beside this script)

from stickyd.cli.child_service import running_service  # noqa: E402
from tests.kafka.jvm import KAFKA_LIBS, PLUGIN_JAR, kafka_jars_built  # noqa: E402

GROUP_TESTS = "group-coordinator/src/test/java/org/apache/kafka/coordinator/group"
ASSIGNOR_TESTS = f"{GROUP_TESTS}/assignor"
TEST_CLASSES = {
    "UniformHomogeneousAssignmentBuilderTest": f"{ASSIGNOR_TESTS}/UniformHomogeneousAssignmentBuilderTest.java",
    "UniformHeterogeneousAssignmentBuilderTest": f"{ASSIGNOR_TESTS}/UniformHeterogeneousAssignmentBuilderTest.java",
    # an older name of the tests above; run when the tag (or the folder) has it
    "UniformAssignorTest": f"{ASSIGNOR_TESTS}/UniformAssignorTest.java",
}
HELPERS = {
    "CommonAssignorTests": f"{ASSIGNOR_TESTS}/CommonAssignorTests.java",
    "AssignmentTestUtil": f"{GROUP_TESTS}/AssignmentTestUtil.java",
    "MetadataImageBuilder": (
        "coordinator-common/src/test/java/org/apache/kafka/coordinator/common/runtime/MetadataImageBuilder.java"
    ),
}
OPTIONAL = {"UniformAssignorTest", "CommonAssignorTests"}
PACKAGE = "org.apache.kafka.coordinator.group.assignor"
LAUNCHER = "org.junit.platform:junit-platform-console-standalone:1.11.4"
ASSIGNOR = "io.stickyd.kafka.StickydConsumerGroupAssignor"
FIELD = re.compile(r"private final UniformAssignor assignor = new UniformAssignor\(\);")
ASSIGNORS = {"stickyd": ASSIGNOR, "stickyd-load": "io.stickyd.kafka.StickydLoadConsumerGroupAssignor"}
ANSWERED = f"""
    private long fallbacksBefore;

    @org.junit.jupiter.api.BeforeEach
    void countFallbacks() {{
        fallbacksBefore = {ASSIGNOR}.fallbacks();
    }}

    @org.junit.jupiter.api.AfterEach
    void stickydAnswered() {{
        org.junit.jupiter.api.Assertions.assertEquals(
            fallbacksBefore, {ASSIGNOR}.fallbacks(), "stickyd did not answer: Kafka's uniform assigned");
    }}
"""
TEST_ANNOTATION = re.compile(r"^(\s*)@(Test|ParameterizedTest)\b", re.MULTILINE)
THROUGH_ASSIGNOR = re.compile(r"\bassignor\.assign\(|\bCommonAssignorTests\.\w+\(\s*assignor\b")


def found(folder: Path, name: str, path: str) -> str | None:
    """The file at its path in Kafka's tree under `folder`, or else the first of that name under it."""
    if (folder / path).is_file():
        return (folder / path).read_text()
    copies = sorted(folder.rglob(f"{name}.java"))
    return copies[0].read_text() if copies else None


def sources(source: str | None, tag: str) -> dict[str, str]:
    """Each class's text by name; an optional one the tag (or the folder) lacks is left out."""
    out = {}
    for name, path in {**TEST_CLASSES, **HELPERS}.items():
        text = found(Path(source), name, path) if source else kafka_file(path, tag)
        if text is None and name not in OPTIONAL:
            where = f"under {source}" if source else f"at {tag}"
            raise SystemExit(f"{name}.java is not {where}: adapt the script")
        if text is not None:
            out[name] = text
    return out


def method_end(text: str, start: int) -> int:
    """Where the method whose declaration follows `start` ends (its braces counted; Kafka's tests
    hold no brace inside a string)."""
    signature = re.compile(r"void\s+\w+\s*\([^)]*\)[^{;]*\{").search(text, start)
    if signature is None:
        return len(text)
    depth = 0
    for at in range(signature.end() - 1, len(text)):
        depth += {"{": 1, "}": -1}.get(text[at], 0)
        if depth == 0:
            return at + 1
    return len(text)


def selected(text: str) -> tuple[str, list[str], list[str]]:
    """The test class with its tests that do not call the assignor turned off (their annotation
    commented out), the names of the tests kept and of those left out."""
    kept: list[str] = []
    left: list[str] = []
    pieces = []
    marks = list(TEST_ANNOTATION.finditer(text))
    last = 0
    for mark in marks:
        end = method_end(text, mark.end())
        body = text[mark.start() : end]
        name = re.search(r"void\s+(\w+)\s*\(", body)
        pieces.append(text[last : mark.start()])
        if THROUGH_ASSIGNOR.search(body):
            kept.append(name.group(1) if name else "?")
            pieces.append(body)
        else:
            left.append(name.group(1) if name else "?")
            pieces.append(body.replace("@", "// not through the assignor interface: @", 1))
        last = end
    pieces.append(text[last:])
    return "".join(pieces), kept, left


def substituted(name: str, text: str, assignor: str | None) -> str:
    """Kafka's test class with stickyd's `assignor` (a class name) in place of `new UniformAssignor()`
    and the check that stickyd answered around every test (None: Kafka's own assignor stays)."""
    if not FIELD.search(text):
        raise SystemExit(f"{name} no longer declares `assignor = new UniformAssignor()`: adapt the script")
    if assignor is None:
        return text
    # it reads STICKYD_URL and STICKYD_TIMEOUT_MS from the environment the script sets
    text = FIELD.sub(f"private final {assignor} assignor = new {assignor}();", text, count=1)
    opening = f"public class {name} {{"
    if opening not in text:
        raise SystemExit(f"{name}: `{opening}` not found: adapt the script")
    return text.replace(opening, opening + ANSWERED, 1)


def launcher() -> Path:
    return maven_jar(LAUNCHER)


def written(work: Path, texts: dict[str, str], assignor: str | None) -> tuple[list[Path], list[str]]:
    """The sources in `work`, and the test classes to run (those with a test through the assignor)."""
    files = []
    classes = []
    for name, text in texts.items():
        if name in TEST_CLASSES:
            text, kept, left = selected(substituted(name, text, assignor))
            print(f"{name}: {len(kept)} tests through the assignor run", file=sys.stderr)
            if left:
                print(f"  left out (not through the assignor interface): {', '.join(left)}", file=sys.stderr)
            if kept:
                classes.append(f"{PACKAGE}.{name}")
        file = work / "src" / f"{name}.java"
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
        files.append(file)
    return files, classes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", help="a folder holding the .java files, e.g. a Kafka checkout (default: download)")
    parser.add_argument("--tag", default="4.4.0", help="Kafka's release tag to download the tests from")
    parser.add_argument(
        "--assignor", choices=sorted(ASSIGNORS), default="stickyd", help="the plug-in's assignor to test"
    )
    parser.add_argument("--baseline", action="store_true", help="run them against Kafka's own assignor (the jar's)")
    args = parser.parse_args()
    if not kafka_jars_built():
        print("plugins/kafka is not built: mvn -q -B -f plugins/kafka/pom.xml package", file=sys.stderr)
        return 2
    junit = launcher()
    with tempfile.TemporaryDirectory(prefix="kafka-uniform-tests-") as tmp:
        work = Path(tmp)
        try:
            texts = sources(args.source, args.tag)
        except urllib.error.URLError as error:
            print(f"could not download Kafka's tests at {args.tag} ({error.reason}): use --source DIR", file=sys.stderr)
            return 2
        files, classes = written(work, texts, None if args.baseline else ASSIGNORS[args.assignor])
        classpath = os.pathsep.join([f"{KAFKA_LIBS}/*", str(PLUGIN_JAR), str(junit)])
        compiled = subprocess.run(["javac", "-nowarn", "-d", str(work / "classes"), "-cp", classpath, *map(str, files)])
        if compiled.returncode != 0 or not classes:
            return 2
        with running_service({"STICKYD_WORKERS": "1"}) as service:
            run = subprocess.run(
                [
                    "java",
                    "-cp",
                    os.pathsep.join([str(work / "classes"), classpath]),
                    "org.junit.platform.console.ConsoleLauncher",
                    "execute",
                    "--disable-banner",
                    "--disable-ansi-colors",
                    "--details=tree",
                    *(f"--select-class={name}" for name in classes),
                ],
                # a generous deadline: the tests check what the assignor answers, not how fast
                env={**os.environ, "STICKYD_URL": service.url, "STICKYD_TIMEOUT_MS": "20000"},
            )
    return 0 if run.returncode in (0, 1) else 2


if __name__ == "__main__":
    sys.exit(main())
