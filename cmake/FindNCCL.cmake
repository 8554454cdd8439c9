# FindNCCL.cmake: NVIDIA NCCL (nccl.h and libnccl), for find_package(NCCL).
#
# Searched in this order (the first place holding both the header and the library wins):
#   NCCL_ROOT (CMake or environment variable): a prefix with include/ and lib/ or lib64/,
#     e.g. a pip wheel's site-packages/nvidia/nccl;
#   the CUDA toolkit's folder (CUDAToolkit_ROOT, CUDA_PATH, /usr/local/cuda);
#   the system's (/usr/include, /usr/lib/x86_64-linux-gnu, ...);
#   the pip wheel nvidia-nccl-cu* (PyTorch's) of SK_NVIDIA_WHEEL_PYTHON (default: python3).
# NCCL_WHEEL_ONLY=ON searches the wheel alone (to test that layout where others exist).
# The wheel has only libnccl.so.2: the versioned name is searched too.
#
# Defines (NvidiaFind.cmake's sk_find_nvidia): NCCL_FOUND, NCCL_VERSION (from nccl.h),
# NCCL_INCLUDE_DIR, NCCL_LIBRARY, NCCL_LIBRARY_DIR, NCCL_SOURCE (where it was found, in
# words), the target NCCL::nccl.
include(${CMAKE_CURRENT_LIST_DIR}/NvidiaFind.cmake)
sk_find_nvidia(NCCL nccl nccl.h
  HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_ROOT} $ENV{CUDAToolkit_ROOT} $ENV{CUDA_PATH} /usr/local/cuda
  NAMES nccl libnccl.so.2
  VERSION_HEADERS nccl.h
  VERSION_MACROS NCCL_MAJOR NCCL_MINOR NCCL_PATCH)
