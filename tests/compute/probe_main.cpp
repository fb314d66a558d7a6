// Launches the kernels of tests/compute/*.metal on the CPU backend and prints what they wrote
// (tests/test_compute_model.py reads it).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_lookup.h"

using namespace mpsgen::cpu;

namespace {
bool checked = false;  // argv[2] == "checked": the kernels' checked variants

struct Buffer {
  void* data;
  uint64_t bytes;
  uint32_t element;
  const char* name;
};

// Runs every threadgroup of a launch; prints its error, if any.
bool launch(const char* name, std::vector<Buffer> given, compute::Launch l, std::vector<uint32_t> tg = {}) {
  const std::string host_name = std::string(name) + (checked ? "!checked" : "");
  const KernelEntry* k = find_compute_kernel(host_name);
  if (!k) {
    std::printf("%s: no such kernel\n", host_name.c_str());
    return false;
  }
  std::vector<void*> buffers;
  std::vector<const char*> names;
  std::vector<uint64_t> bytes;
  std::vector<uint32_t> elements;
  for (const Buffer& b : given) {
    buffers.push_back(b.data);
    names.push_back(b.name);
    bytes.push_back(b.bytes);
    elements.push_back(b.element);
  }
  std::vector<const char*> tg_names(tg.size(), "partial");
  l.buffers = buffers.data();
  l.threadgroup_lengths = tg.data();
  l.nthreadgroup = uint32_t(tg.size());
  l.buffer_names = names.data();
  l.buffer_bytes = bytes.data();
  l.buffer_element_sizes = elements.data();
  l.nbuffers = uint32_t(given.size());
  l.threadgroup_names = tg_names.data();
  if (const char* e = compute::run_groups(k->compute, l, 0, compute::threadgroup_count(l))) {
    std::printf("error %s\n", e);
    return false;
  }
  return true;
}
compute::Launch grid(uint32_t gx, uint32_t gy, uint32_t tx, uint32_t ty) {
  return compute::Launch{{gx, gy, 1}, {tx, ty, 1}, nullptr, nullptr, 0};
}
template <typename T>
void print(const char* tag, const std::vector<T>& v) {
  std::printf("%s", tag);
  for (const T& x : v) std::printf(" %.9g", double(x));
  std::printf("\n");
}
} // namespace

template <typename T>
Buffer of(std::vector<T>& v, const char* name) {
  return {v.data(), v.size() * sizeof(T), uint32_t(sizeof(T)), name};
}
template <typename T>
Buffer one(T& v, const char* name) {
  return {&v, sizeof(T), uint32_t(sizeof(T)), name};
}

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  checked = argc > 2 && std::string(argv[2]) == "checked";
  if (what == "row_sum") {
    const uint32_t rows = 5, cols = 100;
    std::vector<float> in(rows * cols), out(rows);
    for (size_t i = 0; i < in.size(); ++i) in[i] = float(i % 7) + 0.25f;
    uint32_t ncols = cols;
    if (launch("row_sum_float", {of(in, "input"), of(out, "output"), one(ncols, "ncols")}, grid(rows * 64, 1, 64, 1), {64 * 4})) print("out", out);
  } else if (what == "neighbour" || what == "neighbour_without_barrier") {
    std::vector<float> in(256), out(256);
    for (int i = 0; i < 256; ++i) in[i] = float(i);
    if (launch(what.c_str(), {of(out, "out"), of(in, "in")}, grid(256, 1, 128, 1))) print("out", out);
  } else if (what == "divergent_barrier") {
    std::vector<float> out(64);
    launch("divergent_barrier", {of(out, "out")}, grid(64, 1, 64, 1));
  } else if (what == "simd_functions") {
    std::vector<int> out(40 * 10);
    if (launch("simd_functions_int", {of(out, "out")}, grid(40, 1, 40, 1))) print("out", out);
  } else if (what == "positions") {
    // 2D, with partial threadgroups at the right and bottom edges (dispatchThreads)
    const uint32_t gx = 37, gy = 5;
    std::vector<uint32_t> out(gx * gy * 16);
    if (launch("positions", {of(out, "out")}, grid(gx, gy, 16, 4))) print("out", out);
  } else if (what == "histogram") {
    const uint32_t n = 1000;
    std::vector<uint32_t> bins(4), values(n);
    float fsum = 0;
    uint16_t hsum[2] = {0, 0};  // half bits
    for (uint32_t i = 0; i < n; ++i) values[i] = i * 7 + i / 3;
    if (launch("histogram_uint", {of(bins, "bins"), of(values, "values"), one(fsum, "fsum"), {hsum, 4, 2, "hsum"}}, grid(n, 1, 256, 1))) {
      print("bins", bins);
      std::printf("fsum %.9g\nhsum %u %u\n", double(fsum), hsum[0], hsum[1]);
    }
  } else if (what == "histogram_racy") {
    std::vector<uint32_t> bins(4), values(1000);
    for (uint32_t i = 0; i < 1000; ++i) values[i] = i * 7 + i / 3;
    if (launch("histogram_racy", {of(bins, "bins"), of(values, "values")}, grid(1000, 1, 256, 1))) print("bins", bins);
  } else if (what == "shifted_copy") {
    std::vector<float> in(100), out(101);  // one more than the launch: the last write is out[100]
    if (launch("shifted_copy", {{out.data(), 100 * sizeof(float), 4, "out"}, of(in, "in")}, grid(100, 1, 64, 1))) {
      std::printf("ok\n");
    }
  }
  return 0;
}
