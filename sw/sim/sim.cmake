# The simulation backends of the driver (sw/sim, docs/architecture.md): the Verilated chip at each
# preset of TP_CHIP_PRESETS behind tp::driver::Chip (the RTL backend) and the SystemC pod of Verilated chips
# behind tp::driver::Slice. The tensorpod tool links them from here; the tests in tb/ link the same
# targets. include()d from sw/CMakeLists.txt: paths are relative to this file.

# Helpers without the test framework: wave files, the run's name, lane and bit access.
add_library(tp_sim_util ${CMAKE_CURRENT_LIST_DIR}/sim_util.cpp)
target_include_directories(tp_sim_util PUBLIC ${CMAKE_CURRENT_LIST_DIR} ${TP_GEN_DIR})
target_compile_options(tp_sim_util PRIVATE ${TP_WARNINGS})
target_link_libraries(tp_sim_util PUBLIC tp_trace tp_config)  # chip_harness.h records traces; TP_WAVES errors

# The chip (rtl/chip) at each preset of TP_CHIP_PRESETS: Verilated once per preset, shared by the RTL backend,
# the pod, the tensorpod tool and the chip tests; and at TP_BIG_CHIP_PRESETS, for the tool and the
# chip benchmark only (no pod, no tests).
set(TP_ALL_CHIP_PRESETS ${TP_CHIP_PRESETS} ${TP_BIG_CHIP_PRESETS})
list(REMOVE_DUPLICATES TP_ALL_CHIP_PRESETS)
foreach(preset ${TP_ALL_CHIP_PRESETS})
  tp_chip_model(${preset})
endforeach()

# The driver's RTL backend per chip preset (object libraries: their static registration stays
# linked).
set(TP_RTL_BACKENDS "")
foreach(preset ${TP_ALL_CHIP_PRESETS})
  add_library(tp_rtl_backend_${preset} OBJECT ${CMAKE_CURRENT_LIST_DIR}/rtl_backend.cpp)
  target_compile_definitions(tp_rtl_backend_${preset} PRIVATE TP_PRESET="${preset}"
                             TP_CHIP_HEADER="Vchip_${preset}.h" TP_CHIP_CLASS=Vchip_${preset})
  target_compile_options(tp_rtl_backend_${preset} PRIVATE ${TP_WARNINGS})
  target_link_libraries(tp_rtl_backend_${preset} PUBLIC rtl_chip_${preset} tp_driver tp_golden tp_sim_util)
  list(APPEND TP_RTL_BACKENDS tp_rtl_backend_${preset})
endforeach()

# The SystemC pod: the RTL backend of the slice driver per chip preset (object libraries,
# registered from static initializers), with the preset's router model for golden chips in mixed
# pods. Debian's SystemC 2.3.4 is built as C++17: C++20 code must say so (SC_CPLUSPLUS).
find_library(TP_SYSTEMC_LIB systemc REQUIRED)
add_library(tp_systemc INTERFACE)
target_compile_definitions(tp_systemc INTERFACE SC_CPLUSPLUS=201703L SC_INCLUDE_DYNAMIC_PROCESSES)
target_link_libraries(tp_systemc INTERFACE ${TP_SYSTEMC_LIB})
add_library(tp_sc_main OBJECT ${CMAKE_CURRENT_LIST_DIR}/sc_main.cpp)
target_link_libraries(tp_sc_main PUBLIC tp_systemc)
set(TP_RTL_SLICES tp_sc_main)
foreach(preset ${TP_CHIP_PRESETS})
  add_library(tp_rtl_slice_${preset} OBJECT ${CMAKE_CURRENT_LIST_DIR}/rtl_slice.cpp)
  tp_preset_ici(${preset} ici_tag)
  target_compile_definitions(tp_rtl_slice_${preset} PRIVATE TP_PRESET="${preset}"
                             TP_CHIP_HEADER="Vchip_${preset}.h" TP_CHIP_CLASS=Vchip_${preset}
                             TP_ICI_HEADER="Vici_${ici_tag}.h" TP_ICI_CLASS=Vici_${ici_tag})
  target_compile_options(tp_rtl_slice_${preset} PRIVATE ${TP_WARNINGS})
  target_link_libraries(tp_rtl_slice_${preset} PUBLIC rtl_chip_${preset} rtl_ici_${ici_tag} tp_driver tp_chip_model
                        tp_golden tp_sim_util tp_systemc)
  list(APPEND TP_RTL_SLICES tp_rtl_slice_${preset})
endforeach()

target_link_libraries(tensorpod PRIVATE ${TP_RTL_BACKENDS} ${TP_RTL_SLICES})
# The lists for the binaries in tb/ (chip_bench): sw/ is a sibling directory scope of tb/.
set(TP_RTL_BACKENDS ${TP_RTL_BACKENDS} PARENT_SCOPE)
set(TP_RTL_SLICES ${TP_RTL_SLICES} PARENT_SCOPE)
