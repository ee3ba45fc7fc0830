"""patch_tau2 where tau2-bench is not installed: the error names the extra to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys

class NoTau2:  # as if tau2-bench were not installed
    def find_spec(self, name, path=None, target=None):
        if name == "tau2" or name.startswith("tau2."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoTau2())
for name in [n for n in sys.modules if n == "tau2" or n.startswith("tau2.")]:
    del sys.modules[name]

import cassette
from cassette.adapters.tau2 import patch_tau2

try:
    with cassette.open("a.jsonl", "passthrough") as cas, patch_tau2(cas):
        pass
except ModuleNotFoundError as exc:
    print(type(exc).__name__, exc.name, exc)
"""


def test_patch_tau2_without_tau2_says_what_to_install(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASSETTE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        "ModuleNotFoundError tau2 patch_tau2 needs tau2-bench: pip install 'rollout-cassette[tau2]'"
    )
