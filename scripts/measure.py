"""What the benchmark scripts share, so that both sides of every comparison are measured alike.

- `measured(argv)`: one command in a fresh process: its wall time and the peak memory of its whole
  process tree (the command and everything it starts: the gate's ONNX Runtime worker, its forked float64
  reference). `started(argv)` starts one so measured and gives its peak once it has ended.
- `own_cache()`: the benchmark run's own store folder (``PARITY_GATE_CACHE_DIR``), never the user's.
- `pairs(n, sides)`: the order of each side within round i (alternating, so neither side always
  runs first on a warm or a cold cache); `Spread`: the median of n paired ratios and their range.
- `host()`: the line every benchmark prints first: CPU model, CPUs, load average, versions, date.

How the peak is measured. Each command runs in a fresh v1 memory cgroup of its own, made a child of
this process's (``/proc/self/cgroup``, the line with ``memory``; creating one needs root) and removed
after it: a small ``sh`` moves itself into the group and execs the command, so the command and all it
starts are charged there, and ``memory.max_usage_in_bytes`` after the run is the kernel's own high-water
mark of the tree, whatever its processes and however short the peak: a page a forked child shares with
its parent is charged once, both sides of a comparison are measured the same way, and nothing is
sampled. The charge is the memory the tree allocates and the page cache it brings in (the files it
writes, and those it reads that were not cached yet); pages already in the page cache from earlier runs
are not charged again. Where no v1 memory cgroup is writable the benchmark stops with an error, unless
``BENCH_PEAK=sampled`` asks for the old method: the summed RSS of the tree every 50 ms, which counts a
page a forked child shares with its parent twice.
"""

from __future__ import annotations

import atexit
import datetime
import itertools
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

CACHE_ENV = "PARITY_GATE_CACHE_DIR"
PEAK_ENV = "BENCH_PEAK"  # "sampled": the old sampler, where no v1 memory cgroup is writable
SAMPLE_S = 0.05  # the sampler's interval
_GROUPS = itertools.count()


# The whole-output recipe every benchmark times the gate against, after its script has set ``model``
# (eval mode) and ``x``: export to a file, one torch run, one ONNX Runtime run from the file, allclose.
RECIPE_RUN = textwrap.dedent("""
    with torch.no_grad():
        torch.onnx.export(model, (x,), "recipe.onnx", dynamo=True, external_data=True)
        out = model(x)
        expected = (out if isinstance(out, torch.Tensor) else out[0]).numpy()
    sess = ort.InferenceSession("recipe.onnx", providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    print("allclose", np.allclose(expected, got, rtol=1e-3, atol=1e-4))
""")


def _tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (Linux /proc)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return found


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _rss(pids: list[int]) -> int:
    page, total = os.sysconf("SC_PAGE_SIZE"), 0
    for p in pids:
        raw = _read(f"/proc/{p}/statm").split()
        total += int(raw[1]) * page if len(raw) > 1 else 0
    return total


@dataclass
class Run:
    wall_s: float
    peak_bytes: int
    proc: subprocess.CompletedProcess
    cpu_s: float = 0.0  # user + system over the process tree (every process reaped by its parent)

    @property
    def peak_mib(self) -> float:
        return self.peak_bytes / 2**20

    @property
    def peak_gb(self) -> float:
        return self.peak_bytes / 1e9


class _Sampler:
    """``BENCH_PEAK=sampled``: the summed RSS of a process tree every ``SAMPLE_S`` on a thread until the
    process exits (a page a fork shares with its parent counts in both)."""

    def __init__(self, proc: subprocess.Popen):
        self.proc, self.peak = proc, 0
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while self.proc.poll() is None:
            self.peak = max(self.peak, _rss(_tree(self.proc.pid)))
            time.sleep(SAMPLE_S)

    def done(self) -> int:
        self._thread.join()
        return self.peak


def _memory_cgroup() -> Path:
    """This process's v1 memory cgroup folder, where it is writable; else the benchmark stops."""
    rel = next((line.split(":", 2)[2] for line in _read("/proc/self/cgroup").decode().splitlines()
                if "memory" in line.split(":", 2)[1].split(",")), None)
    mounts = [line.split() for line in _read("/proc/self/mountinfo").decode().splitlines()]
    mount = next((m for m in mounts
                  if "-" in m and m[m.index("-") + 1] == "cgroup" and "memory" in m[-1].split(",")), None)
    folder = None
    if rel is not None and mount is not None:
        root, point = mount[3], mount[4]
        folder = Path(point) / os.path.relpath(rel, root)
    if folder is None or not (folder / "memory.max_usage_in_bytes").is_file() \
            or not os.access(folder, os.W_OK):
        raise SystemExit(f"measure: no writable v1 memory cgroup for this process (its memory cgroup: {rel}; "
                         f"folder: {folder}): run as root on a cgroup v1 host, or set {PEAK_ENV}=sampled for "
                         "the 50 ms RSS sampler, which counts pages a fork shares with its parent twice")
    return folder


