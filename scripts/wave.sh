#!/usr/bin/env bash
# make wave TEST=<test> [SEED=<n>] [PRESET=<name>] [CHIP=x,y]: rerun one GoogleTest with FST
# tracing into <build>/waves/. TEST is a GoogleTest name ("Mxu.MatmulIdentity") or a CTest name
# with the preset in front ("tiny.Mxu.MatmulIdentity"). A pod test ("Pod.Random2x2") writes one
# FST per chip, or only chip x,y's with CHIP.
set -euo pipefail
build=$1 test=$2 seed=${3:-} preset=${4:-} chip=${5:-}

# A CTest name carries the preset first; otherwise PRESET (the default preset unless given).
first=${test%%.*}
if compgen -G "$build/tb/test_*_$first" >/dev/null && [ "$test" != "$first" ]; then
  preset=$first
  test=${test#*.}
fi
compgen -G "$build/tb/test_*_$preset" >/dev/null || { echo "wave: no test binary for preset '$preset' (tests cover: $(ls "$build"/tb | sed -n 's/^test_mxu_//p' | tr '\n' ' '))" >&2; exit 2; }
# That preset's tests first (MXU, chip, ...), then the preset-independent ones.
bins=()
for f in "$build"/tb/test_*_"$preset"; do [ -x "$f" ] && bins+=("$f"); done
for f in "$build"/tb/test_*; do
  case " ${bins[*]} " in *" $f "*) ;; *) [ -x "$f" ] && bins+=("$f") ;; esac
done

for bin in "${bins[@]}"; do
  if "$bin" --gtest_list_tests --gtest_filter="$test" | grep -q '^  '; then
    mkdir -p "$build/waves"
    echo "wave: $(basename "$bin") --gtest_filter=$test${seed:+ TP_SEED=$seed}"
    status=0
    [ -n "$seed" ] && export TP_SEED=$seed
    [ -n "$chip" ] && export TP_WAVE_CHIP=$chip
    TP_WAVES="$build/waves" "$bin" --gtest_filter="$test" || status=$?
    # The GTKWave template of the block the test drives.
    case "$(basename "$bin")" in test_chip_* | test_pod) tmpl=scripts/chip.gtkw ;; *) tmpl=scripts/mxu.gtkw ;; esac
    pattern=${test//\*/}
    # A pod test's chips carry their own preset in the file name.
    [ "$(basename "$bin")" = test_pod ] && preset="*"
    for fst in $(find "$build/waves" -name "$preset.${pattern//\//_}*.fst" -newer "$bin"); do
      gtkw=${fst%.fst}.gtkw
      if command -v fst2vcd >/dev/null; then
        scripts/gtkw_for.sh "$fst" "$tmpl" "$gtkw" >/dev/null
        echo "wave: view with  gtkwave $fst $gtkw"
      else
        echo "wave: wrote $fst; to view it: apt-get install gtkwave, then"
        echo "        scripts/gtkw_for.sh $fst $tmpl $gtkw && gtkwave $fst $gtkw"
      fi
    done
    exit $status
  fi
done
echo "wave: no test matches '$test' (list them with: ctest --test-dir $build -N)" >&2
exit 2
