# Every tests/test_*.c is one test program; tests/gpu/test_*.c are GPU tests (label gpu,
# exit 77 = skipped where no GPU is usable); tests/cli/test_*.sh run the real binaries.
# Tests find the source tree through SK_SOURCE_DIR and write under their own temp dirs.
set(SK_TEST_ENV "SK_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
                "SK_TRAIN=$<TARGET_FILE:shakespeare-train>"
                "SK_SAMPLE=$<TARGET_FILE:shakespeare-sample>"
                "OPENBLAS_NUM_THREADS=1"
                "SK_BUILD_DIR=${CMAKE_BINARY_DIR}"
                "SK_HAVE_MAN_PAGES=${SK_HAVE_MAN_PAGES}"
                "SK_CKPT_DIFF=$<TARGET_FILE:ckpt_diff>"
                "SK_RANK_CHECKS=$<TARGET_FILE:rank_checks>"
                "SK_OPTIONS_TABLE=$<TARGET_FILE:options_table>")
# A sanitized build's programs reserve terabytes of address space for their shadow memory:
# tests that cap the address space (ulimit -v) leave the cap off there.
if(SHAKESPEARE_SANITIZE)
  list(APPEND SK_TEST_ENV "SK_SANITIZED=1")
endif()
# tests/mpi/ launch the trainer under mpirun; without MPI in the build they skip (exit 77).
if(SK_HAVE_MPI)
  list(APPEND SK_TEST_ENV "SK_MPIEXEC=${MPIEXEC_EXECUTABLE}")
endif()
# The emulated device (tests/emu/backend.cmake) runs a GPU's threads on one CPU core: the
# shell tests' hang timeouts (tests/cli/lib.sh's hang_limit) stretch by this factor.
if(SHAKESPEARE_CUDA_EMU)
  list(APPEND SK_TEST_ENV "SK_TIMEOUT_SCALE=20")
  list(APPEND SK_TEST_ENV "SK_EMU_DEVICES=2") # a node of two GPUs for the 2-rank NCCL test
  list(APPEND SK_TEST_ENV "SK_EMULATED_DEVICE=1") # for the checks only the emulator can stage
endif()

# sk_add_tests(GLOB PREFIX LABEL): one test per matching file; .c files become programs
# linked with the core library, .sh files run under bash. Exit 77 means skipped.
function(sk_add_tests pattern prefix label)
  file(GLOB files CONFIGURE_DEPENDS ${pattern})
  foreach(src ${files})
    get_filename_component(name ${src} NAME_WE)
    set(name ${prefix}${name})
    if(src MATCHES "\\.c$")
      add_executable(${name} ${src})
      target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests ${CMAKE_SOURCE_DIR}/src)
      target_link_libraries(${name} PRIVATE shakespeare_core)
      add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
    else()
      add_test(NAME ${name} COMMAND bash ${src} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
    endif()
    # A GPU test must end well inside one device command (10 minutes, several tests). On the
    # emulated device (tests/emu/backend.cmake) every GPU thread is a fiber on one CPU core: the
    # tests shorten their windows and runs there (tests/gpu/gpu_test_util.h's emulated_device),
    # and the longest takes a few CPU minutes, more in wall time on a loaded machine.
    if(label STREQUAL "gpu" AND SHAKESPEARE_CUDA_EMU)
      set(timeout 900)
    elseif(label STREQUAL "gpu")
      set(timeout 180)
    else()
      set(timeout 900)
    endif()
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${SK_TEST_ENV}" LABELS ${label}
                         SKIP_RETURN_CODE 77 TIMEOUT ${timeout})
  endforeach()
endfunction()

