#!/usr/bin/env bash
# action.yml "parity-gate report": the result files to merge. RESULTS (a glob the user gave) or one
# folder per downloaded result artifact, <prefix>-<leg>-a<attempt>: of each leg only the latest
# attempt, so a re-run never merges an earlier attempt's files. Prints one path per line.
# Portable to macOS's bash 3.2: no globstar, no associative arrays.
set -euo pipefail
if [ -n "$RESULTS" ]; then
  # shellcheck disable=SC2086  # a glob pattern, expanded on purpose
  for f in $RESULTS; do [ -f "$f" ] && printf '%s\n' "$f"; done
  exit 0
fi
[ -d "$RESULTS_DIR" ] || exit 0
for d in "$RESULTS_DIR"/*/; do
  [ -d "$d" ] || continue
  name="$(basename "$d")"
  case "$name" in
    *-a[0-9]*) attempt="${name##*-a}"; leg="${name%-a*}" ;;
    *) attempt=0; leg="$name" ;;
  esac
  case "$attempt" in ''|*[!0-9]*) attempt=0; leg="$name" ;; esac
  printf '%s %s %s\n' "$leg" "$attempt" "$name"
done | sort -k1,1 -k2,2n | awk '{ latest[$1] = $3 } END { for (leg in latest) print latest[leg] }' | sort |
while IFS= read -r name; do
  find "$RESULTS_DIR/$name" -type f -name '*.msgpack.zst' | sort
done
