# The driver (sw/driver) and the tensorpod command-line tool (sw/tools/tensorpod.cpp). Paths are
# relative to this file, so it can be include()d from anywhere.
add_library(tp_driver ${CMAKE_CURRENT_LIST_DIR}/driver.cpp ${CMAKE_CURRENT_LIST_DIR}/golden_chip.cpp
                      ${CMAKE_CURRENT_LIST_DIR}/slice.cpp ${CMAKE_CURRENT_LIST_DIR}/pod_programs.cpp
                      ${CMAKE_CURRENT_LIST_DIR}/collectives.cpp ${CMAKE_CURRENT_LIST_DIR}/shard.cpp
                      ${CMAKE_CURRENT_LIST_DIR}/layer_file.cpp ${CMAKE_CURRENT_LIST_DIR}/segments.cpp
                      ${CMAKE_CURRENT_LIST_DIR}/train.cpp)
target_include_directories(tp_driver PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_compile_options(tp_driver PRIVATE ${TP_WARNINGS})
target_link_libraries(tp_driver PUBLIC tp_chip_model tp_compiler tp_isa tp_config tp_golden tp_energy fmt::fmt)
target_link_libraries(tp_driver PRIVATE xtensor nlohmann_json::nlohmann_json)

# tp_add_tensorpod(<target> [<libraries>...]): the tensorpod tool, linked with extra libraries
# (the RTL backends, which register themselves from static initializers; link them whole, e.g.
# with $<LINK_LIBRARY:WHOLE_ARCHIVE,...>, or as object libraries, so the linker keeps them).
function(tp_add_tensorpod target)
  add_executable(${target} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../tools/tensorpod.cpp)
  target_compile_options(${target} PRIVATE ${TP_WARNINGS})
  target_link_libraries(${target} PRIVATE tp_driver tp_compiler tp_energy tp_mpi nlohmann_json::nlohmann_json
                        CLI11::CLI11 ${ARGN})
endfunction()

# The golden-only tool; the RTL backends are linked in with target_link_libraries(tensorpod ...)
# where they are built, or with another tp_add_tensorpod().
tp_add_tensorpod(tensorpod)
