#pragma once
// The tensor-core SpMV's host-visible pieces (gpu/kernels/spmv_impl.cuh, docs/kernels.md): which
// projections take it, and the byte selectors that expand a mask byte's four kept values
// to their columns. Plain C++ (no CUDA): the CPU tests check them.

#include <bit>
#include <cstdint>

namespace sdw::kernels {

// Whether an N:M projection at this batch takes the tensor-core path: mode 1 from batch 2,
// -1 (the default) from batch 4, 0 never. From batch 3 (fada040 to 701b579), where the engines
// were as fast or faster with it than with the kernel that stages x on the H200
// (docs/decode-engine.md, "Batch 2-3"); since batch 3 takes x by shuffle, from batch 4: on an
// H100 the 2:4 step at batch 3 ran 670.1 / 376.3 tokens/s by shuffle against 589.7 / 324.4 on
// the tensor cores (Llama-3.1-8B / Qwen3-14B, 701b579), at batch 4 863.6 / 486.7 (2f56975,
// batch-1 launches) against 907.4 / 533.6 (701b579, step-tuned).
// Patterns with M | 8 (every mask byte holds four kept columns); 8:16 (every 16 columns
// hold eight, a longer expansion: SpmvConfig::tcM = 16) from batch 5 by default. On an H100
// (docs/decode-engine.md, "8:16 on the tensor cores") the engine's 8:16 step at batch 4 / 5 /
// 6 / 8 ran 699.7 / 648.2 / 714.8 / 834.4 tokens/s on the CUDA cores and 682.1 / 812.6 /
// 905.5 / 1209.5 on the tensor cores (Llama-3.1-8B); Qwen3-14B 436.8 / 356.5 / 398.7 / 460.4
// and 347.3 / 424.0 / 478.5 / 635.7 (8522a77): the CUDA cores ahead at batch 4 (by 3% and
// 26%), the tensor cores from batch 5 (by 25% and 19%). With the selector table laid out for
// the banks (991d94c) 8:16 took the tensor cores from batch 4: there, on an H100, 833.9 against
// 754.4 tokens/s on the CUDA cores (Llama-3.1-8B), 461.3 against 459.5 (Qwen3-14B).
// 16:32 (tcM = 32, the 8:16 expansion on a window of each row's values, tc32Window) also from
// batch 5: on the same H100 at 532f6d0 it ran 0.78 / 0.94x of the CUDA cores at batch 2 / 4 and
// 1.26 / 1.37 / 1.53x at batch 5 / 6 / 8 (Llama-3.1-8B), 0.67 / 0.78x and 1.24 / 1.29 / 1.43x
// (Qwen3-14B); at batch 4 in the same call as 8:16's above 696.5 / 373.6 against 712.5 / 446.3.
// Since batch 3 and 4 take x by shuffle on the CUDA cores (2f56975), 8:16 is back to batch 5: on
// an H100 the engine's 8:16 step at batch 4 ran 815.7 / 442.8 tokens/s on the tensor cores and
// 863.6-863.9 / 486.7-488.2 on the CUDA cores by shuffle (Llama-3.1-8B / Qwen3-14B; the shuffle
// rows are 2:4's and 16:32's, the CUDA-core kernel reads every pattern alike).
constexpr bool spmvUseTensorCores(int mode, int batch, int m) {
  if (batch < 2 || m <= 0 || (8 % m != 0 && m != 16 && m != 32)) return false;
  if (m >= 16) return mode > 0 || (mode < 0 && batch >= 5);
  return mode > 0 || (mode < 0 && batch >= 4);
}

// Whether the CUDA-core SpMV can take x by shuffle from registers at this batch (the batch-1
// kernel's walk, SpmvConfig::unroll 200 + U): batch 2-4, whose column of x fits two 32-bit
// words; batch 5-8 stage x in shared memory.
constexpr bool spmvShuffleBatch(int batch) { return batch >= 2 && batch <= 4; }
// Whether an unroll code names the shuffle path (200 + U, U = 1..3).
constexpr bool spmvShuffleUnroll(int unroll) { return unroll > 200 && unroll <= 203; }

// The first batch (2-8) at which an N:M projection takes the tensor cores, 0 for none: what a
// run's description names.
constexpr int spmvTensorCoresFromBatch(int mode, int m) {
  for (int b = 2; b <= 8; ++b)
    if (spmvUseTensorCores(mode, b, m)) return b;
  return 0;
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

// 8:16 (SpmvConfig::tcM = 16): a lane's 16 columns are one group of the pattern, so their
// eight values are again the row's 16 contiguous bytes (registers v0..v3, values 2r, 2r + 1
// in v_r), but a byte may hold any 0-8 of them. The low byte's position p holds value
// popc(b0 & (2^p - 1)) (counted from the bottom) and the high byte's position p value
// 8 - popc(b1 >> p) (counted from the top), so output register n < 4 (positions 2n, 2n + 1
// of the low byte) draws on v0..vn and output register 4 + n (the high byte's) on vn..v3:
//   e[n]     = OR over r <= n of prmt(v_r, lo[b0][n (n + 1) / 2 + r]),
//   e[4 + n] = OR over r >= n of prmt(v_r, hi[b1][4 n - n (n - 1) / 2 + r - n]),
// ten selectors per byte and side (20 prmt and 12 or per 16 columns, against 12 and 4 for a
// byte of four). Selector k sits in bits 16 (k & 1) of word k / 2 of its (side, byte) entry;
// words 0-3 at v[4 (256 side + byte) ..] (one 16-byte load), word 4 at v[kTcSel16Tail + 256
// side + byte] (one 4-byte load). So a quarter-warp's 16-byte loads of random bytes spread
// over all 8 bank groups, and a warp's 4-byte loads over all 32 banks (10 KiB; an [side][byte][8]
// layout used 4 groups and 4 banks). Padding rows (0xffff in a word's low half, zero values)
// stay in range.
constexpr int kTcSel16Tail = 2 * 256 * 4;
struct TcSelectorTable16 {
  std::uint32_t v[kTcSel16Tail + 2 * 256];
};
// Where word w (0-4) of entry (side, byte) sits in TcSelectorTable16::v, and the word.
constexpr unsigned tcSel16Index(unsigned side, unsigned b, unsigned w) {
  return w < 4 ? 4 * (side * 256 + b) + w : kTcSel16Tail + side * 256 + b;
}
constexpr std::uint32_t tcSel16Word(const TcSelectorTable16& t, unsigned side, unsigned b, unsigned w) {
  return t.v[tcSel16Index(side, b, w)];
}
constexpr TcSelectorTable16 makeTcSelectors16() {
  TcSelectorTable16 t{};
  for (unsigned side = 0; side < 2; ++side)
    for (unsigned b = 0; b < 256; ++b) {
      std::uint32_t sel[10];
      for (auto& x : sel) x = 0x4444u;
      for (unsigned p = 0; p < 8; ++p) {
        if (!((b >> p) & 1u)) continue;
        const unsigned idx = side == 0 ? static_cast<unsigned>(std::popcount(b & ((1u << p) - 1u)))
                                       : 8u - static_cast<unsigned>(std::popcount(b >> p));
        const unsigned n = p >> 1, half = p & 1u, r = idx >> 1, first = 2 * (idx & 1u);
        const unsigned k = side == 0 ? n * (n + 1) / 2 + r : 4 * n - n * (n - 1) / 2 + (r - n);
        sel[k] = (sel[k] & ~(0xffu << (8 * half))) | ((first | (first + 1) << 4) << (8 * half));
      }
      for (unsigned k = 0; k < 10; ++k) t.v[tcSel16Index(side, b, k / 2)] |= sel[k] << (16 * (k & 1u));
    }
  return t;
}

// 16:32 (SpmvConfig::tcM = 32): a 32-column word is one group of sixteen values, and the lane
// that owns its low 16 columns (half 0) or its high 16 (half 1) finds a variable share of them
// there: c = popc(mask & 0xffff) values in the low half, 16 - c in the high one. Its outer byte
// (columns 0-7 of half 0, 24-31 of half 1) draws on the row's first or last eight values, as
// 8:16's low or high side does; its inner byte (columns 8-15 of half 0, counted from the top
// of the half's values; columns 16-23 of half 1, counted from their bottom) on the eight values
// that end at value c (half 0) or start there (half 1). So the 8:16 selectors expand both
// bytes, the low side on vLo and the high side on vHi:
//   half 0: vLo = values 0-7,                vHi = values c - 8 .. c - 1 (the window),
//   half 1: vLo = values c .. c + 7 (the window), vHi = values 8-15.
// The window starts at value tc32WindowStart, in [-8, 16]; its values outside 0-15 are never
// selected (a byte's selectors reach only as far as its own kept columns), so they may hold
// anything.
constexpr int tc32WindowStart(std::uint32_t mask, int half) { return std::popcount(mask & 0xffffu) - 8 + 8 * half; }

// The window's four registers (16-bit pairs, the lower value in the low half) from the row's
// sixteen values r[0..7] (value 2j in r[j]'s low half), without indexing registers by a run-time
// value: window pair k is pair A[q + k] of A = {-, -, -, -, r0..r7, -, ...} with q = s / 2 + 4
// (rounded down) in [0, 12], taken through shifts by 8, 4, 2 and 1 pairs, then funnelled by one
// value where s is odd. The shift by 8 costs nothing: wherever its result is in range it is
// B = {r4..r7, r0..r7} (position i < 4 is only in range shifted, 4-11 only unshifted). Then 8 +
// 6 + 5 selects and 4 funnels; positions out of range come out as whatever they hold.
struct Tc32Window {
  std::uint32_t v[4];
};
constexpr Tc32Window tc32Window(const std::uint32_t (&r)[8], int s) {
  // Written out, not looped: the device code must keep every one of these in registers.
  const unsigned q = static_cast<unsigned>((s >> 1) + 4);
  const bool s4 = q & 4u, s2 = q & 2u, s1 = q & 1u, odd = s & 1;
  // d[i] = shift by 4 of b = {r4..r7, r0..r7}: b[i + 4] or b[i]
  const std::uint32_t d0 = s4 ? r[0] : r[4], d1 = s4 ? r[1] : r[5], d2 = s4 ? r[2] : r[6], d3 = s4 ? r[3] : r[7];
  const std::uint32_t d4 = s4 ? r[4] : r[0], d5 = s4 ? r[5] : r[1], d6 = s4 ? r[6] : r[2], d7 = s4 ? r[7] : r[3];
  const std::uint32_t e0 = s2 ? d2 : d0, e1 = s2 ? d3 : d1, e2 = s2 ? d4 : d2, e3 = s2 ? d5 : d3;
  const std::uint32_t e4 = s2 ? d6 : d4, e5 = s2 ? d7 : d5;
  const std::uint32_t t0 = s1 ? e1 : e0, t1 = s1 ? e2 : e1, t2 = s1 ? e3 : e2, t3 = s1 ? e4 : e3, t4 = s1 ? e5 : e4;
  Tc32Window w{};
  w.v[0] = odd ? (t0 >> 16) | (t1 << 16) : t0;
  w.v[1] = odd ? (t1 >> 16) | (t2 << 16) : t1;
  w.v[2] = odd ? (t2 >> 16) | (t3 << 16) : t2;
  w.v[3] = odd ? (t3 >> 16) | (t4 << 16) : t3;
  return w;
}

}  // namespace sdw::kernels
