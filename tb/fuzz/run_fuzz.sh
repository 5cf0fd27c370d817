#!/usr/bin/env bash
# make fuzz: runs each libFuzzer target of BUILD (configured with -DTP_FUZZ=ON and clang) for
# SECONDS over its corpus, after its regression inputs. Usage: tb/fuzz/run_fuzz.sh BUILD SECONDS TARGET...
#   BUILD/fuzz/corpus/<target>/   the working corpus (new inputs go here); the committed seeds of
#                                 tb/fuzz/corpus/<target>/ are read, never written
#   BUILD/crashes/<target>/       what a run finds (crash-*, leak-*, timeout-*, oom-*)
#   BUILD/fuzz/<target>.log       libFuzzer's output (<target>.regress.log: the regression inputs')
# Exits non-zero if a regression input fails or any target finds something.
set -uo pipefail
build=$1 seconds=$2
shift 2
src=$(cd "$(dirname "$0")" && pwd)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "$@"; do
  bin=$build/tb/fuzz_$t
  corpus=$build/fuzz/corpus/$t crashes=$build/crashes/$t log=$build/fuzz/$t.log
  mkdir -p "$corpus" "$crashes"
  if ! "$build/tb/fuzz_regress_$t" "$src/corpus/$t" "$src/regressions/$t" > "$build/fuzz/$t.regress.log" 2>&1; then
    tail -30 "$build/fuzz/$t.regress.log"
    echo "make fuzz: $t: a corpus seed or regression input fails (log: $build/fuzz/$t.regress.log)"
    failed+=("$t")
    continue
  fi
  dict=()  # tokens for the mutator: generated from sw/isa/isa.json (asm), or committed (preset)
  for d in "$build/tb/fuzz_$t.dict" "$src/$t.dict"; do [ -f "$d" ] && dict=(-dict="$d"); done
  before=$(ls "$crashes" | wc -l)
  echo "make fuzz: $t for ${seconds}s (log: $log)"
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$crashes/" "${dict[@]}" "$corpus" "$src/corpus/$t" > "$log" 2>&1
  rc=$?
  after=$(ls "$crashes" | wc -l)
  stats=$(grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units)' "$log" | tail -1)
  if [ $rc -eq 72 ] && [ "$after" -eq "$before" ]; then
    # libFuzzer's exit code when it is interrupted (SIGINT/SIGTERM): stopped, nothing found
    echo "make fuzz: $t: interrupted, no finding so far (${stats})"
    failed+=("$t (interrupted)")
  elif [ $rc -ne 0 ] || [ "$after" -gt "$before" ]; then
    grep -E 'ERROR: |SUMMARY: |fuzz: |runtime error|terminate called|Test unit written' "$log" | head -20
    echo "make fuzz: $t FOUND something (exit $rc; inputs in $crashes/, log: $log)"
    failed+=("$t")
  else
    echo "make fuzz: $t: no finding (${stats})"
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "make fuzz: findings or interruptions in: ${failed[*]} (add each input found to tb/fuzz/regressions/<target>/ once fixed)"
  exit 1
fi
echo "make fuzz: no findings in $*"
