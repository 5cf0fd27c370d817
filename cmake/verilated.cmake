# One static library per (RTL top, preset), verilated once and shared by every binary that
# simulates that top at that preset. Parameters come from configs/presets.json.
# tp_hw_pkg (generated from sw/isa/hw.json: the ICI link contract, the HBM command codes) comes
# first: the ICI and HBM blocks import it.
set(TP_RTL_COMMON
  ${PROJECT_SOURCE_DIR}/rtl/tensorpod.vlt
  ${TP_GEN_DIR}/tp_hw_pkg.sv
  ${PROJECT_SOURCE_DIR}/rtl/common/tp_fp_pkg.sv
  ${PROJECT_SOURCE_DIR}/rtl/common/tp_assert_stable.sv
  ${PROJECT_SOURCE_DIR}/rtl/common/tp_fifo.sv)
set(TP_RTL_MXU
  ${TP_RTL_COMMON}
  ${PROJECT_SOURCE_DIR}/rtl/mxu/tp_mxu_array.sv
  ${PROJECT_SOURCE_DIR}/rtl/mxu/tp_mxu_acc.sv
  ${PROJECT_SOURCE_DIR}/rtl/mxu/tp_mxu.sv)

set(TP_RTL_CHIP
  ${TP_GEN_DIR}/tp_isa_pkg.sv
  ${TP_RTL_MXU}
  ${PROJECT_SOURCE_DIR}/rtl/common/tp_rr_arb.sv
  ${PROJECT_SOURCE_DIR}/rtl/ici/tp_ici_pkg.sv
  ${PROJECT_SOURCE_DIR}/rtl/ici/tp_ici_link_tx.sv
  ${PROJECT_SOURCE_DIR}/rtl/ici/tp_ici_link_rx.sv
  ${PROJECT_SOURCE_DIR}/rtl/ici/tp_ici_router.sv
  ${PROJECT_SOURCE_DIR}/rtl/chip/tp_ici_send.sv
  ${PROJECT_SOURCE_DIR}/rtl/chip/tp_ici_unit.sv
  ${PROJECT_SOURCE_DIR}/rtl/vpu/tp_vpu_pkg.sv
  ${PROJECT_SOURCE_DIR}/rtl/chip/tp_vmem.sv
  ${PROJECT_SOURCE_DIR}/rtl/chip/tp_rd_stream.sv
  ${PROJECT_SOURCE_DIR}/rtl/chip/tp_dma_walk.sv
  ${PROJECT_SOURCE_DIR}/rtl/chip/tp_dma_ld.sv
  ${PROJECT_SOURCE_DIR}/rtl/chip/tp_dma_st.sv
  ${PROJECT_SOURCE_DIR}/rtl/chip/tp_mxu_unit.sv
  ${PROJECT_SOURCE_DIR}/rtl/chip/tp_vpu.sv
  ${PROJECT_SOURCE_DIR}/rtl/chip/tp_core.sv
  ${PROJECT_SOURCE_DIR}/rtl/chip/tp_chip.sv)

set(TP_RTL_ICI
  ${TP_RTL_COMMON}
  ${PROJECT_SOURCE_DIR}/rtl/common/tp_rr_arb.sv
  ${PROJECT_SOURCE_DIR}/rtl/ici/tp_ici_pkg.sv
  ${PROJECT_SOURCE_DIR}/rtl/ici/tp_ici_link_tx.sv
  ${PROJECT_SOURCE_DIR}/rtl/ici/tp_ici_link_rx.sv
  ${PROJECT_SOURCE_DIR}/rtl/ici/tp_ici_router.sv)

# Flags for every model: assertions on, waves available at run time (FST).
set(TP_VERILATOR_ARGS -Wall --assert -O2 --x-assign unique --x-initial unique
    --unroll-count 256 --unroll-stmts 1)

