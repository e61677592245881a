#!/usr/bin/env bash
# action.yml "Fetch the pull request's base": the report lists the baseline files the pull request
# changes (git diff against the base commit), and those need approval. Without the base that list would
# be empty and a baseline change would pass unseen: the step fails instead (fail closed), saying what to set.
set -euo pipefail
fail() { echo "::error title=parity-gate::$1"; exit 2; }
if ! git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  fail "$PWD is not a git checkout: the baseline files this pull request changes cannot be listed; check the repository out first (actions/checkout)"
fi
if ! git cat-file -e "$BASE_SHA^{commit}" 2> /dev/null; then
  # actions/checkout fetches one commit. The token goes to git through this process's environment only,
  # never into .git/config, where the pull request's code (run by a later step) could read it; so this
  # works with persist-credentials: false on a private repository.
  if [ -n "${GITHUB_TOKEN:-}" ]; then
    basic="$(printf 'x-access-token:%s' "$GITHUB_TOKEN" | base64 | tr -d '\n')"
    echo "::add-mask::$basic"
    export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0="http.${GITHUB_SERVER_URL:-https://github.com}/.extraheader"
    export GIT_CONFIG_VALUE_0="AUTHORIZATION: basic $basic"
  fi
  if ! git fetch --quiet --no-tags --depth=1 origin "$BASE_SHA"; then
    fail "could not fetch the base commit $BASE_SHA from origin: the baseline files this pull request changes cannot be listed; give actions/checkout fetch-depth: 0, or the action a github-token that can read the repository"
  fi
fi
echo "since=$BASE_SHA" >> "$GITHUB_OUTPUT"
