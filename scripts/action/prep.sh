#!/usr/bin/env bash
# action.yml "Check inputs": validate the inputs, then name this leg and everything derived from it.
# Inputs arrive as environment variables (never interpolated into the script).
set -euo pipefail
fail() { echo "::error title=parity-gate::$1"; exit 2; }
case "$MODE" in check|export|collect|report|comment|update-baseline) ;; *) fail "input mode is '$MODE'; expected check, export, collect, report, comment or update-baseline";; esac
case "$COMMENT" in auto|always|on-change|never) ;; *) fail "input comment is '$COMMENT'; expected auto, always, on-change or never";; esac
case "$FAIL_ON" in regression|never) ;; *) fail "input fail-on is '$FAIL_ON'; expected regression or never";; esac
case "$BASELINE_CHANGES" in comment|require-approval) ;; *) fail "input baseline-changes is '$BASELINE_CHANGES'; expected comment or require-approval";; esac
case "$TORCH_BUILD" in auto|cpu|default) ;; *) fail "input torch-build is '$TORCH_BUILD'; expected auto, cpu or default";; esac
case "$CACHE" in true|false) ;; *) fail "input cache is '$CACHE'; expected true or false";; esac
case "$FULL" in true|false) ;; *) fail "input full is '$FULL'; expected true or false";; esac
case "$EXPORT_CACHE" in true|false) ;; *) fail "input export-cache is '$EXPORT_CACHE'; expected true or false";; esac
case "$ALLOW_MISSING_GPU" in true|false) ;; *) fail "input allow-missing-gpu is '$ALLOW_MISSING_GPU'; expected true or false";; esac
# A sharded run: legs of mode check each run shard K of N; the judging job (mode comment) merges N reports.
# A sharded re-recording: legs of mode update-baseline each record shard K of N; one without shard merges.
number() { case "$1" in ''|*[!0-9]*) return 1;; esac; [ "${#1}" -le 3 ] && [ "$((10#$1))" -ge 1 ]; }
if [ -n "$SHARD" ] || [ -n "$SHARDS" ]; then
  number "$SHARDS" && [ "$((10#$SHARDS))" -le 256 ] || fail "input shards is '$SHARDS'; expected how many shards the models are cut into, 1 to 256"
  SHARDS=$((10#$SHARDS))
  case "$MODE" in
    check)
      number "$SHARD" && [ "$((10#$SHARD))" -le "$SHARDS" ] || fail "input shard is '$SHARD'; expected this leg's shard, 1 to $SHARDS (shards), e.g. from the matrix"
      SHARD=$((10#$SHARD)) ;;
    comment)
      [ -z "$SHARD" ] || fail "input shard is '$SHARD': mode comment merges every shard's report; give it shards only"
      [ -z "$REPORT_JSON" ] || fail "mode comment with shards merges the legs' reports: give report-artifact (their name's prefix) or shard-reports (a folder of them), not report-json" ;;
    update-baseline)
      if [ -n "$SHARD" ]; then
        number "$SHARD" && [ "$((10#$SHARD))" -le "$SHARDS" ] || fail "input shard is '$SHARD'; expected this leg's shard, 1 to $SHARDS (shards), e.g. from the matrix"
        SHARD=$((10#$SHARD))
      fi ;;
    *) fail "inputs shard and shards apply to modes check and update-baseline (a leg) and comment (the merge), not to mode $MODE" ;;
  esac
elif [ -n "$SHARD_REPORTS" ]; then
  fail "input shard-reports is set but shards is not: give shards, how many legs' reports to merge"
fi
if [ "$MODE" = comment ] && [ -z "$REPORT_JSON" ] && [ -z "$REPORT_ARTIFACT" ] && [ -z "$SHARDS" ]; then
  fail "mode comment needs the report to post: the report-artifact input (an artifact of this run) or report-json (a file)"
fi
if [ -n "$PYTHON_PATH" ] && [ ! -x "$PYTHON_PATH" ] && ! command -v "$PYTHON_PATH" > /dev/null; then
  fail "input python-path is '$PYTHON_PATH', which is not an executable"
fi
if [ -n "$VENV_PATH" ] && [ ! -x "$VENV_PATH/bin/parity-gate" ] && [ ! -f "$VENV_PATH/Scripts/parity-gate.exe" ]; then
  fail "input venv-path is '$VENV_PATH', which holds no bin/parity-gate (Scripts\\parity-gate.exe on Windows)"
fi

abs() { case "$1" in /*|[A-Za-z]:[\\/]*) printf '%s' "$1";; *) printf '%s/%s' "$PWD" "$1";; esac; }
slug() { printf '%s' "$1" | tr -cs 'A-Za-z0-9._-' '-' | sed 's/^-*//; s/-*$//' | cut -c1-80; }

# The constraints file pins torch, onnxruntime, ...: the input, else the one `parity-gate init` writes.
# Mode comment (judging and commenting) takes only a file named by the input: it must not install what a
# checked-out pull request asks for. Its pins are checked and copied as pip reads them (gate/github/pins.py,
# from install.py), so pip never reads the file itself.
if [ -n "$CONSTRAINTS" ]; then
  [ -f "$CONSTRAINTS" ] || fail "input constraints is '$CONSTRAINTS', which does not exist (relative to working-directory)"
  constraints="$(abs "$CONSTRAINTS")"
elif [ "$MODE" != comment ] && [ -f parity-gate-constraints.txt ]; then
  constraints="$PWD/parity-gate-constraints.txt"
else
  constraints=""
fi

# This leg of a matrix: the job, the runner's OS and architecture, the providers and models it runs,
# or what matrix-key says; and its shard. It names the comment and the artifacts, so legs never share them.
shard="" shard_tag=""
if [ -n "$SHARDS" ] && [ -n "$SHARD" ]; then shard="$SHARD/$SHARDS" shard_tag="-shard-$SHARD-of-$SHARDS"; fi
leg="$(slug "${MATRIX_KEY:-$JOB-$RUNNER_OS-$RUNNER_ARCH${PROVIDERS:+-$PROVIDERS}${MODELS:+-$MODELS}}")$shard_tag"
job_label="$JOB on $RUNNER_OS $RUNNER_ARCH${MATRIX_KEY:+ ($MATRIX_KEY)}${shard:+ (shard $shard)}"
artifact="${ARTIFACT_NAME:-$ARTIFACT_PREFIX-$leg-a${GITHUB_RUN_ATTEMPT:-1}}"
report_artifact="${REPORT_ARTIFACT:-parity-gate-report-$leg}"
# A leg's report artifact carries its shard and attempt: the merge takes each shard's latest attempt.
if [ -n "$shard" ]; then report_artifact="${REPORT_ARTIFACT:-parity-gate-report}$shard_tag-a${GITHUB_RUN_ATTEMPT:-1}"; fi

out="$RUNNER_TEMP/parity-gate"
mkdir -p "$out"
report_json="${REPORT_JSON:-$out/report.json}"
download=""
if [ "$MODE" = comment ] && [ -z "$REPORT_JSON" ]; then
  # The report comes from another job, which ran the pull request's code: a fresh folder, read as data.
  download="$out/untrusted"
  rm -rf "$download"
  report_json="$download/report.json"
fi
legs="" legs_download=""
if [ "$MODE" = comment ] && [ -n "$SHARDS" ]; then
  # The legs ran the pull request's code: their reports land in a fresh folder and are merged as data.
  download="" report_json="$out/merged.json"
  rm -f "$report_json"
  if [ -n "$SHARD_REPORTS" ]; then
    [ -d "$SHARD_REPORTS" ] || fail "input shard-reports is '$SHARD_REPORTS', which is not a folder (relative to working-directory)"
    legs="$(abs "$SHARD_REPORTS")"
  else
    legs="$out/untrusted-legs" legs_download="$out/untrusted-legs"
    rm -rf "$legs" && mkdir -p "$legs"
  fi
  job_label="$job_label, $SHARDS shards merged"
fi
share=""
if [ "$MODE" = update-baseline ] && [ -n "$shard" ]; then share="$out/share" && rm -rf "$share"; fi
if [ "$MODE" = update-baseline ] && [ -n "$SHARDS" ] && [ -z "$shard" ]; then
  legs="$out/shares" legs_download="$out/shares"
  rm -rf "$legs" && mkdir -p "$legs"
fi
# No cache in mode comment: an entry can be saved by any job of the pull request, one running its code
# included, and restoring it here would run that code with this job's token. None with venv-path either.
cache="$CACHE"
if [ "$MODE" = comment ] || [ -n "$VENV_PATH" ]; then cache=false; fi
{
  echo "report-json=$(abs "$report_json")"
  echo "report-markdown=$(abs "${REPORT_MD:-$out/report.md}")"
  echo "report-download=$download"
  echo "result-file=$(abs "${RESULT_FILE:-$out/$artifact.msgpack.zst}")"
  echo "export-dir=$(abs "${EXPORT_DIR:-$out/export}")"
  echo "results-dir=$out/results"
  echo "leg=$leg"
  echo "job-label=$job_label"
  echo "comment-id=${COMMENT_ID:-${CONFIG:-default}@$leg}"
  echo "report-artifact=$report_artifact"
  echo "shard=$shard"
  echo "shard-tag=$shard_tag"
  echo "shards=$SHARDS"
  echo "legs=$legs"
  echo "legs-download=$legs_download"
  if [ "$MODE" = update-baseline ]; then echo "legs-pattern=parity-gate-share-shard-*-of-$SHARDS-a*"
  else echo "legs-pattern=${REPORT_ARTIFACT:-parity-gate-report}-shard-*-of-$SHARDS-a*"; fi
  echo "share=$share"
  echo "share-artifact=parity-gate-share$shard_tag-a${GITHUB_RUN_ATTEMPT:-1}"
  echo "artifact-name=$artifact"
  echo "constraints=$constraints"
  echo "cache=$cache"
  if [ "$FULL" = true ]; then echo "full=1"; else echo "full="; fi
  # The export cache's folder (empty: off). Only check reads it, and --full bypasses it.
  if [ "$MODE" = check ] && [ "$EXPORT_CACHE" = true ] && [ "$FULL" != true ]; then
    echo "export-cache=$RUNNER_TEMP/parity-gate-export-cache"
  else
    echo "export-cache="
  fi
  if [ -n "$VENV_PATH" ]; then echo "venv=$(abs "$VENV_PATH")"; else echo "venv=$RUNNER_TEMP/parity-gate-env"; fi
} >> "$GITHUB_OUTPUT"
