# ISA, interpreter and compiler tests (plain C++); appended to TP_TEST_TARGETS
add_executable(test_isa ${CMAKE_CURRENT_SOURCE_DIR}/isa/test_isa.cpp)
target_compile_options(test_isa PRIVATE ${TP_WARNINGS})
target_link_libraries(test_isa PRIVATE tp_isa tp_config tp_tb_util GTest::gtest_main)
target_compile_definitions(test_isa PRIVATE TP_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
gtest_discover_tests(test_isa PROPERTIES LABELS isa)
list(APPEND TP_TEST_TARGETS test_isa)

# The golden ISA interpreter, the vector-lane golden functions, the golden pod and the timeline
# recorder (sw/trace).
add_executable(test_chip_model ${CMAKE_CURRENT_SOURCE_DIR}/golden/test_chip_model.cpp
                               ${CMAKE_CURRENT_SOURCE_DIR}/golden/test_pod_model.cpp
                               ${CMAKE_CURRENT_SOURCE_DIR}/golden/test_trace.cpp)
target_compile_options(test_chip_model PRIVATE ${TP_WARNINGS})
target_link_libraries(test_chip_model PRIVATE tp_chip_model tp_tb_util GTest::gtest_main)
gtest_discover_tests(test_chip_model PROPERTIES LABELS "golden;chip")
list(APPEND TP_TEST_TARGETS test_chip_model)

# The compiler and the driver on the golden backend.
add_executable(test_compiler ${CMAKE_CURRENT_SOURCE_DIR}/sw/test_compiler.cpp)
target_include_directories(test_compiler PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/sw ${CMAKE_CURRENT_SOURCE_DIR}/chip)
target_compile_options(test_compiler PRIVATE ${TP_WARNINGS})
target_link_libraries(test_compiler PRIVATE tp_driver tp_compiler tp_tb_util GTest::gtest_main)
gtest_discover_tests(test_compiler PROPERTIES LABELS compiler)
list(APPEND TP_TEST_TARGETS test_compiler)

# The sharding compiler and layer files (.npy) on golden pods.
add_executable(test_shard ${CMAKE_CURRENT_SOURCE_DIR}/sw/test_shard.cpp)
target_compile_options(test_shard PRIVATE ${TP_WARNINGS})
target_link_libraries(test_shard PRIVATE tp_driver tp_tb_util xtensor GTest::gtest_main)
gtest_discover_tests(test_shard PROPERTIES LABELS compiler)
list(APPEND TP_TEST_TARGETS test_shard)

# Training on golden pods.
add_executable(test_train ${CMAKE_CURRENT_SOURCE_DIR}/sw/test_train.cpp)
target_compile_options(test_train PRIVATE ${TP_WARNINGS})
target_link_libraries(test_train PRIVATE tp_driver tp_tb_util GTest::gtest_main)
gtest_discover_tests(test_train PROPERTIES LABELS compiler)
list(APPEND TP_TEST_TARGETS test_train)

# The energy estimate (sw/energy, docs/energy.md): a hand-computed case, and its terms against the
# counters of compiled matmuls on the golden backend.
add_executable(test_energy ${CMAKE_CURRENT_SOURCE_DIR}/golden/test_energy.cpp)
target_compile_options(test_energy PRIVATE ${TP_WARNINGS})
target_link_libraries(test_energy PRIVATE tp_energy tp_driver tp_tb_util GTest::gtest_main)
gtest_discover_tests(test_energy PROPERTIES LABELS "golden;energy")
list(APPEND TP_TEST_TARGETS test_energy)

# The tensorpod tool's answers to bad input (exit 2 with a clear message, at once).
add_test(NAME cli.BadInputs COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/sw/test_cli.py $<TARGET_FILE:tensorpod>)
set_tests_properties(cli.BadInputs PROPERTIES LABELS cli TIMEOUT 600)
list(APPEND TP_TEST_TARGETS tensorpod)

# A pod split over MPI ranks gives the one-process run, bit for bit and cycle for cycle
# (scripts/mpi_pod.py, docs/scale.md); the tool refuses what runs in one process only.
if(MPI_CXX_FOUND AND MPIEXEC_EXECUTABLE)
  set(TP_MPI_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=)
  add_test(NAME mpi.PodIdenticalOnRanks
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/mpi_pod.py --tensorpod $<TARGET_FILE:tensorpod>
                   --mpirun ${MPIEXEC_EXECUTABLE} --ranks 2 3 -- --pod 3x3 --backend fast --collective all_reduce:96)
  add_test(NAME mpi.PodDemoIdenticalOnRanks
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/mpi_pod.py --tensorpod $<TARGET_FILE:tensorpod>
                   --mpirun ${MPIEXEC_EXECUTABLE} --ranks 2 -- --pod 4x4 --backend golden --demo)
  add_test(NAME mpi.RefusesTheRtlPod
           COMMAND ${MPIEXEC_EXECUTABLE} -np 2 --oversubscribe $<TARGET_FILE:tensorpod> pod --pod 2x2 --demo)
  set_tests_properties(mpi.RefusesTheRtlPod PROPERTIES PASS_REGULAR_EXPRESSION "give --backend fast or golden")
  set_tests_properties(mpi.PodIdenticalOnRanks mpi.PodDemoIdenticalOnRanks mpi.RefusesTheRtlPod
                       PROPERTIES LABELS "mpi;cli" TIMEOUT 300 ENVIRONMENT "${TP_MPI_ENV}")
else()
  message(WARNING "OpenMPI not found (scripts/install-deps.sh installs it): no distributed pods, no mpi.* tests")
endif()
