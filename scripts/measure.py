"""What the benchmark scripts share, so that both sides of every comparison are measured alike.

- `measured(argv)`: one command in a fresh process: its wall time and the peak memory of its whole
  process tree (the command and everything it starts, e.g. the gate's ONNX Runtime worker), RSS
  summed over the tree and sampled every 50 ms; PSS while a fork shares pages with its parent (the
  gate's float64 reference beside the export), so that no page counts twice, read at most every
  500 ms and only while the RSS could be a new peak (``PSS_SAMPLE_S``).
- `pairs(n, sides)`: the order of each side within round i (alternating, so neither side always
  runs first on a warm or a cold cache); `Spread`: the median of n paired ratios and their range.
- `host()`: the line every benchmark prints first: CPU model, CPUs, load average, versions, date.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import statistics
import subprocess
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

SAMPLE_S = 0.05
# Reading PSS walks every page table of the tree: about 50 ms of CPU per read on GPT-2's 2 GB (gate
# and forked reference). Every 50 ms that took 1.4 s of CPU from a 15 s check on 2 CPUs, and only
# from the side that forks; every 250 ms, 0.8 s; every 500 ms, 0.45-0.54 s (the recipe's: 0.1 s). PSS
# is at most RSS, so while the tree's RSS is no new peak the read is skipped.
PSS_SAMPLE_S = 0.5


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


def _forked(pids: list[int]) -> bool:
    """Whether a process of the tree is a fork of another that has not exec'd (the same command
    line): the two share pages copy-on-write, which RSS counts once in each."""
    lines = [_read(f"/proc/{p}/cmdline") for p in pids]
    return len(set(lines)) < len(lines)


def _pss(pid: int) -> int:
    for line in _read(f"/proc/{pid}/smaps_rollup").splitlines():
        if line.startswith(b"Pss:"):
            return int(line.split()[1]) * 1024
    return 0


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
    pss_reads: int = 0  # samples that read the tree's PSS (``PSS_SAMPLE_S``)
    sampler_cpu_s: float = 0.0  # CPU the sampling took from the machine the command ran on

    @property
    def peak_mib(self) -> float:
        return self.peak_bytes / 2**20

    @property
    def peak_gb(self) -> float:
        return self.peak_bytes / 1e9


class _Sampler:
    """The peak of a process tree, sampled every ``SAMPLE_S`` on a thread until the process exits: the
    sum of its processes' RSS, or, while one of them is a fork sharing pages with another, of their
    PSS (a shared page counts once in all), read as ``PSS_SAMPLE_S`` says. A process that ends while
    it is read counts for what was read. Pages of a shared library count once per process that maps
    it."""

    def __init__(self, proc: subprocess.Popen):
        self.proc, self.peak, self.pss_reads, self.cpu_s = proc, 0, 0, 0.0
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        last_pss = -PSS_SAMPLE_S
        while self.proc.poll() is None:
            pids = _tree(self.proc.pid)
            rss = _rss(pids)
            if len(pids) > 1 and _forked(pids):
                now = time.monotonic()
                if rss > self.peak and now - last_pss >= PSS_SAMPLE_S:
                    self.peak, last_pss = max(self.peak, sum(_pss(p) for p in pids)), now
                    self.pss_reads += 1
            else:
                self.peak = max(self.peak, rss)
            time.sleep(SAMPLE_S)
        self.cpu_s = time.thread_time()

    def done(self) -> int:
        self._thread.join()
        return self.peak


def peak_of(proc: subprocess.Popen) -> Callable[[], int]:
    """Sample the peak of ``proc``'s process tree on a thread until it exits (``_Sampler``); the
    call returned waits for the sampler and gives the peak in bytes."""
    return _Sampler(proc).done


def measured(argv: list[str], cwd: Path, env: dict | None = None, ok: tuple[int, ...] = (0, 1)) -> Run:
    """Run ``argv`` in ``cwd``; its wall time and the peak RSS of its process tree. An exit code
    outside ``ok`` stops the benchmark with the command's stderr."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    sampler = _Sampler(proc)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(argv[:4])} failed ({proc.returncode}):\n{err[-3000:]}")
    done = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    return Run(wall, sampler.done(), done, sampler.pss_reads, sampler.cpu_s)


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
          ("float64 ref", r": float64 reference on torch-cpu$"), ("torch", r": torch-cpu float32$"),
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


def fingerprint_seconds(profile: Path) -> float:
    """Seconds spent in the fingerprint function over every process of a run made with
    PARITY_GATE_PROFILE=profile (gate.fingerprint.profile)."""
    if not profile.exists():
        return 0.0
    return sum(float(line.split()[2]) for line in profile.read_text().splitlines() if line.split()[1] == "fingerprint")
