# FindCUDNN.cmake: NVIDIA cuDNN (cudnn.h and libcudnn), for find_package(CUDNN).
#
# Searched in this order (the first place holding both the header and the library wins):
#   CUDNN_ROOT (CMake or environment variable): a prefix with include/ and lib/ or lib64/,
#     e.g. an unpacked archive or a pip wheel's site-packages/nvidia/cudnn;
#   the CUDA toolkit's folder (CUDAToolkit_ROOT, CUDA_PATH, /usr/local/cuda);
#   the system's (/usr/include, /usr/lib/x86_64-linux-gnu, ...);
#   the pip wheel nvidia-cudnn-cu* of SK_NVIDIA_WHEEL_PYTHON (default: python3 on PATH).
# CUDNN_WHEEL_ONLY=ON searches the wheel alone (to test that layout where others exist).
# The wheel has only libcudnn.so.9: the versioned names are searched too.
#
# Defines (NvidiaFind.cmake's sk_find_nvidia): CUDNN_FOUND, CUDNN_VERSION (from
# cudnn_version.h, or cudnn.h before cuDNN 8), CUDNN_INCLUDE_DIR, CUDNN_LIBRARY,
# CUDNN_LIBRARY_DIR, CUDNN_SOURCE (where it was found, in words), the target CUDNN::cudnn.
include(${CMAKE_CURRENT_LIST_DIR}/NvidiaFind.cmake)
sk_find_nvidia(CUDNN cudnn cudnn.h
  HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_ROOT} $ENV{CUDAToolkit_ROOT} $ENV{CUDA_PATH} /usr/local/cuda
  NAMES cudnn libcudnn.so.9 libcudnn.so.8
  VERSION_HEADERS cudnn_version.h cudnn.h
  VERSION_MACROS CUDNN_MAJOR CUDNN_MINOR CUDNN_PATCHLEVEL)