sk_add_tests(${CMAKE_SOURCE_DIR}/tests/test_*.c "" unit)
# The CPU without bf16 dot products, as oneDNN's own switch makes it (the path a machine without
# AVX512_BF16 takes): bf16 refused with one line.
add_test(NAME test_lstm_onednn_no_bf16 COMMAND test_lstm_onednn no-bf16 WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(test_lstm_onednn_no_bf16 PROPERTIES ENVIRONMENT "${SK_TEST_ENV};ONEDNN_MAX_CPU_ISA=AVX2"
                     LABELS unit TIMEOUT 300)
sk_add_tests(${CMAKE_SOURCE_DIR}/tests/gpu/test_*.c gpu_ gpu)
sk_add_tests(${CMAKE_SOURCE_DIR}/tests/gpu/test_*.sh gpu_ gpu)
sk_add_tests(${CMAKE_SOURCE_DIR}/tests/cli/test_*.sh cli_ cli)
sk_add_tests(${CMAKE_SOURCE_DIR}/tests/mpi/test_*.sh mpi_ mpi)
sk_add_tests(${CMAKE_SOURCE_DIR}/tests/cmake/test_*.sh cmake_ unit) # cmake/Find*.cmake in probe projects
# The CUDA backend against PyTorch as well: test_torch_reference's program with the argument cuda
# (exit 77 without a usable GPU).
add_test(NAME gpu_test_torch_reference COMMAND test_torch_reference cuda WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(gpu_test_torch_reference PROPERTIES ENVIRONMENT "${SK_TEST_ENV}" LABELS gpu SKIP_RETURN_CODE 77
                     TIMEOUT $<IF:$<BOOL:${SHAKESPEARE_CUDA_EMU}>,900,180>)

# tests/emu/test_*.cpp run this project's CUDA kernels on the CPU (tests/emu/cuda_emu.h: one
# fiber per GPU thread), so they need a C++ compiler but no GPU and no CUDA toolkit. Not in
# fuzzing builds (their sanitizer flags are clang's, the C++ compiler may be GCC).
include(CheckLanguage)
check_language(CXX)
if(CMAKE_CXX_COMPILER AND NOT SHAKESPEARE_FUZZ)
  enable_language(CXX)
  file(GLOB SK_EMU_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/emu/test_*.cpp)
  foreach(src ${SK_EMU_TESTS})
    get_filename_component(name ${src} NAME_WE)
    set(name emu_${name})
    add_executable(${name} ${src} ${CMAKE_SOURCE_DIR}/tests/emu/cuda_emu.cpp)
    set_target_properties(${name} PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
    target_compile_definitions(${name} PRIVATE SK_CUDA_EMU)
    # The emulated device ahead of every source, as kernels/device_port.cuh expects under SK_CUDA_EMU.
    target_compile_options(${name} PRIVATE "-include${CMAKE_SOURCE_DIR}/tests/emu/cuda_emu.h")
    # The kernels read bf16 pairs as 32-bit words (as the GPU does): no strict-aliasing games.
    # -O2 in every build type: a launch runs a whole grid's threads one by one (a Debug build
    # under the sanitizers took a minute at -O0).
    target_compile_options(${name} PRIVATE -Wall -Wextra $<$<BOOL:${SHAKESPEARE_WERROR}>:-Werror>
                                           -fno-strict-aliasing -Wno-unknown-pragmas # #pragma unroll is nvcc's
                                           -O2)
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests ${CMAKE_SOURCE_DIR}/tests/emu
                                               ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/kernels)
    target_link_libraries(${name} PRIVATE shakespeare_core)
    add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${SK_TEST_ENV}" LABELS unit TIMEOUT 900)
  endforeach()
  # The emulated cuDNN's LSTM arithmetic, tested alone (host memory, no toolkit headers).
  target_sources(emu_test_cudnn_emu_lstm PRIVATE ${CMAKE_SOURCE_DIR}/tests/emu/cudnn_emu_lstm.cpp)
elseif(NOT SHAKESPEARE_FUZZ)
  message(STATUS "No C++ compiler: the tests/emu tests (our CUDA kernels run on the CPU) are left out")
endif()

if(SHAKESPEARE_FUZZ)
  file(GLOB SK_FUZZ_TARGETS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
  foreach(src ${SK_FUZZ_TARGETS})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(${name} PRIVATE shakespeare_core)
  endforeach()
endif()

# The multi-rank tests compare checkpoints with this tool (SK_CKPT_DIFF).
# The programs' option tables as text, for tests/cli/test_help.sh.
add_executable(options_table ${CMAKE_SOURCE_DIR}/tests/cli/options_table.c)
target_link_libraries(options_table PRIVATE shakespeare_cli)
add_executable(ckpt_diff ${CMAKE_SOURCE_DIR}/tests/mpi/ckpt_diff.c)
target_link_libraries(ckpt_diff PRIVATE shakespeare_core)
# ... and run the ranks' consistency checks (src/distributed/shard.c) on made-up devices and models.
add_executable(rank_checks ${CMAKE_SOURCE_DIR}/tests/mpi/rank_checks.c)
target_include_directories(rank_checks PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(rank_checks PRIVATE shakespeare_core)
# scripts/bench_cpu.sh times the CPU's LSTM implementations side by side with this one.
add_executable(cpu_lstm_bench ${CMAKE_SOURCE_DIR}/bench/cpu_lstm_bench.c)
target_include_directories(cpu_lstm_bench PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(cpu_lstm_bench PRIVATE shakespeare_core)
# scripts/bench_mpi.sh times the gradient all-reduce with this program.
add_executable(allreduce_bench ${CMAKE_SOURCE_DIR}/bench/allreduce_bench.c)
target_link_libraries(allreduce_bench PRIVATE shakespeare_core)
# Runs every command block of README.md and docs/ (about a minute of training): not under the sanitizers.
if(TEST cli_test_doc_commands)
  set_tests_properties(cli_test_doc_commands PROPERTIES LABELS "cli;slow")
endif()