# The MXU's arrays must stay C++ loops (docs/mxu.md); the router's small loops over ports and
# VCs are better unrolled, so it gets Verilator's default unrolling.
set(TP_VERILATOR_ARGS_ICI -Wall --assert -O2 --x-assign unique --x-initial unique)
# The chip holds both: the MXU's loops (long bodies) stay loops while the router's and the ICI
# unit's loops (short bodies, non-blocking assignments to arrays, which Verilator 5.006 only
# takes unrolled) unroll: a statement limit between the two (the MXU at n = 32 grows from 5.8 k
# to 7 k lines of C++ with it, the router unrolls as in its own model).
set(TP_VERILATOR_ARGS_CHIP -Wall --assert -O2 --x-assign unique --x-initial unique
    --unroll-count 256 --unroll-stmts 8000)

# The fast-path C++ of a model: -O2. The MXU models' (TP_OPT_FAST_SIMD) add GCC's full vectoriser
# cost model, so that the array's rows of PEs (bf16_mac_fast, branch-free) run in SIMD lanes, for
# this machine's CPU with TP_NATIVE (AVX2 has the per-lane variable shifts the adder needs; without
# them the loop stays scalar, about half as fast). The chips keep the one-MAC PE (TP_MXU_ONE_MAC)
# and plain -O2: the vectoriser's cost model on all of a chip's C++ cost build time (the v2 chip:
# 309 s of C++ against 273) and won no speed there (512^3 on small: 27.3 s against 25.6 s), where
# the rest of the chip dominates (docs/mxu.md, "Simulation speed"; docs/benchmarks.md).
option(TP_NATIVE "The MXU models compiled for this machine's CPU (-march=native)" ON)
set(TP_OPT_FAST -O2)
set(TP_OPT_FAST_SIMD -O2 -fvect-cost-model=dynamic)
if(TP_NATIVE)
  list(APPEND TP_OPT_FAST_SIMD -march=native)
endif()

