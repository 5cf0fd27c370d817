# The ISA library (docs/isa.md): encode/decode over the generated tables, the assembler and the
# .tpb program files. Included from sw/CMakeLists.txt, so paths are relative to sw/.
add_library(tp_isa ${CMAKE_CURRENT_SOURCE_DIR}/isa/isa.cpp ${CMAKE_CURRENT_SOURCE_DIR}/isa/asm.cpp)
target_include_directories(tp_isa PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/isa ${TP_GEN_DIR})
target_compile_options(tp_isa PRIVATE ${TP_WARNINGS})
target_link_libraries(tp_isa PUBLIC tp_config fmt::fmt)
