#!/usr/bin/env bash
# Set up parity-gate and gate the bundled example models against the committed baselines.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
mkdir -p out
parity-gate doctor
parity-gate check --json out/report.json --markdown out/report.md
echo "reports: out/report.json, out/report.md"