class _Group:
    """A fresh memory cgroup for one command: ``argv`` starts it inside, ``peak`` (after it ended) reads
    its high-water mark and removes the group."""

    def __init__(self) -> None:
        self.path = _memory_cgroup() / f"parity-gate-measure-{os.getpid()}-{next(_GROUPS)}"
        self.path.mkdir()

    def argv(self, argv: list[str]) -> list[str]:
        return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.path), *argv]

    def peak(self) -> int:
        try:
            return int((self.path / "memory.max_usage_in_bytes").read_text())
        finally:
            self.remove()

    def remove(self) -> None:
        for _ in range(100):  # what the command left running (a daemon it started) ends with it
            try:
                self.path.rmdir()
                return
            except OSError:
                for pid in _read(str(self.path / "cgroup.procs")).split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.01)
        raise SystemExit(f"measure: could not remove {self.path}")


def _sampled() -> bool:
    """Whether the caller asked for the sampler (``BENCH_PEAK=sampled``) rather than a cgroup."""
    value = os.environ.get(PEAK_ENV, "")
    if value not in ("", "cgroup", "sampled"):
        raise SystemExit(f"measure: {PEAK_ENV}={value!r}: expected cgroup (the default) or sampled")
    return value == "sampled"


def started(argv: list[str], **popen) -> tuple[subprocess.Popen, Callable[[], int]]:
    """``argv`` started (``popen``: Popen's arguments) with its peak measured; the function returned
    gives that peak in bytes once the process has ended."""
    if _sampled():
        proc = subprocess.Popen(argv, **popen)
        return proc, _Sampler(proc).done
    group = _Group()
    try:
        return subprocess.Popen(group.argv(argv), **popen), group.peak
    except BaseException:
        group.remove()
        raise


def measured(argv: list[str], cwd: Path, env: dict | None = None, ok: tuple[int, ...] = (0, 1)) -> Run:
    """Run ``argv`` in ``cwd``; its wall time, CPU time and the peak memory of its process tree. An exit
    code outside ``ok`` stops the benchmark with the command's stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc, peak = started(argv, cwd=cwd, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    peak_bytes = peak()
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(argv[:4])} failed ({proc.returncode}):\n{err[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return Run(wall, peak_bytes, subprocess.CompletedProcess(argv, proc.returncode, out, err), cpu)


def peak_said() -> str:
    """How the peaks of this run are taken, for a benchmark's header."""
    if _sampled():
        return f"peak = RSS summed over the process tree, every {SAMPLE_S * 1000:g} ms ({PEAK_ENV}=sampled)"
    return "peak = the process tree's high-water mark in a memory cgroup of its own (scripts/measure.py)"


