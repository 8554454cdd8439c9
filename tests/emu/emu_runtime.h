// emu_runtime.h: the emulated device's runtime, as the emulated cuBLAS and cuDNN
// (cublas_emu.cpp, cudnn_emu.cpp) and the emulated CUDA runtime (cudart_emu.cpp) share it.
// Together they stand in for libcudart, libcublas and libcudnn in the emulated CUDA module
// (tests/emu/backend.cmake): the backend's own sources (src/cuda, kernels) compile against
// the toolkit's real headers, and these files define the functions those headers declare.
// defines: sk_emu_enqueue, sk_emu_fault, sk_emu_device_range, sk_emu_device_sms, sk_emu_device_count,
//          sk_emu_enqueue_launch, sk_emu_launch_kernel (kernels/device_port.cuh's launchers)
//
// The model of a stream: work enqueued on it runs at the latest moment CUDA allows, that
// is at the next synchronization that covers it (cudaStreamSynchronize, cudaEventSynchronize,
// cudaDeviceSynchronize, a blocking cudaMemcpy, cudaFree), in the order it was enqueued.
// So host code that reuses a buffer before the device has read it, or reads a result
// before waiting for it, sees what a real GPU would show it at its worst. While a stream
// captures (cudaStreamBeginCapture), work enqueued on it is recorded into the graph
// instead, and runs each time the graph is launched.
// Device memory is host memory (cudaMalloc: 256-byte aligned, filled with NaN bytes, as a
// real GPU leaves it uninitialized), so fakes read and write it directly inside their ops.
#ifndef SK_EMU_RUNTIME_H
#define SK_EMU_RUNTIME_H

#include <stddef.h>

#include <functional>
#include <string>
#include <tuple>
#include <type_traits>

#include <cuda_runtime_api.h>

// Enqueues op on stream s (0: the default stream). op runs later (see above); it must
// capture by value whatever the call's arguments were (pointers, sizes, host scalars),
// since the caller's variables are gone by then. cudaErrorInvalidResourceHandle for a
// stream that does not exist; cudaErrorStreamCaptureInvalidated when s was capturing and
// an earlier illegal call broke the capture.
cudaError_t sk_emu_enqueue(cudaStream_t s, std::function<void()> op);

// From inside an op: the work failed as a kernel fault does on a GPU. The device keeps the
// error (sticky, cudaErrorLaunchFailure): the next synchronization and every later call
// return it; what is printed once to stderr with the prefix "emulated device: ".
void sk_emu_fault(const std::string &what);

// true when [p, p + bytes) lies inside one live cudaMalloc allocation.
bool sk_emu_device_range(const void *p, size_t bytes);

// The emulated device's multiprocessor count (cudaDevAttrMultiProcessorCount): 24, or
// SK_EMU_SMS from the environment (1..256; an H100 has 132). Grids sized by it (the
// persistent LSTM's: about one block per SM) run one fiber per thread, so fewer SMs run
// faster; 24 is the fewest on which the GPU tests' largest shapes (configuration A's
// widths in fp32) still fit the persistent kernel.
int sk_emu_device_sms();

// How many devices cudaGetDeviceCount reports: 1, or SK_EMU_DEVICES (1..8), so that the ranks
// of a data-parallel job on one node (rank r on cuda:r) each find theirs; a process's
// devices share one memory and one queue.
int sk_emu_device_count();

// A kernel launch (cuda_emu.h's sk_emu_launch) checked as CUDA checks it when it is made:
// a grid or block out of range, more dynamic shared memory than the kernel's attribute
// (cudaFuncAttributeMaxDynamicSharedMemorySize: 48 KiB unless raised) allows, a
// cooperative grid larger than can be resident, clusters (cluster blocks each along x; 0:
// none) that do not divide the grid or pass 8 blocks (16 with the kernel's
// cudaFuncAttributeNonPortableClusterSizeAllowed). Then enqueued on stream.
cudaError_t sk_emu_enqueue_launch(const void *kernel, bool cooperative, unsigned cluster, dim3 grid, dim3 block,
                                  size_t smem, cudaStream_t stream, std::function<void()> body);

// kernel<<<grid, block, smem, stream>>>(args...) on the emulated device (cooperative and
// cluster as for sk_emu_enqueue_launch): the arguments are converted to the parameters'
// types now, at the launch, as CUDA copies them; every thread of the launch then calls
// kernel on that copy.
template <typename... P, typename... A>
cudaError_t sk_emu_launch_kernel(bool cooperative, unsigned cluster, void (*kernel)(P...), dim3 grid, dim3 block,
                                 size_t smem, cudaStream_t stream, A... args) {
    std::tuple<std::decay_t<P>...> params(args...);
    return sk_emu_enqueue_launch((const void *)kernel, cooperative, cluster, grid, block, smem, stream,
                                 [kernel, params] { std::apply(kernel, params); });
}

#endif
