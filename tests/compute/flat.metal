// A compute kernel that never synchronises: the CPU backend runs its threads in a plain loop
// (tests/test_compute_model.py).
#include <c10/metal/atomic.h>
#include <metal_stdlib>
using namespace metal;

// Atomics across threadgroups: a histogram, and torch's AtomicType adds (float natively, half
// by compare-and-exchange on the 32-bit word that holds it).
template <typename T>
kernel void histogram(device atomic_uint* bins [[buffer(0)]], constant T* values [[buffer(1)]],
                      device float* fsum [[buffer(2)]], device half* hsum [[buffer(3)]],
                      uint i [[thread_position_in_grid]]) {
  atomic_fetch_add_explicit(&bins[values[i] % 4], 1u, memory_order_relaxed);
  c10::metal::AtomicType<float>::atomic_add(reinterpret_cast<device atomic_float*>(fsum), 0, 0.5f);
  c10::metal::AtomicType<half>::atomic_add(reinterpret_cast<device atomic_uint*>(hsum), i % 2, half(1));
}
template [[host_name("histogram_uint")]] kernel void histogram<uint>(
    device atomic_uint* bins [[buffer(0)]], constant uint* values [[buffer(1)]], device float* fsum [[buffer(2)]],
    device half* hsum [[buffer(3)]], uint i [[thread_position_in_grid]]);

// The same counts without the atomic: a race between threads (planted).
template <typename T>
kernel void histogram_racy(device uint* bins [[buffer(0)]], constant T* values [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
  bins[values[i] % 4] += 1;
}
template [[host_name("histogram_racy")]] kernel void histogram_racy<uint>(
    device uint* bins [[buffer(0)]], constant uint* values [[buffer(1)]], uint i [[thread_position_in_grid]]);

// Writes one element past its output's end (planted).
template <typename T>
kernel void shifted_copy(device T* out [[buffer(0)]], constant T* in [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  out[i + 1] = in[i];
}
template [[host_name("shifted_copy")]] kernel void shifted_copy<float>(
    device float* out [[buffer(0)]], constant float* in [[buffer(1)]], uint i [[thread_position_in_grid]]);
