# backend.cmake: the emulated CUDA module (-DSHAKESPEARE_CUDA_EMU=ON, included by
# CMakeLists.txt in place of the real one). The CUDA backend's own sources (src/cuda, kernels)
# compile as host C++ against the toolkit's real headers, and link, instead of libcudart,
# libcublas and libcudnn, their emulations here: cudart_emu.cpp (streams, graphs, memory),
# cublas_emu.cpp, cudnn_emu.cpp, with every kernel run by cuda_emu.cpp one fiber per GPU
# thread. The result is a libshakespeare_cuda.so that the core's loader opens as it opens
# the real one, so the GPU tests (label gpu) and the programs run the CUDA backend on the
# CPU: `ctest -L gpu` in such a build checks the backend's host code, its kernels and its use
# of the libraries against the CPU backend without a GPU. No speed is measured here.
# Needs the CUDA toolkit's headers (cuda_runtime_api.h, cublas_v2.h, cudnn.h), not its
# libraries, and a C++17 compiler. With nccl.h, NCCL too (nccl_emu.cpp: over the job's MPI,
# which tests/gpu/test_nccl_rank*.sh run under mpirun).
find_path(SK_EMU_CUDA_INCLUDE cuda_runtime_api.h HINTS $ENV{CUDA_HOME} /usr/local/cuda PATH_SUFFIXES include)
find_path(SK_EMU_CUDNN_INCLUDE cudnn.h HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} /usr/local/cuda PATH_SUFFIXES include)
if(NOT SK_EMU_CUDA_INCLUDE OR NOT SK_EMU_CUDNN_INCLUDE)
  message(FATAL_ERROR "SHAKESPEARE_CUDA_EMU=ON needs the CUDA toolkit's and cuDNN's headers "
                      "(cuda_runtime_api.h, cudnn.h); set CUDNN_ROOT or CUDA_HOME")
endif()
enable_language(CXX)

