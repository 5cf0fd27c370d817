# The chip tests, the chip benchmark and the pod's tests and benchmark. The Verilated chip models,
# the driver's RTL backends and the SystemC pod they use are the simulation backends of sw/sim
# (sw/sim/sim.cmake).
# The vector unit's lane arithmetic against the golden functions (preset-independent).
tp_verilate(rtl_vpu_lane TOP tp_vpu_lane PREFIX Vvpu_lane
            SOURCES ${TP_GEN_DIR}/tp_isa_pkg.sv ${TP_RTL_COMMON} ${PROJECT_SOURCE_DIR}/rtl/vpu/tp_vpu_pkg.sv
                    ${PROJECT_SOURCE_DIR}/rtl/vpu/tp_vpu_lane.sv)
add_executable(test_vpu_lane vpu/test_vpu_lane.cpp)
target_compile_options(test_vpu_lane PRIVATE ${TP_WARNINGS})
target_link_libraries(test_vpu_lane PRIVATE rtl_vpu_lane tp_golden tp_tb_util GTest::gtest_main)
gtest_discover_tests(test_vpu_lane PROPERTIES LABELS "vpu")
list(APPEND TP_TEST_TARGETS test_vpu_lane)

set(TP_CHIP_TEST_FILTER_wide "Chip.*:Bad/*:Stalls/ChipRandom.ProgramsMatchTheInterpreter/none")
foreach(preset ${TP_CHIP_PRESETS})
  add_executable(test_chip_${preset} chip/test_chip.cpp)
  target_include_directories(test_chip_${preset} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/sw)
  target_compile_definitions(test_chip_${preset} PRIVATE TP_PRESET="${preset}" TP_CHIP_HEADER="Vchip_${preset}.h"
                             TP_CHIP_CLASS=Vchip_${preset})
  target_compile_options(test_chip_${preset} PRIVATE ${TP_WARNINGS})
  target_link_libraries(test_chip_${preset} PRIVATE tp_rtl_backend_${preset} rtl_chip_${preset} tp_chip_model tp_driver
                        tp_isa tp_config tp_tb_util GTest::gtest_main)
  # A chip too slow to simulate for every test (wide: 128 lanes) runs a subset: the chip's
  # checks and errors and the random programs against the interpreter.
  set(_filter "*")
  if(DEFINED TP_CHIP_TEST_FILTER_${preset})
    set(_filter "${TP_CHIP_TEST_FILTER_${preset}}")
  endif()
  gtest_discover_tests(test_chip_${preset} TEST_PREFIX "${preset}." DISCOVERY_TIMEOUT 60 TEST_FILTER "${_filter}"
                       PROPERTIES LABELS "chip;${preset}")
  list(APPEND TP_TEST_TARGETS test_chip_${preset})
endforeach()


# make bench: compiled matmuls on the Verilated chip (build/reports/chip.json).
# TP_BIG_CHIP_PRESETS (v2 in make bench) are benchmarked too.
set(TP_CHIP_BENCH_PRESETS tiny small small_model CACHE STRING "Presets of the chip benchmark (a subset of TP_CHIP_PRESETS)")
add_executable(chip_bench chip/chip_bench.cpp)
target_compile_options(chip_bench PRIVATE ${TP_WARNINGS})
target_link_libraries(chip_bench PRIVATE ${TP_RTL_BACKENDS} tp_driver tp_energy CLI11::CLI11 nlohmann_json::nlohmann_json)

# make bench: the fast chip model against the Verilated chip, and full-size pods on it
# (build/reports/scale.json, docs/scale.md).
add_executable(scale_bench chip/scale_bench.cpp)
target_include_directories(scale_bench PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/chip)
target_compile_options(scale_bench PRIVATE ${TP_WARNINGS})
target_link_libraries(scale_bench PRIVATE ${TP_RTL_BACKENDS} tp_driver CLI11::CLI11 nlohmann_json::nlohmann_json)
list(APPEND TP_TEST_TARGETS scale_bench)  # scripts.TraceDiff runs it (--only, --trace)

# The pod tests: RTL pods of tiny chips against the golden pod, one pod per process (SystemC).
add_executable(test_pod pod/test_pod.cpp)
target_include_directories(test_pod PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/pod)
target_compile_options(test_pod PRIVATE ${TP_WARNINGS})
target_link_libraries(test_pod PRIVATE tp_rtl_slice_tiny tp_rtl_slice_small tp_rtl_slice_odd tp_sc_main tp_driver
                      tp_tb_util GTest::gtest_main)
gtest_discover_tests(test_pod DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "pod")
list(APPEND TP_TEST_TARGETS test_pod)

# make bench: build/reports/pod.json, one pod per process (SystemC), each run appending.
add_executable(pod_bench pod/pod_bench.cpp)
target_include_directories(pod_bench PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/pod)
target_compile_options(pod_bench PRIVATE ${TP_WARNINGS})
target_link_libraries(pod_bench PRIVATE tp_rtl_slice_tiny tp_rtl_slice_small tp_sc_main tp_driver tp_energy
                      CLI11::CLI11 nlohmann_json::nlohmann_json)
