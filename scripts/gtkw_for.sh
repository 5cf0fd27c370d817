#!/usr/bin/env bash
# gtkw_for.sh <wave.fst> <template.gtkw> <out.gtkw>: a GTKWave save file for one wave file.
# The template names signals without bus ranges; GTKWave wants the exact range of each bus,
# which depends on the preset, so this reads the ranges from the wave file's header. Signals
# the wave file does not have are left out.
set -euo pipefail
fst=$1 template=$2 out=$3
command -v fst2vcd >/dev/null || { echo "gtkw_for: fst2vcd not found (Debian package gtkwave)" >&2; exit 1; }
fst2vcd "$fst" 2>/dev/null | sed -n '1,/\$enddefinitions/p' | awk -v tmpl="$template" '
  $1 == "$scope" { path = (path == "" ? $3 : path "." $3) }
  $1 == "$upscope" { sub(/\.?[^.]*$/, "", path) }
  $1 == "$var" { name = path "." $5; exists[name] = 1; if ($3 > 1 && $6 ~ /^\[/) range[name] = $6 }
  END {
    while ((getline line < tmpl) > 0) {
      if (line ~ /^top\./) {
        # Waves of the array alone (tp_mxu_array as top) name its signals one level up.
        if (!(line in exists)) sub(/^top\.tp_mxu\.u_array\./, "top.tp_mxu_array.", line)
        # A chip on HBM (tp_chip_hbm as top) has the chip one level down.
        if (!(line in exists)) sub(/^top\.tp_chip\./, "top.tp_chip_hbm.u_chip.", line)
        if (!(line in exists)) sub(/^top\.mem_/, "top.tp_chip_hbm.u_chip.mem_", line)
        if (!(line in exists)) continue
        if (line in range) line = line range[line]
      }
      print line
    }
  }' > "$out"
echo "$out"