def own_cache() -> Path | None:
    """The benchmark run's store folder: ``PARITY_GATE_CACHE_DIR`` where the caller set it, else a fresh
    temporary folder, kept for the run (what a benchmark of reuse fills and reads) and removed at exit.
    Set in this process's environment, so the gate here and every command it starts use it, never the
    user's ``~/.cache/parity-gate``. Every benchmark calls it first. So also the fingerprint kernel users
    run (``PARITY_GATE_BACKEND=native`` unless the caller chose): a checkout without a built kernel (a fresh
    clone: ``python gate/fingerprint/_build.py`` there) stops with the gate's error, never measures the
    several times slower NumPy fingerprint in silence."""
    os.environ.setdefault("PARITY_GATE_BACKEND", "native")
    if CACHE_ENV not in os.environ:
        folder = tempfile.mkdtemp(prefix="parity-gate-bench-cache-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        os.environ[CACHE_ENV] = folder
    value = os.environ[CACHE_ENV]
    return None if value.strip().lower() in ("", "off", "none", "0") else Path(value)


def pairs(n: int, sides: tuple[str, str]) -> list[tuple[str, str]]:
    """The order of the two sides in each of ``n`` rounds: A B, B A, A B, ..."""
    a, b = sides
    return [(a, b) if i % 2 == 0 else (b, a) for i in range(n)]


@dataclass(frozen=True)
class Spread:
    """A ratio measured as n paired runs: the median and the range of the n ratios."""

    values: tuple[float, ...]

    @classmethod
    def of(cls, num: list[float], den: list[float]) -> Spread:
        return cls(tuple(a / b for a, b in zip(num, den, strict=True)))

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def fmt(self, digits: int = 2, unit: str = "x") -> str:
        """``1.18x (1.15-1.21, 3 pairs)``; one value is printed as what it is, a single run."""
        if len(self.values) == 1:
            return f"{self.values[0]:.{digits}f}{unit} (1 run)"
        sep = " to " if min(self.values) < 0 else "-"
        return (f"{self.median:.{digits}f}{unit} ({min(self.values):.{digits}f}{sep}{max(self.values):.{digits}f}, "
                f"{len(self.values)} pairs)")


def cpu_model() -> str:
    """The CPU as /proc/cpuinfo (or macOS sysctl) names it, with what tells models apart:
    x86 family/model/stepping and AVX-512, or the Arm implementer and part numbers."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    if "model name" in fields:
        flags = fields.get("flags", "").split()
        isa = ", ".join(f"{'' if x in flags else 'no '}{x}" for x in ("avx2", "avx512f"))
        return (
            f"{fields['model name']} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')}, "
            f"stepping {fields.get('stepping', '?')}; {isa})"
        )
    if "CPU part" in fields:  # Linux on Arm names no model: implementer 0x41 = Arm, part 0xd0c = Neoverse N1 ...
        return f"Arm CPU (implementer {fields.get('CPU implementer', '?')}, part {fields['CPU part']})"
    try:
        brand = subprocess.run(
            ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except OSError:
        brand = ""
    return brand or platform.processor() or platform.machine()


def versions(*dists: str) -> str:
    out = []
    for d in dists:
        try:
            out.append(f"{d} {metadata.version(d)}")
        except metadata.PackageNotFoundError:
            pass
    return ", ".join(out)


def host(*dists: str) -> str:
    """CPU, CPUs, memory, load average, the given distributions' versions, and the date (UTC)."""
    try:
        mem = f", {os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GiB"
    except (ValueError, OSError):
        mem = ""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"cpu: {cpu_model()}, {os.cpu_count()} CPUs ({platform.machine()}){mem}; load average "
            f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {versions(*dists)}; {when}")


# The gate's own progress lines (gate.core.progress): "  <stage> — 12.3 s" when a stage ends.
STAGES = (("build", r": building$"), ("probe", r": float32 forward on torch-cpu, traced"),
          ("export", r": exporting to ONNX$"), ("transform", r": transform `"),
          ("float64 ref", r": float64 reference on torch-cpu(,|$)"), ("torch", r": torch-cpu float32$"),
          ("ORT", r": CPUExecutionProvider$"), ("compare", r": comparing with the baseline$"))
_TIMED = re.compile(r"^\s+(.*) — ([0-9.]+) s$")


def stage_seconds(stderr: str) -> dict[str, float]:
    """Seconds per stage of one `check`, from its progress lines (summed over models)."""
    out = {name: 0.0 for name, _ in STAGES}
    for line in stderr.splitlines():
        m = _TIMED.match(line)
        if m:
            for name, pattern in STAGES:
                if re.search(pattern, m.group(1)):
                    out[name] += float(m.group(2))
    return out


REFERENCE_STAGE = ": float64 reference on torch-cpu"
_EXPORT_STAGES = (": exporting to ONNX", ": the structure from the store, these weights bound")
BESIDE = "beside the export"  # how the reference's progress line ends where a forked child ran it


def path_taken(report: dict, stderr: str) -> str:
    """The path one `check` took, from its report and its progress lines: each stage's state (``hit``:
    taken under its key), why the reference ran, and where it ran (beside the export in a forked
    child, after it because that child was stopped, before it, or after a graph from the store)."""
    reuse = (report["models"][0].get("reuse") or {}) if report.get("models") else {}
    said = ", ".join(f"{s['stage']} {s['state']}" for s in reuse.get("stages", []))
    said += f" (reference: {reuse['why']})" if reuse.get("why") else ""
    timed = [m.group(1) for m in map(_TIMED.match, stderr.splitlines()) if m]
    ran = [t for t in timed if REFERENCE_STAGE in t]
    if ran:
        exported = [i for i, t in enumerate(timed) if any(s in t for s in _EXPORT_STAGES)]
        first = bool(exported) and timed.index(ran[0]) < exported[0]
        where = ("beside the export" if BESIDE in ran[-1] else "before the export" if first
                 else "after the export")
        stopped = " (the child stopped)" if len(ran) > 1 and any(BESIDE in r for r in ran) else ""
        said += f"{', ' if said else ''}reference {where}{stopped}"
    return said
