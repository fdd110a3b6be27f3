"""The project's wheel as a user gets it, and Python environments with stickyd's dependencies but
not this checkout's editable install: for the wheel's tests and for Spark executors that get the
code only as shipped files."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_wheel(source: Path, out: Path) -> Path:
    """The wheel, built by pip from a copy of the tracked tree in `source` (no build files left in
    the checkout), written to `out`."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for name in listed:
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return next(out.glob("stickyd-*.whl"))


def env_with_dependencies_only(env: Path, wheel: Path | None = None) -> Path:
    """A new virtual environment whose Python reaches this environment's packages through a path
    file, but not this checkout's editable install (a path file adds the folder, not the path files
    in it): `import stickyd` fails there unless `wheel` is installed into it (before the path file,
    so that pip does not take the editable install for it) or the code is shipped. Its Python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    python = env / "bin" / "python"
    if wheel is not None:
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
            check=True,
            capture_output=True,
            timeout=300,
        )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python
