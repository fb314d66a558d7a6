// Kernels that exercise the CPU backend's model of a Metal compute launch
// (tests/test_compute_model.py compares what they write with what Metal defines).
#include <c10/metal/atomic.h>
#include <c10/metal/reduction_utils.h>
#include <metal_stdlib>
using namespace metal;

// One threadgroup per row, summed with torch's own threadgroup_sum (simd_sum, then the
// simdgroups' partial sums in threadgroup memory, between barriers).
template <typename T>
kernel void row_sum(constant T* input [[buffer(0)]], device T* output [[buffer(1)]],
                    constant uint& ncols [[buffer(2)]],
                    threadgroup c10::metal::opmath_t<T>* partial [[threadgroup(0)]],
                    uint row [[threadgroup_position_in_grid]], uint lane [[thread_position_in_threadgroup]],
                    uint width [[threads_per_threadgroup]]) {
  c10::metal::opmath_t<T> acc = 0;
  for (uint c = lane; c < ncols; c += width) acc += input[row * ncols + c];
  auto total = c10::metal::threadgroup_sum(partial, acc, lane, width);
  if (lane == 0) output[row] = T(total);
}
template [[host_name("row_sum_float")]] kernel void row_sum<float>(
    constant float* input [[buffer(0)]], device float* output [[buffer(1)]], constant uint& ncols [[buffer(2)]],
    threadgroup float* partial [[threadgroup(0)]], uint row [[threadgroup_position_in_grid]],
    uint lane [[thread_position_in_threadgroup]], uint width [[threads_per_threadgroup]]);

// Each thread reads its neighbour's value through a threadgroup variable: correct only with
// the barrier between the write and the read.
template <bool Barrier>
kernel void neighbour(device float* out [[buffer(0)]], constant float* in [[buffer(1)]],
                      uint i [[thread_position_in_grid]], uint l [[thread_index_in_threadgroup]],
                      uint n [[threads_per_threadgroup]]) {
  threadgroup float shared[256];
  shared[l] = in[i];
  if (Barrier) threadgroup_barrier(mem_flags::mem_threadgroup);
  out[i] = shared[(l + 1) % n];
}
template [[host_name("neighbour")]] kernel void neighbour<true>(
    device float* out [[buffer(0)]], constant float* in [[buffer(1)]], uint i [[thread_position_in_grid]],
    uint l [[thread_index_in_threadgroup]], uint n [[threads_per_threadgroup]]);
template [[host_name("neighbour_without_barrier")]] kernel void neighbour<false>(
    device float* out [[buffer(0)]], constant float* in [[buffer(1)]], uint i [[thread_position_in_grid]],
    uint l [[thread_index_in_threadgroup]], uint n [[threads_per_threadgroup]]);

// A barrier that half the group never reaches.
template <typename T>
kernel void divergent_barrier(device T* out [[buffer(0)]], uint l [[thread_index_in_threadgroup]]) {
  if (l < 16) threadgroup_barrier(mem_flags::mem_threadgroup);
  out[l] = 1;
}
template [[host_name("divergent_barrier")]] kernel void divergent_barrier<float>(
    device float* out [[buffer(0)]], uint l [[thread_index_in_threadgroup]]);

// SIMD-group functions, eight results per thread.
template <typename T>
kernel void simd_functions(device T* out [[buffer(0)]], uint l [[thread_index_in_threadgroup]]) {
  T v = T(l) + 1;
  out[l * 10 + 0] = simd_sum(v);
  out[l * 10 + 1] = simd_prefix_exclusive_sum(v);
  out[l * 10 + 2] = simd_prefix_inclusive_product(v % 3 + 1);
  out[l * 10 + 3] = simd_shuffle_down(v, ushort(3));
  out[l * 10 + 4] = simd_shuffle_xor(v, ushort(5));
  out[l * 10 + 5] = T(static_cast<ulong>(simd_ballot(v % 3 == 0)));
  out[l * 10 + 6] = simd_broadcast(v, ushort(5));
  out[l * 10 + 7] = simd_max(v);
  out[l * 10 + 8] = simd_shuffle_and_fill_up(v, T(100) + v, ushort(2));
  // only the lanes of odd index: the others are inactive for this call
  out[l * 10 + 9] = l % 2 ? simd_sum(v) : T(-1);
}
template [[host_name("simd_functions_int")]] kernel void simd_functions<int>(
    device int* out [[buffer(0)]], uint l [[thread_index_in_threadgroup]]);

// Every thread-position attribute, eleven values per thread of a 2D grid.
template <typename T>
kernel void positions(device T* out [[buffer(0)]], uint2 grid [[thread_position_in_grid]],
                      uint2 in_group [[thread_position_in_threadgroup]], uint2 group [[threadgroup_position_in_grid]],
                      uint2 size [[threads_per_threadgroup]], uint2 groups [[threadgroups_per_grid]],
                      uint2 total [[threads_per_grid]], uint index [[thread_index_in_threadgroup]],
                      ushort lane [[thread_index_in_simdgroup]], ushort simdgroup [[simdgroup_index_in_threadgroup]],
                      uint width [[threads_per_simdgroup]]) {
  device T* o = out + (grid.y * total.x + grid.x) * 16;
  o[0] = grid.x; o[1] = grid.y; o[2] = in_group.x; o[3] = in_group.y; o[4] = group.x; o[5] = group.y;
  o[6] = size.x; o[7] = size.y; o[8] = groups.x; o[9] = groups.y; o[10] = total.x; o[11] = total.y;
  o[12] = index; o[13] = lane; o[14] = simdgroup; o[15] = width;
}
template [[host_name("positions")]] kernel void positions<uint>(
    device uint* out [[buffer(0)]], uint2 grid [[thread_position_in_grid]],
    uint2 in_group [[thread_position_in_threadgroup]], uint2 group [[threadgroup_position_in_grid]],
    uint2 size [[threads_per_threadgroup]], uint2 groups [[threadgroups_per_grid]],
    uint2 total [[threads_per_grid]], uint index [[thread_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]], ushort simdgroup [[simdgroup_index_in_threadgroup]],
    uint width [[threads_per_simdgroup]]);
