# The compiler (sw/compiler): matmul layers -> one chip program. Paths are relative to this file,
# so it can be include()d from anywhere.
add_library(tp_compiler ${CMAKE_CURRENT_LIST_DIR}/compiler.cpp ${CMAKE_CURRENT_LIST_DIR}/loops.cpp
                        ${CMAKE_CURRENT_LIST_DIR}/pairing.cpp)
target_include_directories(tp_compiler PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_compile_options(tp_compiler PRIVATE ${TP_WARNINGS})
target_link_libraries(tp_compiler PUBLIC tp_isa tp_config fmt::fmt)
