"""The words a run and its verdict are told in: one vocabulary for every module, report and file.

Each is a ``str`` enum: a member equals, hashes and formats as its value, so reports and result
files keep their bytes, a word read from a file compares with a member directly, and a reader
checks a field against ``Enum.values()``. No module keeps a list of these words of its own.
"""

from __future__ import annotations

from enum import Enum


class Word(str, Enum):
    """A member is its value: ``str()``, f-strings and ``format`` give the value on every Python."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @classmethod
    def values(cls) -> tuple[str, ...]:
        return tuple(m.value for m in cls)


class RunStatus(Word):
    """How a target's run ended: it ran, it could not run here (``SkipKind`` says why), or it
    failed (``ErrorStatus`` says how)."""

    OK = "ok"
    SKIPPED = "skipped"
    ERROR = "error"


class SkipKind(Word):
    """Why a target did not run: a decision, or a runtime that is not here."""

    UNAVAILABLE = "unavailable"  # the provider cannot run on this machine (not installed, no device)
    SWEEP = "sweep"  # the sweep's `skip` table excludes this case on this provider
    UNRUN = "unrun"  # no result file holds it: its runner did not run (a matrix leg)


class ErrorStatus(Word):
    """How a model or a target failed: the report's words for it."""

    BUILD_FAIL = "BUILD_FAIL"
    EXPORT_FAIL = "EXPORT_FAIL"
    LOAD_FAIL = "LOAD_FAIL"
    INFER_FAIL = "INFER_FAIL"
    TIMEOUT = "TIMEOUT"
    CRASH = "CRASH"
    EMPTY = "EMPTY"  # nothing to check: the model has no layer
    NO_RESULT = "NO_RESULT"  # no result file holds the model
    NO_GPU = "NO_GPU"  # every configured GPU provider was unavailable on a GPU leg
    BAD_BASELINE = "BAD_BASELINE"  # its baseline file cannot judge it: unreadable, or of something else


class LayerStatus(Word):
    """A layer on a runtime: observed, fused into a neighbour, or without a value."""

    OK = "ok"
    FOLDED = "folded"
    ABSENT = "absent"


class DataDependence(Word):
    """How a layer was recognised as one whose shape depends on the input's values (a score
    threshold, NMS, ``nonzero``, a boolean mask): such a layer keeps a different number of
    elements in float32 than in float64, and is judged by the rules for it (docs/verdict.md)."""

    OP = "op"  # the reference run saw an operation with a value-dependent output size feed it
    RUNS = "runs"  # a runtime gave it another leading size than the float64 reference


class SiteKind(Word):
    """Where a layer's value lives in the shipped ONNX graph."""

    VALUE = "value"
    OUTPUT = "output"
    FOLDED = "folded"
    ABSENT = "absent"


class Verdict(Word):
    PASS = "pass"
    REGRESSED = "regressed"
    ERROR = "error"

    @property
    def exit_code(self) -> int:
        """0 pass, 1 regression (a missing baseline counts), 3 a model failed (2 is a usage,
        configuration or file-format error: raised before any verdict, or a model's ``BAD_BASELINE``,
        ``Report.exit_code``)."""
        return {"pass": 0, "regressed": 1, "error": 3}[self.value]


class ModelStatus(Word):
    PASS = "pass"
    REGRESSED = "regressed"
    NO_BASELINE = "no-baseline"
    ERROR = "error"


class TargetStatus(Word):
    PASS = "pass"
    REGRESSED = "regressed"
    NO_BASELINE = "no-baseline"
    SKIPPED = "skipped"
    ERROR = "error"


class StepKind(Word):
    """What a model that did not pass needs next (``gate.verdict.next_step`` decides; the console, the
    comment, the JSON report and JUnit say it)."""

    MODEL_CHANGED = "model-changed"  # the float64 reference moved: re-create the baseline if intended
    WEIGHTS_CHANGED = "weights-changed"  # the reference moved, only weights changed: re-create if intended
    RANDOM_DRAWS = "random-draws"  # the forward draws random numbers: make it deterministic, never re-record
    DEGENERATE = "degenerate"  # the outputs carry no information on these inputs: never re-record
    TRAINING_MODE = "training-mode"  # modules left in training mode change the outputs: eval() in the factory
    RUNTIME_CHANGED = "runtime-changed"  # the reference held, a runtime moved: investigate the graph or EP
    RUNTIME_AUDIT = "runtime-audit"  # an unchanged model failed a provider's audit (latency, placement)
    DYNAMIC_SHAPE = "dynamic-shape"  # the shipped graph keeps a dimension static: declare it, or re-record
    LAYER_TOLERANCES = "layer-tolerances"  # a layer-tolerances rule matches no layer: fix its glob
    OUTPUT_TOLERANCE = "output-tolerance"  # only output-tolerance's allclose failed: tighter than float32
    ARTIFACT_DIFFERS = "artifact-differs"  # the prebuilt artifact computes another model: rebuild it
    GRAPH_DIFFERS = "graph-differs"  # the exported graph computes something else than the model: never loosen
    PRECISION_CHANGED = "precision-changed"  # the graph computes below float32 where nobody configured it
    NO_BASELINE = "no-baseline"  # record the baseline
    NO_ENTRY = "no-entry"  # record one provider's entry, on a runner that has it
    BAD_BASELINE = "bad-baseline"  # its baseline file is damaged or another model's: restore it
    STALE_BASELINE = "stale-baseline"  # its baseline's format, inputs or parameters are old: re-record
    RESTORE = "restore"  # the change deleted or damaged its baseline file: restore it from the base
    UPGRADE = "upgrade"  # its baseline file is a newer parity-gate's: upgrade this one to read it
    MODEL_FAILED = "model-failed"  # the model failed to build, export or run: reproduce
    PROVIDER_FAILED = "provider-failed"  # one provider failed while running: reproduce on its runner
    LOAD_FAIL = "load-fail"  # a provider failed to load: doctor on its runner
    NO_GPU = "no-gpu"  # no configured GPU provider could run on a GPU leg
    RECORD_ELSEWHERE = "record-elsewhere"  # a provider not here has no baseline entry: record it where it runs
    NO_RESULT = "no-result"  # no result file holds it: its matrix leg uploaded nothing
    REFACTORED = "refactored"  # it passed, with layers that moved inside modules whose outputs hold: re-record