# tp_verilate(<lib> TOP <module> PREFIX <class> SOURCES <files> [PARAMS -Gx=y ...] [ARGS ...]
#             [OPT_FAST <flags>]); OPT_FAST defaults to TP_OPT_FAST.
function(tp_verilate lib)
  cmake_parse_arguments(V "" "TOP;PREFIX" "SOURCES;PARAMS;ARGS;OPT_FAST" ${ARGN})
  if(NOT V_ARGS)
    set(V_ARGS ${TP_VERILATOR_ARGS})
  endif()
  if(NOT V_OPT_FAST)
    set(V_OPT_FAST ${TP_OPT_FAST})
  endif()
  if(TP_COVERAGE)
    list(APPEND V_ARGS --coverage-line --coverage-toggle)
  endif()
  add_library(${lib} STATIC)
  verilate(${lib}
    SOURCES ${V_SOURCES}
    TOP_MODULE ${V_TOP}
    PREFIX ${V_PREFIX}
    TRACE_FST
    DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/${lib}.dir
    VERILATOR_ARGS ${V_ARGS} ${V_PARAMS}
    OPT_FAST ${V_OPT_FAST}
    OPT_SLOW -O1)
  target_link_libraries(${lib} PUBLIC Threads::Threads)
  # Verilator's headers are not ours: include them as system headers so that our warning
  # flags apply to our code only.
  get_target_property(incs ${lib} INTERFACE_INCLUDE_DIRECTORIES)
  set_target_properties(${lib} PROPERTIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${incs}")
endfunction()

# The MXU models of one preset: rtl_mxu_<preset> (tp_mxu, class Vmxu_<preset>) and, for the
# tests, rtl_mxu_array_<preset> (the array alone, class Vmxu_array_<preset>).
function(tp_mxu_model preset)
  if(TARGET rtl_mxu_${preset})
    return()
  endif()
  tp_preset_get(n ${preset} mxu n)
  tp_preset_get(acc_rows ${preset} mxu acc_rows)
  tp_verilate(rtl_mxu_${preset} TOP tp_mxu PREFIX Vmxu_${preset} SOURCES ${TP_RTL_MXU}
              PARAMS -GN=${n} -GAccRows=${acc_rows} OPT_FAST ${TP_OPT_FAST_SIMD})
endfunction()

function(tp_mxu_array_model preset)
  if(TARGET rtl_mxu_array_${preset})
    return()
  endif()
  tp_preset_get(n ${preset} mxu n)
  tp_verilate(rtl_mxu_array_${preset} TOP tp_mxu_array PREFIX Vmxu_array_${preset}
              SOURCES ${TP_RTL_MXU} PARAMS -GN=${n} -GTagW=17 OPT_FAST ${TP_OPT_FAST_SIMD})
endfunction()

# One integer option of tp_ici_model: <value> (empty: 1) checked against [1, <max>], returned in
# <out>, and the tag extended by <suffix><value> when it is above 1.
function(tp_ici_int_option name value max suffix out tag_var)
  if(value STREQUAL "")
    set(value 1)
  endif()
  if(NOT value MATCHES "^[1-9][0-9]*$" OR value GREATER max)
    message(FATAL_ERROR "tp_ici_model: ${name} '${value}' is not in [1, ${max}]")
  endif()
  set(${out} ${value} PARENT_SCOPE)
  if(value GREATER 1)
    set(${tag_var} ${${tag_var}}${suffix}${value} PARENT_SCOPE)
  endif()
endfunction()

# The ICI router with given parameters: rtl_ici_<tag> (class Vici_<tag>), tag v<V>b<B>f<F>r<R>,
# with SA_ITERS <n> > 1 (switch-allocation iterations) the suffix s<n>, with CLASS_CHOICE cc, with
# LOCALS <n> > 1 (local ports) l<n>, with TURN_ROOM <n> > 1 (room for turns into Y) t<n>.
function(tp_ici_model vcs buf flit replay out_tag)
  cmake_parse_arguments(A "CLASS_CHOICE" "SA_ITERS;LOCALS;TURN_ROOM" "" ${ARGN})
  set(tag v${vcs}b${buf}f${flit}r${replay})
  tp_ici_int_option(SA_ITERS "${A_SA_ITERS}" 4 s sa tag)
  set(cc 0)
  if(A_CLASS_CHOICE)
    set(tag ${tag}cc)
    set(cc 1)
  endif()
  tp_ici_int_option(LOCALS "${A_LOCALS}" 4 l nl tag)
  tp_ici_int_option(TURN_ROOM "${A_TURN_ROOM}" ${buf} t tr tag)
  set(${out_tag} ${tag} PARENT_SCOPE)
  if(TARGET rtl_ici_${tag})
    return()
  endif()
  tp_verilate(rtl_ici_${tag} TOP tp_ici_router PREFIX Vici_${tag} SOURCES ${TP_RTL_ICI}
              PARAMS -GV=${vcs} -GB=${buf} -GFlitW=${flit} -GR=${replay} -GClassChoice=${cc} -GSaIters=${sa}
                     -GLocals=${nl} -GTurnRoom=${tr}
              ARGS ${TP_VERILATOR_ARGS_ICI})
endfunction()

# The router's optional allocation keys of a preset (ici.sa_iters, default 1; ici.class_choice,
# default false) as the values of the parameters SaIters and ClassChoice; ici.local_ports
# (default 1) as Locals; ici.turn_room (default 1) as TurnRoom.
function(tp_preset_ici_alloc preset out_sa out_cc out_nl out_tr)
  tp_preset_find(sa ${preset} ici sa_iters)
  if(sa STREQUAL "sa-NOTFOUND")
    set(sa 1)
  elseif(NOT sa MATCHES "^[1-4]$")
    message(FATAL_ERROR "${TP_PRESETS_FILE}: presets.${preset}.ici.sa_iters: '${sa}' is not in [1, 4]")
  endif()
  tp_preset_find(cc ${preset} ici class_choice)
  if(cc STREQUAL "cc-NOTFOUND" OR cc STREQUAL "OFF")
    set(cc 0)
  elseif(cc STREQUAL "ON")
    set(cc 1)
  else()
    message(FATAL_ERROR "${TP_PRESETS_FILE}: presets.${preset}.ici.class_choice: '${cc}' is not true or false")
  endif()
  tp_preset_find(nl ${preset} ici local_ports)
  if(nl STREQUAL "nl-NOTFOUND")
    set(nl 1)
  elseif(NOT nl MATCHES "^[1-4]$")
    message(FATAL_ERROR "${TP_PRESETS_FILE}: presets.${preset}.ici.local_ports: '${nl}' is not in [1, 4]")
  endif()
  tp_preset_find(tr ${preset} ici turn_room)
  tp_preset_get(buf ${preset} ici buf_flits)
  if(tr STREQUAL "tr-NOTFOUND")
    set(tr 1)
  elseif(NOT tr MATCHES "^[1-9][0-9]*$" OR tr GREATER buf)
    message(FATAL_ERROR "${TP_PRESETS_FILE}: presets.${preset}.ici.turn_room: '${tr}' is not in [1, buf_flits = ${buf}]")
  endif()
  set(${out_sa} ${sa} PARENT_SCOPE)
  set(${out_cc} ${cc} PARENT_SCOPE)
  set(${out_nl} ${nl} PARENT_SCOPE)
  set(${out_tr} ${tr} PARENT_SCOPE)
endfunction()

# The router parameters of a preset.
function(tp_preset_ici preset out_tag)
  tp_preset_get(vcs ${preset} ici vcs)
  tp_preset_get(buf ${preset} ici buf_flits)
  tp_preset_get(flit ${preset} ici flit_bits)
  tp_preset_get(replay ${preset} ici replay_flits)
  tp_preset_ici_alloc(${preset} sa cc nl tr)
  set(opts SA_ITERS ${sa} LOCALS ${nl} TURN_ROOM ${tr})
  if(cc)
    list(APPEND opts CLASS_CHOICE)
  endif()
  tp_ici_model(${vcs} ${buf} ${flit} ${replay} tag ${opts})
  set(${out_tag} ${tag} PARENT_SCOPE)
endfunction()

# The HBM controller with a preset's parameters: rtl_hbm_<preset> (class Vhbm_<preset>).
function(tp_log2 out value)
  set(n 0)
  set(v ${value})
  while(v GREATER 1)
    math(EXPR v "${v} / 2")
    math(EXPR n "${n} + 1")
  endwhile()
  set(${out} ${n} PARENT_SCOPE)
endfunction()

# A key of the HBM section tp_hbm_params reads (a macro: it sees the caller's preset and A_CHIP).
macro(_tp_hbm_get out)
  set(${out} "")
  if(A_CHIP)
    tp_preset_find(${out} ${preset} chip hbm ${ARGN})
  endif()
  if(NOT A_CHIP OR "${${out}}" STREQUAL "${out}-NOTFOUND")
    tp_preset_get(${out} ${preset} hbm ${ARGN})
  endif()
endmacro()

# tp_hbm_params(<preset> <out-var> [CHIP]): the controller parameters of the preset's hbm section,
# or with CHIP of the HBM that serves its chip (chip.hbm's overrides over hbm, as sw/config merges).
function(tp_hbm_params preset out)
  cmake_parse_arguments(A "CHIP" "" "" ${ARGN})
  set(p "")
  foreach(pair bank_groups:BankGroups banks_per_group:BanksPerGroup queue:QD write_queue:WQD write_hi:HiWm write_lo:LoWm
               starve_limit:StarveLimit)
    string(REPLACE ":" ";" kv ${pair})
    list(GET kv 0 key)
    list(GET kv 1 param)
    _tp_hbm_get(v ${key})
    list(APPEND p -G${param}=${v})
  endforeach()
  _tp_hbm_get(rows rows)
  _tp_hbm_get(cols columns)
  tp_log2(roww ${rows})
  tp_log2(colw ${cols})
  list(APPEND p -GRowW=${roww} -GColW=${colw})
  foreach(pair closed_page:ClosedPage bank_interleave:BankLow)
    string(REPLACE ":" ";" kv ${pair})
    list(GET kv 0 key)
    list(GET kv 1 param)
    _tp_hbm_get(v ${key})
    if(v)
      list(APPEND p -G${param}=1)
    else()
      list(APPEND p -G${param}=0)
    endif()
  endforeach()
  _tp_hbm_get(refresh refresh)
  if(refresh STREQUAL "per_bank")
    list(APPEND p -GPerBankRefresh=1)
  else()
    list(APPEND p -GPerBankRefresh=0)
  endif()
  foreach(pair cl:CL cwl:CWL trcd:TRCD trp:TRP tras:TRAS trc:TRC tccd_s:TCCDS tccd_l:TCCDL trrd_s:TRRDS
               trrd_l:TRRDL tfaw:TFAW twtr_s:TWTRS twtr_l:TWTRL trtp:TRTP twr:TWR trfc:TRFC trefi:TREFI
               trfcsb:TRFCSB trrefd:TRREFD)
    string(REPLACE ":" ";" kv ${pair})
    list(GET kv 0 key)
    list(GET kv 1 param)
    _tp_hbm_get(v timing ${key})
    list(APPEND p -G${param}=${v})
  endforeach()
  set(${out} ${p} PARENT_SCOPE)
endfunction()

# The number of pseudo-channel controllers that serve the preset's chip.
function(tp_chip_hbm_channels preset out)
  set(A_CHIP TRUE)
  _tp_hbm_get(ch channels)
  _tp_hbm_get(pc pseudo_channels)
  math(EXPR nc "${ch} * ${pc}")
  set(${out} ${nc} PARENT_SCOPE)
endfunction()

set(TP_RTL_HBM ${TP_RTL_COMMON} ${PROJECT_SOURCE_DIR}/rtl/common/tp_secded_pkg.sv
    ${PROJECT_SOURCE_DIR}/rtl/hbm/tp_hbm_ctrl.sv)

# The chip on the HBM subsystem.
set(TP_RTL_CHIP_HBM ${TP_RTL_CHIP}
    ${PROJECT_SOURCE_DIR}/rtl/common/tp_secded_pkg.sv
    ${PROJECT_SOURCE_DIR}/rtl/hbm/tp_hbm_ctrl.sv
    ${PROJECT_SOURCE_DIR}/rtl/chip/tp_mem_hbm.sv
    ${PROJECT_SOURCE_DIR}/rtl/chip/tp_chip_hbm.sv)

# The whole subsystem (channels x pseudo-channels controllers): rtl_hbmsys_<preset>.
function(tp_hbm_system_model preset)
  if(TARGET rtl_hbmsys_${preset})
    return()
  endif()
  tp_hbm_params(${preset} params)
  tp_preset_get(ch ${preset} hbm channels)
  tp_preset_get(pc ${preset} hbm pseudo_channels)
  math(EXPR nc "${ch} * ${pc}")
  # 6-bit request IDs, as for the single controller (tp_hbm_model).
  tp_verilate(rtl_hbmsys_${preset} TOP tp_hbm PREFIX Vhbmsys_${preset}
              SOURCES ${TP_RTL_HBM} ${PROJECT_SOURCE_DIR}/rtl/common/tp_rr_arb.sv ${PROJECT_SOURCE_DIR}/rtl/hbm/tp_hbm.sv
              PARAMS ${params} -GNC=${nc} -GIdW=6 ARGS ${TP_VERILATOR_ARGS_ICI})
endfunction()

function(tp_hbm_model preset)
  if(TARGET rtl_hbm_${preset})
    return()
  endif()
  tp_hbm_params(${preset} params)
  # 6-bit request IDs, as the chip's memory port gives its controllers (tp_mem_hbm).
  tp_verilate(rtl_hbm_${preset} TOP tp_hbm_ctrl PREFIX Vhbm_${preset} SOURCES ${TP_RTL_HBM}
              PARAMS ${params} -GIdW=6 ARGS ${TP_VERILATOR_ARGS_ICI})
endfunction()

# make lint: verilator --lint-only -Wall on every RTL top, at every preset's parameters.
# The chip parameters of a preset (docs/chip.md).
function(tp_chip_params preset out)
  tp_preset_get(n ${preset} mxu n)
  tp_preset_get(acc_rows ${preset} mxu acc_rows)
  set(p -GN=${n} -GAccRows=${acc_rows})
  foreach(pair vmem_rows:VmemRows vmem_banks:VmemBanks sublanes:Sublanes imem_words:ImemWords queue:Queue
               hbm_beats:HbmBeats)
    string(REPLACE ":" ";" kv ${pair})
    list(GET kv 0 key)
    list(GET kv 1 param)
    tp_preset_get(v ${preset} chip ${key})
    list(APPEND p -G${param}=${v})
  endforeach()
  foreach(pair vcs:IciVcs buf_flits:IciBuf flit_bits:IciFlitW replay_flits:IciReplay)
    string(REPLACE ":" ";" kv ${pair})
    list(GET kv 0 key)
    list(GET kv 1 param)
    tp_preset_get(v ${preset} ici ${key})
    list(APPEND p -G${param}=${v})
  endforeach()
  tp_preset_ici_alloc(${preset} sa cc nl tr)
  list(APPEND p -GIciSaIters=${sa} -GIciClassChoice=${cc} -GIciLocals=${nl} -GIciTurnRoom=${tr})
  set(${out} ${p} PARENT_SCOPE)
endfunction()

# What every chip model adds: the one-MAC PE (TP_MXU_ONE_MAC, above), and its evaluation and trace
# functions split into functions of at most 4000 statements. They are otherwise a few large ones,
# and GCC's time on a function grows faster than its size: the v2 chip's C++ took 275 s on 2 cores
# with Verilator's defaults, 182 s with this split (docs/benchmarks.md).
set(TP_CHIP_ARGS +define+TP_MXU_ONE_MAC --output-split-cfuncs 4000 --output-split-ctrace 4000)

# The single chip at a preset: rtl_chip_<preset> (class Vchip_<preset>). With chip.memory "hbm"
# the top is tp_chip_hbm (the chip on the HBM subsystem, DRAM ports out), else tp_chip (the
# memory port out, for the testbench's memory model).
function(tp_chip_model preset)
  if(TARGET rtl_chip_${preset})
    return()
  endif()
  tp_chip_params(${preset} params)
  tp_preset_get(memory ${preset} chip memory)
  if(memory STREQUAL "hbm")
    tp_hbm_params(${preset} hbm_params CHIP)
    tp_chip_hbm_channels(${preset} nc)
    # The HBM controller's loops over banks and queue entries must be unrolled (they assign
    # array elements with <=), so this model gets Verilator's default unrolling, like tp_hbm.
    tp_verilate(rtl_chip_${preset} TOP tp_chip_hbm PREFIX Vchip_${preset} SOURCES ${TP_RTL_CHIP_HBM}
                PARAMS ${params} ${hbm_params} -GNC=${nc} ARGS ${TP_VERILATOR_ARGS_ICI} ${TP_CHIP_ARGS})
  else()
    tp_verilate(rtl_chip_${preset} TOP tp_chip PREFIX Vchip_${preset} SOURCES ${TP_RTL_CHIP} PARAMS ${params}
                ARGS ${TP_VERILATOR_ARGS_CHIP} ${TP_CHIP_ARGS})
  endif()
endfunction()

function(tp_lint_target)
  set(cmds "")
  list(APPEND cmds COMMAND ${VERILATOR_BIN} --lint-only -Wall ${TP_RTL_COMMON}
       ${PROJECT_SOURCE_DIR}/rtl/common/tp_fp_unit.sv --top-module tp_fp_unit)
  list(APPEND cmds COMMAND ${VERILATOR_BIN} --lint-only -Wall ${PROJECT_SOURCE_DIR}/rtl/common/tp_secded_pkg.sv
       ${PROJECT_SOURCE_DIR}/rtl/common/tp_ecc_unit.sv --top-module tp_ecc_unit)
  # The primitives' FORMAL blocks (make formal), which only yosys reads otherwise.
  foreach(prim tp_fifo tp_rr_arb)
    list(APPEND cmds COMMAND ${VERILATOR_BIN} --lint-only -Wall -DFORMAL ${PROJECT_SOURCE_DIR}/rtl/common/tp_assert_stable.sv
         ${PROJECT_SOURCE_DIR}/rtl/common/${prim}.sv --top-module ${prim})
  endforeach()

  foreach(preset ${TP_ALL_PRESETS})
    tp_preset_get(n ${preset} mxu n)
    tp_preset_get(acc_rows ${preset} mxu acc_rows)
    list(APPEND cmds COMMAND ${VERILATOR_BIN} --lint-only -Wall ${TP_RTL_MXU} --top-module tp_mxu
         -GN=${n} -GAccRows=${acc_rows})
    list(APPEND cmds COMMAND ${VERILATOR_BIN} --lint-only -Wall ${TP_RTL_MXU} --top-module tp_mxu_array
         -GN=${n} -GTagW=17)
    tp_preset_get(vcs ${preset} ici vcs)
    tp_preset_get(buf ${preset} ici buf_flits)
    tp_preset_get(flit ${preset} ici flit_bits)
    tp_preset_get(replay ${preset} ici replay_flits)
    list(APPEND cmds COMMAND ${VERILATOR_BIN} --lint-only -Wall ${TP_RTL_ICI} --top-module tp_ici_router
         -GV=${vcs} -GB=${buf} -GFlitW=${flit} -GR=${replay})
    list(APPEND cmds COMMAND ${VERILATOR_BIN} --lint-only -Wall ${TP_RTL_ICI} --top-module tp_ici_router
         -GV=${vcs} -GB=${buf} -GFlitW=${flit} -GR=${replay} -GClassChoice=1 -GSaIters=2)
    list(APPEND cmds COMMAND ${VERILATOR_BIN} --lint-only -Wall ${TP_RTL_ICI} --top-module tp_ici_router
         -GV=${vcs} -GB=${buf} -GFlitW=${flit} -GR=${replay} -GClassChoice=1 -GSaIters=2 -GLocals=4 -GTurnRoom=2)
    tp_hbm_params(${preset} hbm_params)
    list(APPEND cmds COMMAND ${VERILATOR_BIN} --lint-only -Wall ${TP_RTL_HBM} --top-module tp_hbm_ctrl ${hbm_params})
    tp_preset_get(ch ${preset} hbm channels)
    tp_preset_get(pc ${preset} hbm pseudo_channels)
    math(EXPR nc "${ch} * ${pc}")
    list(APPEND cmds COMMAND ${VERILATOR_BIN} --lint-only -Wall ${TP_RTL_HBM} ${PROJECT_SOURCE_DIR}/rtl/common/tp_rr_arb.sv
         ${PROJECT_SOURCE_DIR}/rtl/hbm/tp_hbm.sv --top-module tp_hbm ${hbm_params} -GNC=${nc})
    tp_chip_params(${preset} chip_params)
    list(APPEND cmds COMMAND ${VERILATOR_BIN} --lint-only -Wall ${TP_RTL_CHIP} --top-module tp_chip ${chip_params})
    tp_preset_get(memory ${preset} chip memory)
    if(memory STREQUAL "hbm")
      tp_hbm_params(${preset} chip_hbm_params CHIP)
      tp_chip_hbm_channels(${preset} chip_nc)
      list(APPEND cmds COMMAND ${VERILATOR_BIN} --lint-only -Wall ${TP_RTL_CHIP_HBM} --top-module tp_chip_hbm
           ${chip_params} ${chip_hbm_params} -GNC=${chip_nc})
    endif()
  endforeach()
  add_custom_target(lint ${cmds}
    COMMAND ${CMAKE_COMMAND} -E echo "lint: clean (tp_fp_unit, tp_ecc_unit; tp_mxu, tp_mxu_array, tp_ici_router, tp_hbm_ctrl, tp_hbm, tp_chip at ${TP_ALL_PRESETS}; tp_chip_hbm where chip.memory is hbm)"
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} VERBATIM)
endfunction()
tp_lint_target()
