"""Task loading speed: 200 BFCL-sized task files (~30 KB each) read, validated and checked before a run.

Rows, each measured in a fresh child process (CPU time: user+sys, steadier than wall):

- a synthetic pack: 200 task files of ~30 KB (three components from one ``envs.py`` per pack, 25
  tools, per-turn expected state and outputs, ground truth in ``metadata``), loaded as ``trial
  run`` loads them (``load_tasks``: parse, validate, import the components, construct and set
  them up once), then each trial's copy loaded again as the runner does (a cache hit);
- the same pack read by the careful (position-recording) reader only, as task files were read
  before the libyaml path: the "before" figure;
- ``capplan lint`` of the pack, whole process;
- with ``bfcl-eval`` installed, the same rows for the 200 ``multi_turn_base`` tasks that
  ``capplan trial import bfcl`` writes.

Target: loading 200 files costs <= 1.5 s of CPU (the interpreter and capplan's import apart).

Run: python benchmarks/task_loading.py [--files N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]

ENVS = '''
class Files:
    def __init__(self, root: str = "/"):
        self.root = root
        self.tree = {}

    def _load_scenario(self, scenario: dict, long_context: bool = False):
        self.tree = dict(scenario)

    def ls(self, path: str = ".") -> list: return sorted(self.tree)
    def cat(self, name: str) -> str: return str(self.tree.get(name))
    def touch(self, name: str) -> str: self.tree[name] = ""; return "ok"
    def rm(self, name: str) -> str: return str(self.tree.pop(name, None))
    def mv(self, source: str, destination: str) -> str: return "ok"
    def grep(self, name: str, pattern: str) -> list: return []
    def wc(self, name: str, mode: str = "l") -> int: return 0
    def mkdir(self, name: str) -> str: return "ok"


class Messages:
    def __init__(self):
        self.inbox = []

    def _load_scenario(self, scenario: dict, long_context: bool = False):
        self.inbox = list(scenario.get("inbox", []))

    def send(self, to: str, text: str) -> str: self.inbox.append(text); return "sent"
    def read(self, index: int) -> str: return self.inbox[index]
    def search(self, keyword: str) -> list: return [m for m in self.inbox if keyword in m]
    def delete(self, index: int) -> str: return "deleted"


class Tickets:
    def __init__(self):
        self.queue = {}

    def _load_scenario(self, scenario: dict, long_context: bool = False):
        self.queue = dict(scenario.get("queue", {}))

    def create(self, title: str, priority: int = 1) -> int: return len(self.queue)
    def close(self, ticket_id: int) -> str: return "closed"
    def get(self, ticket_id: int) -> dict: return {}
    def edit(self, ticket_id: int, title: str) -> str: return "edited"
    def list_open(self) -> list: return []
    def assign(self, ticket_id: int, user: str) -> str: return "assigned"
    def escalate(self, ticket_id: int) -> str: return "escalated"
    def comment(self, ticket_id: int, text: str) -> str: return "commented"
    def history(self, ticket_id: int) -> list: return []
    def reopen(self, ticket_id: int) -> str: return "reopened"
    def stats(self) -> dict: return {}
    def export(self, fmt: str = "json") -> str: return "{}"
    def purge(self) -> str: return "purged"
'''

_METHODS = {
    "Files": {"ls": ["path"], "cat": ["name"], "touch": ["name"], "rm": ["name"], "mv": ["source", "destination"],
              "grep": ["name", "pattern"], "wc": ["name", "mode"], "mkdir": ["name"]},
    "Messages": {"send": ["to", "text"], "read": ["index"], "search": ["keyword"], "delete": ["index"]},
    "Tickets": {"create": ["title", "priority"], "close": ["ticket_id"], "get": ["ticket_id"],
                "edit": ["ticket_id", "title"], "list_open": [], "assign": ["ticket_id", "user"],
                "escalate": ["ticket_id"], "comment": ["ticket_id", "text"], "history": ["ticket_id"],
                "reopen": ["ticket_id"], "stats": [], "export": ["fmt"], "purge": []},
}
_WORDS = ("report", "budget", "draft", "final", "notes", "summary", "invoice", "meeting", "plan", "review")


def _sentence(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(_WORDS) for _ in range(n))


def synthetic_task(index: int) -> dict[str, object]:
    """One BFCL-sized task: three components, 25 tools, per-turn expectations, ground truth in metadata."""
    rnd = random.Random(index)
    files = {f"{_sentence(rnd, 1)}_{j}.txt": _sentence(rnd, rnd.randint(5, 30)) for j in range(25)}
    inbox = [_sentence(rnd, 12) for _ in range(10)]
    queue = {str(k): {"title": _sentence(rnd, 4), "priority": rnd.randint(1, 5), "open": rnd.random() < 0.5}
             for k in range(10)}
    scenario = {"Files": files, "Messages": {"inbox": inbox}, "Tickets": {"queue": queue}}
    environment = [{"ref": f"envs.py:{name}", "name": name,
                    "setup": {"method": "_load_scenario", "args": {"scenario": scenario[name], "long_context": False}}}
                   for name in _METHODS]
    tools = [{"name": method, "description": f"{method}: {_sentence(rnd, 18)}",
              "parameters": {"type": "object",
                             "properties": {p: {"type": "integer" if p in ("index", "ticket_id", "priority")
                                                else "string", "description": _sentence(rnd, 8)} for p in params},
                             "required": params[:1]}}
             for methods in _METHODS.values() for method, params in methods.items()]
    turns = [_sentence(rnd, 15) for _ in range(3)]
    per_turn = [{"expected_state": {"Files": {"tree": dict(files)}, "Tickets": {"queue": dict(queue)}},
                 "expected_outputs": [_sentence(rnd, 6) for _ in range(3)]} for _ in turns]
    return {"id": f"synthetic_{index}", "pack": "synthetic", "system_prompt": "", "environment": environment,
            "tools": tools, "user": {"mode": "scripted", "turns": turns}, "max_steps_per_turn": 20,
            "argument_validation": "off",
            "metadata": {"ground_truth": [[f"cat(name='{_sentence(rnd, 1)}')"] for _ in turns], "version": "2026.3.23"},
            "grader": {"per_turn": per_turn}}


def write_pack(folder: Path, files: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "envs.py").write_text(ENVS)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    for i in range(files):
        text = yaml.dump(synthetic_task(i), Dumper=dumper, sort_keys=False, width=4096)
        (folder / f"synthetic_{i}.yaml").write_text(text)
    return folder


CHILD = """
import json, sys, time
from pathlib import Path
t0 = time.process_time()
from capplan.trials.driver import load_tasks
from capplan.trials.tasks.loading import load_task_text
if sys.argv[2] == "careful":
    import capplan.trials.tasks.task_source as ts
    ts.fast_data = lambda raw: None  # every file through the position-recording reader
