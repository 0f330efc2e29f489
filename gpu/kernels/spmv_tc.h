#pragma once
// The tensor-core SpMV's host-visible pieces (gpu/kernels/spmv.cu, docs/kernels.md): which
// projections take it, and the byte selectors that expand a mask byte's four kept values
// to their columns. Plain C++ (no CUDA): the CPU tests check them.

#include <cstdint>

namespace sdw::kernels {

// Whether an N:M projection at this batch takes the tensor-core path: mode 1 from batch 2,
// -1 (the default) from batch 3, where the engines were as fast or faster with it on the
// H200 (docs/decode-engine.md, "Batch 2-8"; at batch 2 the CUDA-core kernel wins), 0 never; patterns with M | 8 only (every mask
// byte then holds four kept columns).
constexpr bool spmvUseTensorCores(int mode, int batch, int m) {
  return batch >= 2 && m > 0 && 8 % m == 0 && (mode > 0 || (mode < 0 && batch >= 3));
}

// Selectors of mask byte b, entries 4b + (0, 1, 2): A0 | B3 << 16, A1 | B1 << 16,
// A2 | B2 << 16 (entry 4b + 3 unused). An (prmt's selector for `prmt.b32 d, lo, 0, An`)
// places the byte's values from the low register (values 0, 1) into output register n
// (positions 2n, 2n + 1: the lower position in the low half) and Bn those from the high
// register (values 2, 3); byte selector 4 (a byte of the zero operand) elsewhere. Position
// p holds value popc(b & (2^p - 1)); for a byte of four that lies in the low register for
// positions 0-1, the high one for 6-7, either for 2-5, so
//   e0 = prmt(lo, A0), e1 = prmt(lo, A1) | prmt(hi, B1), e2 = prmt(lo, A2) | prmt(hi, B2),
//   e3 = prmt(hi, B3).
// Bytes of other counts (padding rows) get selectors in range; their values are zero.
struct TcSelectorTable {
  std::uint32_t v[1024];
};
constexpr TcSelectorTable makeTcSelectors() {
  TcSelectorTable t{};
  for (unsigned b = 0; b < 256; ++b) {
    std::uint32_t lo[4] = {0x4444u, 0x4444u, 0x4444u, 0x4444u}, hi[4] = {0x4444u, 0x4444u, 0x4444u, 0x4444u};
    unsigned idx = 0;
    for (unsigned p = 0; p < 8; ++p) {
      if (!((b >> p) & 1u)) continue;
      const unsigned o = p >> 1, sh = 8 * (p & 1);
      if (idx < 2) lo[o] = (lo[o] & ~(0xffu << sh)) | ((2u * idx | (2u * idx + 1) << 4) << sh);
      else if (idx < 4) hi[o] = (hi[o] & ~(0xffu << sh)) | ((2u * (idx - 2) | (2u * (idx - 2) + 1) << 4) << sh);
      ++idx;
    }
    t.v[4 * b] = lo[0] | hi[3] << 16;
    t.v[4 * b + 1] = lo[1] | hi[1] << 16;
    t.v[4 * b + 2] = lo[2] | hi[2] << 16;
  }
  return t;
}

}  // namespace sdw::kernels
