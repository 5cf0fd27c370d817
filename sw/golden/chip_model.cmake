# The golden ISA interpreter (docs/chip.md), its timing estimate, and the golden pod of chips on
# the ICI torus. include()d from sw/CMakeLists.txt: paths are relative to sw/. -ffp-contract=off
# -fno-fast-math come from tp_golden's PUBLIC options.
add_library(tp_chip_model golden/chip_model.cpp golden/chip_timing.cpp golden/fast_timing.cpp golden/pod_model.cpp
                          golden/pod_comm.cpp)
target_compile_options(tp_chip_model PRIVATE ${TP_WARNINGS})
target_link_libraries(tp_chip_model PUBLIC tp_golden tp_isa tp_config tp_trace)
# vpu_ops.h (a tp_golden header) takes isa::Op from the generated isa_gen.h.
target_include_directories(tp_golden PUBLIC ${TP_GEN_DIR})