class RowStatus(Word):
    PASS = "pass"
    FAIL = "fail"
    NEW = "new"  # not in the baseline
    MISSING = "missing"  # in the baseline, did not run
    MOVED = "moved"  # its value moved inside a module whose output holds: a refactor inside it, not failed
    FOLLOWS = "follows"  # a runtime's error moved with the model change the reference names: not a finding
    FOLDED = "folded"
    ABSENT = "absent"


class Role(Word):
    REFERENCE = "reference"
    RUNTIME = "runtime"


class AuditStatus(Word):
    WARN = "warn"
    FAIL = "fail"


class Check(Word):
    """What judged a row, an audit or a regression (docs/verdict.md)."""

    STRUCTURE = "structure"
    SHAPE = "shape"
    DTYPE = "dtype"  # a runtime's model output is of another dtype than its baseline's: what ships changed
    NONFINITE = "nonfinite"
    DEGENERATE = "degenerate"
    REFERENCE_DRIFT = "reference-drift"
    ERROR_GROWTH = "error-growth"
    CEILING = "ceiling"
    ALLCLOSE = "allclose"
    # Rules for a runtime's layer whose shape depends on values (DataDependence).
    DETECTIONS = "detections"  # boxes matched by IoU and label, then their scores compared
    RECORDED = "recorded"  # the runtime gives what its baseline entry recorded, and the reference has not moved
    DISTRIBUTION = "distribution"  # the values as an unordered set: quantiles and mean
    # Audits of a target or a model.
    PLACEMENT = "placement"
    SESSION_OPTIONS = "session-options"
    LATENCY = "latency"
    DYNAMIC_SHAPE = "dynamic-shape"
    TRAINING_MODE = "training-mode"
    CONTRADICTION = "contradiction"  # the reference moved before the only change (its tensors) could reach it
    PRECISION = "precision"  # the shipped graph computes below float32 where nobody configured it
    PRECISION_LABEL = "precision-label"  # a configured precision its errors show it never computed in
    RANDOM_DRAWS = "random-draws"  # the forward draws random numbers: no two runs compute the same
    COVERAGE = "coverage"  # layers a runtime compared in the baseline have no value in the graph now
    LAYER_TOLERANCES = "layer-tolerances"  # a rule whose glob matches no layer: its limits apply nowhere
    WEIGHTS_UNSEEN = "weights-unseen"  # tensors' values changed, and no reference layer moved past its limit
    CASTS = "casts"  # the model's own casts to a lower precision changed per module call
    OUTPUT_ORDER = "output-order"  # the same outputs in another order: the shipped graph's are positional
    # A sweep's comparisons of outputs.
    PAIR = "pair"
    ANCHOR = "anchor"


# Checks by what they say, in one table each (docs/verdict.md).
DATA_DEPENDENT_RULES = frozenset({Check.DETECTIONS, Check.RECORDED, Check.DISTRIBUTION})  # shapes that depend on values
RUNTIME_ERROR_CHECKS = frozenset({Check.ERROR_GROWTH, Check.CEILING})  # a runtime's relative error to the reference
# a row whose value is no error against the reference (a nonfinite row's: NaN/Inf counts)
NOT_AN_ERROR = DATA_DEPENDENT_RULES | {Check.STRUCTURE, Check.NONFINITE}
AUDITS = frozenset({Check.PLACEMENT, Check.SESSION_OPTIONS, Check.LATENCY, Check.DYNAMIC_SHAPE,  # of a whole
                    Check.TRAINING_MODE, Check.CONTRADICTION, Check.PRECISION, Check.RANDOM_DRAWS,  # target
                    Check.COVERAGE, Check.PRECISION_LABEL, Check.LAYER_TOLERANCES, Check.WEIGHTS_UNSEEN,
                    Check.CASTS, Check.OUTPUT_ORDER})