set(TP_POD_REPORT ${PROJECT_BINARY_DIR}/reports/pod.json)
set(_pod_cmds "")
foreach(hops 1 2 3 4)
  foreach(bytes 32 1024 16384)
    list(APPEND _pod_cmds COMMAND pod_bench --scenario transfer --hops ${hops} --bytes ${bytes} --out ${TP_POD_REPORT})
  endforeach()
endforeach()
foreach(preset tiny small)
  list(APPEND _pod_cmds COMMAND pod_bench --scenario transfer --hops 1 --bytes 32768 --preset ${preset}
       --out ${TP_POD_REPORT})
endforeach()
list(APPEND _pod_cmds COMMAND pod_bench --scenario exchange --bytes 8192 --out ${TP_POD_REPORT})
foreach(shape "2;2" "4;4")
  list(GET shape 0 sx)
  list(GET shape 1 sy)
  foreach(be rtl golden)
    list(APPEND _pod_cmds COMMAND pod_bench --scenario speed --pod ${sx} --pod-y ${sy} --backend ${be}
         --out ${TP_POD_REPORT})
  endforeach()
endforeach()
# make bench: build/reports/collectives.json (docs/collectives.md), one pod per process too.
set(TP_COLL_REPORT ${PROJECT_BINARY_DIR}/reports/collectives.json)
set(_coll_cmds "")
foreach(kind all_reduce reduce_scatter all_gather broadcast all_to_all)
  foreach(rows 128 256 512)
    foreach(cfg "2;rtl" "4;rtl" "8;fast")
      list(GET cfg 0 side)
      list(GET cfg 1 be)
      set(_rows ${rows})
      if(kind STREQUAL "all_gather")
        math(EXPR _rows "${rows} / (${side} * ${side})")  # the output is p blocks: the same bytes per chip
      endif()
      list(APPEND _coll_cmds COMMAND pod_bench --scenario collective --collective ${kind} --rows ${_rows}
           --pod ${side} --pod-y ${side} --backend ${be} --out ${TP_COLL_REPORT})
    endforeach()
  endforeach()
endforeach()
# The all-reduce at the largest size that fits (--rows 0): on tiny chips, and on small chips (the
# 4x4 pod of configs/pods.json), whose HBM has the HBM2 refresh timing (about 2 minutes).
foreach(cfg "tiny;2;rtl" "tiny;4;rtl" "tiny;8;fast" "small;2;rtl" "small;4;rtl")
  list(GET cfg 0 pre)
  list(GET cfg 1 side)
  list(GET cfg 2 be)
  list(APPEND _coll_cmds COMMAND pod_bench --scenario collective --collective all_reduce --rows 0 --preset ${pre}
       --pod ${side} --pod-y ${side} --backend ${be} --out ${TP_COLL_REPORT})
endforeach()
# The torus reduce-scatter and all-gather at their largest sizes on the 4x4 RTL pods.
foreach(pre tiny small)
  foreach(kind reduce_scatter all_gather)
    list(APPEND _coll_cmds COMMAND pod_bench --scenario collective --collective ${kind} --rows 0 --preset ${pre}
         --pod 4 --pod-y 4 --backend rtl --out ${TP_COLL_REPORT})
  endforeach()
endforeach()
add_custom_target(bench_collectives
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/reports
  COMMAND ${CMAKE_COMMAND} -E rm -f ${TP_COLL_REPORT}
  ${_coll_cmds}
  COMMAND ${CMAKE_COMMAND} -E echo "wrote ${TP_COLL_REPORT}"
  DEPENDS pod_bench
  USES_TERMINAL
  COMMENT "Collectives benchmark: every collective on 2x2 and 4x4 RTL pods and an 8x8 fast pod, the largest sizes too")

# make bench: build/reports/train.json (docs/compiler.md "Training"): each slice's training and its
# baseline without the all-reduce, one pod per process.
set(TP_TRAIN_REPORT ${PROJECT_BINARY_DIR}/reports/train.json)
set(_train_cmds "")
foreach(cfg "1;rtl" "2;rtl" "4;rtl" "8;golden")
  list(GET cfg 0 side)
  list(GET cfg 1 be)
  foreach(sc train train_baseline)
    if(NOT (side EQUAL 1 AND sc STREQUAL "train_baseline"))
      list(APPEND _train_cmds COMMAND pod_bench --scenario ${sc} --pod ${side} --pod-y ${side} --backend ${be}
           --steps 30 --batch 64 --out ${TP_TRAIN_REPORT})
    endif()
  endforeach()
endforeach()
add_custom_target(bench_train
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/reports
  COMMAND ${CMAKE_COMMAND} -E rm -f ${TP_TRAIN_REPORT}
  ${_train_cmds}
  COMMAND ${CMAKE_COMMAND} -E echo "wrote ${TP_TRAIN_REPORT}"
  DEPENDS pod_bench
  USES_TERMINAL
  COMMENT "Training benchmark: a small MLP data parallel on 1x1, 2x2, 4x4 RTL pods and an 8x8 golden pod")

add_custom_target(bench_pod
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/reports
  COMMAND ${CMAKE_COMMAND} -E rm -f ${TP_POD_REPORT}
  ${_pod_cmds}
  COMMAND ${CMAKE_COMMAND} -E echo "wrote ${TP_POD_REPORT}"
  DEPENDS pod_bench
  USES_TERMINAL
  COMMENT "Pod benchmark: ICI transfers, neighbour exchange, simulation speed")