t1 = time.process_time()
loaded = load_tasks(sorted(Path(sys.argv[1]).glob("*.yaml")))
t2 = time.process_time()
for task in loaded:
    load_task_text(task.text, str(task.path))
t3 = time.process_time()
print(json.dumps({"files": len(loaded), "import_cpu_s": t1 - t0, "load_cpu_s": t2 - t1, "second_cpu_s": t3 - t2}))
"""


def _child_cpu(command: list[str]) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False,
                          env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1, 2):  # lint: 1 warnings, 2 errors
        raise SystemExit(f"{' '.join(command[:4])}… failed ({done.returncode}): {done.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def measure(pack: Path, label: str) -> None:
    for mode in ("fast", "careful"):
        _, out = _child_cpu([sys.executable, "-c", CHILD, str(pack), mode])
        row = json.loads(out.strip().splitlines()[-1])
        name = "libyaml, positions on error" if mode == "fast" else "careful reader only (before)"
        print(f"{label:<22} {name:<30} {row['files']:>4} files  load {row['load_cpu_s']:6.2f} s CPU  "
              f"(import {row['import_cpu_s']:.2f} s, the runner's second load {row['second_cpu_s']:.3f} s)")
    cpu, _ = _child_cpu([str(Path(sys.executable).with_name("capplan")), "lint", *map(str, sorted(pack.glob("*.yaml")))])
    print(f"{label:<22} {'capplan lint (whole process)':<30} {len(list(pack.glob('*.yaml'))):>4} files  "
          f"{cpu:6.2f} s CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--keep", type=Path, help="write the packs here (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        started = time.monotonic()
        pack = write_pack(root / "synthetic", args.files)
        sizes = [p.stat().st_size for p in pack.glob("*.yaml")]
        print(f"synthetic pack: {len(sizes)} files, mean {sum(sizes) / len(sizes) / 1024:.1f} KB "
              f"(written in {time.monotonic() - started:.1f} s)")
        measure(pack, "synthetic")
        try:
            import bfcl_eval  # noqa: F401
        except ImportError:
            print("bfcl: skipped (install with: pip install --no-deps bfcl-eval==2026.3.23 mpmath==1.3.0)")
            return
        bfcl = root / "bfcl"
        _child_cpu([str(Path(sys.executable).with_name("capplan")), "trial", "import", "bfcl", "--category", "multi_turn_base",
                    "--out", str(bfcl)])
        measure(bfcl, "bfcl multi_turn_base")


if __name__ == "__main__":
    main()