class CellStatus(Word):
    """A sweep cell's status (or, not one of these, the ErrorStatus of a model or target that failed)."""

    OK = "ok"
    REGRESSED = "regressed"
    FALLBACK = "fallback"
    NO_BASELINE = "no-baseline"
    SKIPPED = "skipped"
    ERROR = "error"


class ComparisonStatus(Word):
    PASS = "pass"
    FAIL = "fail"
    UNMEASURED = "unmeasured"


class KeyPart(Word):
    """A part of a model's content key (docs/verdict.md#stages): what it digests."""

    CODE = "code"  # the ATen operation trace of one float32 forward
    SOURCE = "source"  # the model's own source files (and the factory's, the inputs')
    WEIGHTS = "weights"  # parameters and buffers
    INPUTS = "inputs"
    EXPORT = "export"  # exporter, opset, dynamic shapes, input names, a prebuilt artifact's bytes
    TRANSFORM = "transform"  # the post-export transform and its source
    REFERENCE = "reference"  # promotion, gradients, the fingerprint's parameters
    VERSIONS = "versions"  # the packages each reused stage runs
    GATE = "gate"  # parity-gate's own version and source


class Stage(Word):
    """A stage of one model's pipeline, in the order they run (docs/verdict.md#stages). Build,
    probe, providers and judge run every time; structure, export, transform and reference are reused
    under a key made of exactly what they read (``gate.pipeline.content_key.STAGE_PARTS``)."""

    BUILD = "build"  # the factory and the inputs (user code)
    PROBE = "probe"  # one traced float32 forward: the content key, and torch-cpu's float32 run
    STRUCTURE = "structure"  # the exporter's graph before optimization, without weights, and its layer map
    EXPORT = "export"  # torch -> ONNX (or the structure with these weights, optimized), and the layer map
    TRANSFORM = "transform"  # the user's post-export transform: what ships
    REFERENCE = "reference"  # the float64 reference
    PROVIDERS = "providers"
    JUDGE = "judge"


class FullWhy(Word):
    """Why the float64 reference ran instead of coming from the baseline."""

    FORCED = "forced"  # --full / PARITY_GATE_FULL
    UPDATE = "update"  # update-baseline always runs the whole path
    NO_BASELINE = "no-baseline"
    NO_KEY = "no-key"  # the baseline predates content keys, or was made from result files
    REWRITTEN = "rewritten"  # the change under check rewrote the baseline: its keys cannot vouch for it
    KEY_CHANGED = "key-changed"
    UNKEYABLE = "unkeyable"  # the forward failed or draws random numbers: no key can vouch for it
    OUTPUTS = "outputs"  # output-tolerance gates on the float64 outputs, which are not cached
    GRADIENTS = "gradients"  # gradients = true: the backward pass is not in the op trace
    TRAINING = "training"  # modules left in training mode: their training-mode forward is not traced
    ALARM = "alarm"  # this key once gave a second, different output here: never reused again


class CacheState(Word):
    """Where a stage's output came from: the store under its key, or computed (and why)."""

    HIT = "hit"  # read from the store under its key: the stage did not run
    MISS = "miss"  # no entry: computed, and stored
    CORRUPT = "corrupt"  # an entry that failed its checks: computed, and replaced
    BYPASSED = "bypassed"  # not read (--full, update-baseline); computed, stored where new
    OFF = "off"  # no store folder (PARITY_GATE_CACHE_DIR=off)
    ALARM = "alarm"  # the key once gave a second, different output here: computed, never stored or read again
    UNKEYED = "unkeyed"  # no key: user code whose inputs the gate cannot see, or the probe failed


class ChangeKind(Word):
    """What a pull request changes that decides its own verdict (``gate.github.changes``)."""

    BASELINES = "baselines"
    CONFIG = "config"  # the gate's settings: tolerances, models, providers, allow-missing-gpu, sweeps
    CONSTRAINTS = "constraints"  # the versions the gate installs and runs with
    WORKFLOWS = "workflows"  # the workflow that measures: its inputs choose providers and models


class ApprovalState(Word):
    """Whether a pull request's baseline change may merge (``gate.github.approval``)."""

    APPROVED = "approved"
    PENDING = "pending"
    UNKNOWN = "unknown"  # the API could not tell: blocks like pending


class NotCounted(Word):
    """Why a label or a review did not approve the judged commit."""

    AUTHOR = "author"  # given by the pull request's author
    NO_WRITE = "no-write"  # by someone without write access (read, triage, none)
    OTHER_COMMIT = "other-commit"  # a review of another commit
    BEFORE_PUSH = "before-push"  # a label added while another commit was the head
    NO_PUSH_TIME = "no-push-time"  # a label whose time cannot be placed among the branch's pushes
    PUSHER = "pusher"  # by whoever pushed the judged commit (to someone else's pull request)