file(GLOB SK_EMU_BACKEND_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/cuda/*.cu ${CMAKE_SOURCE_DIR}/kernels/*.cu)
set(SK_EMU_DEVICE_SOURCES ${CMAKE_SOURCE_DIR}/tests/emu/cuda_emu.cpp ${CMAKE_SOURCE_DIR}/tests/emu/cudart_emu.cpp
                          ${CMAKE_SOURCE_DIR}/tests/emu/cublas_emu.cpp ${CMAKE_SOURCE_DIR}/tests/emu/cudnn_emu.cpp
                          ${CMAKE_SOURCE_DIR}/tests/emu/cudnn_emu_lstm.cpp)
# .cu files are C++ here: g++ is told so (-x c++ before each), CMake by the LANGUAGE property.
# Each is compiled with the emulated device force-included ahead of it (SK_EMU_DEVICE_PORT;
# -include joined to its file, as source options take no SHELL: and CMake folds repeated words):
# kernels/device_port.cuh brings the toolkit's device headers under nvcc, and names no
# emulator header.
set(SK_EMU_DEVICE_PORT "-include${CMAKE_SOURCE_DIR}/tests/emu/cuda_emu.h"
                       "-include${CMAKE_SOURCE_DIR}/tests/emu/emu_runtime.h")
set_source_files_properties(${SK_EMU_BACKEND_SOURCES} PROPERTIES LANGUAGE CXX
                            COMPILE_OPTIONS "-xc++;${SK_EMU_DEVICE_PORT}")
# Compiled once, for the module and for the LSTM workbench (lstm_bench, below).
add_library(sk_emu_backend_objects OBJECT ${SK_EMU_BACKEND_SOURCES} ${SK_EMU_DEVICE_SOURCES})
set_target_properties(sk_emu_backend_objects PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
                      CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
target_compile_definitions(sk_emu_backend_objects PRIVATE SK_CUDA_EMU SK_CUDA_EMU_RUNTIME)
# As tests.cmake's emulated kernel tests: bf16 pairs read as words; -O2 in every build type
# (a launch runs every thread of the grid one after another).
target_compile_options(sk_emu_backend_objects PRIVATE -Wall -Wextra $<$<BOOL:${SHAKESPEARE_WERROR}>:-Werror>
                                                      -fno-strict-aliasing -Wno-unknown-pragmas -O2)
target_include_directories(sk_emu_backend_objects PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src
                                                          ${CMAKE_SOURCE_DIR}/kernels ${CMAKE_SOURCE_DIR}/tests
                                                          ${CMAKE_SOURCE_DIR}/tests/emu)
target_include_directories(sk_emu_backend_objects SYSTEM PRIVATE ${SK_EMU_CUDA_INCLUDE} ${SK_EMU_CUDNN_INCLUDE})
add_library(shakespeare_cuda MODULE $<TARGET_OBJECTS:sk_emu_backend_objects>)
set_target_properties(shakespeare_cuda PROPERTIES LINKER_LANGUAGE CXX
                      LINK_DEPENDS ${CMAKE_SOURCE_DIR}/src/cuda/module.map)
target_link_libraries(shakespeare_cuda PRIVATE shakespeare_core_pic)
find_path(SK_EMU_NCCL_INCLUDE nccl.h HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} /usr/local/cuda PATH_SUFFIXES include)
if(SK_EMU_NCCL_INCLUDE)
  set_source_files_properties(${CMAKE_SOURCE_DIR}/src/distributed/comm_nccl.cu PROPERTIES LANGUAGE CXX COMPILE_OPTIONS "-xc++")
  target_sources(sk_emu_backend_objects PRIVATE ${CMAKE_SOURCE_DIR}/src/distributed/comm_nccl.cu
                                                ${CMAKE_SOURCE_DIR}/tests/emu/nccl_emu.cpp)
  target_include_directories(sk_emu_backend_objects PRIVATE ${CMAKE_SOURCE_DIR}/src/distributed)
  target_include_directories(sk_emu_backend_objects SYSTEM PRIVATE ${SK_EMU_NCCL_INCLUDE})
  target_compile_definitions(sk_emu_backend_objects PRIVATE SK_HAVE_NCCL)
  if(SK_HAVE_MPI) # ranks sum through the job's MPI (nccl_emu.cpp)
    target_link_libraries(sk_emu_backend_objects PRIVATE MPI::MPI_C)
    target_link_libraries(shakespeare_cuda PRIVATE MPI::MPI_C)
    target_compile_definitions(sk_emu_backend_objects PRIVATE SK_EMU_NCCL_MPI)
  endif()
endif()
target_link_options(shakespeare_cuda PRIVATE
  LINKER:--version-script=${CMAKE_SOURCE_DIR}/src/cuda/module.map LINKER:--no-undefined)
# The emulated cuBLAS and cuDNN through their headers, on the emulated runtime: the contract
# checks that the backend's correct use of them never reaches (tests/emu/check_libs_emu.cpp).
add_executable(emu_check_libs ${CMAKE_SOURCE_DIR}/tests/emu/check_libs_emu.cpp ${SK_EMU_DEVICE_SOURCES})
set_target_properties(emu_check_libs PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
target_compile_definitions(emu_check_libs PRIVATE SK_CUDA_EMU SK_CUDA_EMU_RUNTIME)
target_compile_options(emu_check_libs PRIVATE -Wall -Wextra $<$<BOOL:${SHAKESPEARE_WERROR}>:-Werror> -O2)
target_include_directories(emu_check_libs PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/tests
                                                  ${CMAKE_SOURCE_DIR}/tests/emu)
target_include_directories(emu_check_libs SYSTEM PRIVATE ${SK_EMU_CUDA_INCLUDE} ${SK_EMU_CUDNN_INCLUDE})
add_test(NAME emu_check_libs COMMAND emu_check_libs)
set_tests_properties(emu_check_libs PROPERTIES LABELS unit TIMEOUT 300)
# The LSTM workbench (bench/kernels/lstm_bench.cu) on the emulated device, as a GPU machine
# runs it: tests/gpu/test_lstm_bench.sh checks it at a tiny shape (no speed is measured here).
set_source_files_properties(${CMAKE_SOURCE_DIR}/bench/kernels/lstm_bench.cu PROPERTIES LANGUAGE CXX
                            COMPILE_OPTIONS "-xc++;${SK_EMU_DEVICE_PORT}")
add_executable(lstm_bench ${CMAKE_SOURCE_DIR}/bench/kernels/lstm_bench.cu $<TARGET_OBJECTS:sk_emu_backend_objects>)
set_target_properties(lstm_bench PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
                      LINKER_LANGUAGE CXX)
target_compile_definitions(lstm_bench PRIVATE SK_CUDA_EMU SK_CUDA_EMU_RUNTIME)
target_compile_options(lstm_bench PRIVATE -Wall -Wextra $<$<BOOL:${SHAKESPEARE_WERROR}>:-Werror> -fno-strict-aliasing
                                          -Wno-unknown-pragmas)
target_include_directories(lstm_bench PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src
                                              ${CMAKE_SOURCE_DIR}/src/cuda ${CMAKE_SOURCE_DIR}/kernels
                                              ${CMAKE_SOURCE_DIR}/tests/emu)
target_include_directories(lstm_bench SYSTEM PRIVATE ${SK_EMU_CUDA_INCLUDE} ${SK_EMU_CUDNN_INCLUDE})
target_link_libraries(lstm_bench PRIVATE shakespeare_core ${CMAKE_DL_LIBS} pthread)
if(SK_EMU_NCCL_INCLUDE AND SK_HAVE_MPI)
  target_link_libraries(lstm_bench PRIVATE MPI::MPI_C)
endif()
# The core loads it as the real module, and its loader takes the emulated device as present
# (no NVIDIA driver to ask): --device auto picks it.
target_sources(shakespeare_core PRIVATE ${CMAKE_SOURCE_DIR}/src/cuda/cuda_loader.c
                                        ${CMAKE_SOURCE_DIR}/src/distributed/comm_nccl_forward.c)
target_compile_definitions(shakespeare_core PRIVATE SK_CUDA_EMULATED)
target_link_libraries(shakespeare_core PUBLIC ${CMAKE_DL_LIBS})
message(STATUS "CUDA backend: EMULATED on the CPU (tests/emu/backend.cmake): ${CMAKE_SHARED_MODULE_PREFIX}"
               "shakespeare_cuda${CMAKE_SHARED_MODULE_SUFFIX} runs the CUDA backend's code without a GPU")
