# Runs test tiers one after another, every one of them even after a failure, and prints
# a summary table at the end. Sourced by .ci/run:
#
#   . scripts/tiers.sh
#   tier go make test-go
#   tier lint make lint
#   tiers_summary    # prints the table; returns 1 if any tier failed
#
# bash; each tier's output streams as it runs.

tier_names=()
tier_codes=()
tier_secs=()

# tier NAME COMMAND [ARGS...]: run one tier and record its exit status and duration.
tier() {
  local name=$1 start rc
  shift
  printf '\n######## tier %s: %s\n' "$name" "$*"
  start=$(date +%s)
  "$@"
  rc=$?
  tier_names+=("$name")
  tier_codes+=("$rc")
  tier_secs+=("$(($(date +%s) - start))")
  if [ "$rc" -ne 0 ]; then
    printf '######## tier %s FAILED (exit %d); going on with the other tiers\n' "$name" "$rc"
  fi
  return 0
}

# tiers_summary: the table of every tier run so far; returns 1 if any failed.
tiers_summary() {
  local i failed=0
  printf '\n%-10s %-6s %8s\n' TIER RESULT SECONDS
  for i in "${!tier_names[@]}"; do
    if [ "${tier_codes[$i]}" -eq 0 ]; then
      printf '%-10s %-6s %8s\n' "${tier_names[$i]}" ok "${tier_secs[$i]}"
    else
      printf '%-10s %-6s %8s\n' "${tier_names[$i]}" FAIL "${tier_secs[$i]}"
      failed=$((failed + 1))
    fi
  done
  if [ "$failed" -gt 0 ]; then
    printf '%d of %d tiers failed.\n' "$failed" "${#tier_names[@]}"
    return 1
  fi
  printf 'all %d tiers passed.\n' "${#tier_names[@]}"
}
