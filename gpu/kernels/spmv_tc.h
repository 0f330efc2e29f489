#pragma once
// The tensor-core SpMV's host-visible pieces (gpu/kernels/spmv_impl.cuh, docs/kernels.md): which
// projections take it, and the byte selectors and formulas that expand a row's kept values to
// their columns. Plain C++ (no CUDA): the CPU tests check them.

#include <bit>
#include <cstdint>

namespace sdw::kernels {

// Whether an N:M projection at this batch takes the tensor-core path: mode 1 from batch 2,
// -1 (the default) from batch 3, where the engines were as fast or faster with it on the
// H200 (docs/decode-engine.md, "Batch 2-3"; at batch 2 the CUDA-core kernel wins), 0 never.
// Patterns with M | 8 (every mask byte holds four kept columns); 8:16 (every 16 columns
// hold eight, a longer expansion: SpmvConfig::tcM = 16) from batch 5 by default. On an H100
// (docs/decode-engine.md, "8:16 on the tensor cores") the engine's 8:16 step at batch 4 / 5 /
// 6 / 8 ran 699.7 / 648.2 / 714.8 / 834.4 tokens/s on the CUDA cores and 682.1 / 812.6 /
// 905.5 / 1209.5 on the tensor cores (Llama-3.1-8B); Qwen3-14B 436.8 / 356.5 / 398.7 / 460.4
// and 347.3 / 424.0 / 478.5 / 635.7 (8522a77): the CUDA cores ahead at batch 4 (by 3% and
// 26%), the tensor cores from batch 5 (by 25% and 19%).
// 16:32 (tcM = 32, the 8:16 expansion on a window of each row's values, tc32Window) also from
// batch 5: on the same H100 at 532f6d0 it ran 0.78 / 0.94x of the CUDA cores at batch 2 / 4 and
// 1.26 / 1.37 / 1.53x at batch 5 / 6 / 8 (Llama-3.1-8B), 0.67 / 0.78x and 1.24 / 1.29 / 1.43x
// (Qwen3-14B).
constexpr bool spmvUseTensorCores(int mode, int batch, int m) {
  if (batch < 2 || m <= 0 || (8 % m != 0 && m != 16 && m != 32)) return false;
  if (m >= 16) return mode > 0 || (mode < 0 && batch >= 5);
  return mode > 0 || (mode < 0 && batch >= 3);
}

// The first batch (2-8) at which an N:M projection takes the tensor cores, 0 for none: what a
// run's description names.
constexpr int spmvTensorCoresFromBatch(int mode, int m) {
  for (int b = 2; b <= 8; ++b)
    if (spmvUseTensorCores(mode, b, m)) return b;
  return 0;
}

// The expansion of a mask byte's kept values to their columns is a handful of byte permutes
// (`prmt.b32 d, a, b, c` in its default mode: selector nibbles 0-3 pick a's bytes, 4-7 b's; a
// nibble with bit 3 set would replicate a sign, so no selector sets it) and masks, the
// selectors and masks looked up per byte. Output register n holds positions 2n, 2n + 1 (the
// lower position in the low half), 16-bit values. A permute of two value registers picks any
// of four values but cannot write a zero; a permute of one value register and the zero operand
// (b = 0, nibble 4) can. So each output register takes at most two permutes: one of a single
// register with zeros elsewhere, or one of a register pair, and-ed with the mask of the
// positions it fills (0xffff in their halves), or two of those or-ed (one `lop3`).
// These formulas are the kernel's own (spmv_impl.cuh: Prmt = `prmt.b32`) and the host tests'
// (a model of `prmt.b32`), so the selectors are checked through the code that runs.

// A host model of `prmt.b32 d, a, b, c` in its default mode (only c's low 16 bits count).
constexpr std::uint32_t prmtModel(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  const std::uint64_t ab = a | std::uint64_t(b) << 32;
  std::uint32_t d = 0;
  for (int i = 0; i < 4; ++i) d |= static_cast<std::uint32_t>((ab >> (8 * ((c >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
  return d;
}

// Bytes of four kept columns (M | 8): the byte's values 0, 1 in lo and 2, 3 in hi; its table
// entry w0 = A | D << 16 (output 0 from lo and zeros, output 3 from hi and zeros), w1 = B | C
// << 16 (outputs 1 and 2 from the pair lo, hi), w2, w3 their masks: six permutes and two
// `and` per byte. Position p holds value popc(b & (2^p - 1)): for a byte of four that is value
// 0-1 at positions 0-1 and 2-3 at positions 6-7.
template <typename Prmt>
constexpr void tcExpandFour(std::uint32_t lo, std::uint32_t hi, std::uint32_t w0, std::uint32_t w1, std::uint32_t w2,
                            std::uint32_t w3, Prmt prmt, std::uint32_t* e) {
  e[0] = prmt(lo, 0u, w0);
  e[1] = prmt(lo, hi, w1) & w2;
  e[2] = prmt(lo, hi, w1 >> 16) & w3;
  e[3] = prmt(hi, 0u, w0 >> 16);
}

// 8:16 (SpmvConfig::tcM = 16): a lane's 16 columns are one group of the pattern, so their
// eight values are again the row's 16 contiguous bytes (registers v0..v3, values 2r, 2r + 1
// in v_r), but a byte may hold any 0-8 of them. The low byte's position p holds value
// popc(b0 & (2^p - 1)) (counted from the bottom) and the high byte's position p value
// 8 - popc(b1 >> p) (counted from the top), so output register n < 4 (positions 2n, 2n + 1 of
// the low byte) draws on lo[0..n] and output register 4 + n (the high byte's) on hi[n..3]:
//   e0 = P(lo0, 0)                    e7 = P(hi3, 0)
//   e1 = P(lo0, lo1) & m              e6 = P(hi2, hi3) & m
//   e2 = P(lo0, lo1) & m | P(lo2, 0)  e5 = P(hi2, hi3) & m | P(hi1, 0)
//   e3 = P(lo0, lo1) & m | P(lo2, lo3) & m'   e4 = P(hi2, hi3) & m | P(hi0, hi1) & m'
// six permutes and four `and` / `lop3` per side, 20 instructions a row (two bytes of four: 12;
// before, with permutes of one register each, 32 and 16).
// Entries: [side][byte][8] words: w0 = sel(e0|e7) | sel(e1|e6) << 16, w1 = the two of e2|e5,
// w2 the two of e3|e4, w3 = mask of e1|e6, w4 of e2|e5, w5, w6 of e3|e4 (w7 unused). For
// 16:32 (below) lo and hi are not the same registers. Padding rows (0xffff in a word's low
// half, zero values) stay in range.
template <typename Prmt>
constexpr void tcExpandSixteen(const std::uint32_t (&lo)[4], const std::uint32_t (&hi)[4], const std::uint32_t (&L)[8],
                               const std::uint32_t (&H)[8], Prmt prmt, std::uint32_t* e) {
  e[0] = prmt(lo[0], 0u, L[0]);
  e[1] = prmt(lo[0], lo[1], L[0] >> 16) & L[3];
  e[2] = (prmt(lo[0], lo[1], L[1]) & L[4]) | prmt(lo[2], 0u, L[1] >> 16);
  e[3] = (prmt(lo[0], lo[1], L[2]) & L[5]) | (prmt(lo[2], lo[3], L[2] >> 16) & L[6]);
  e[7] = prmt(hi[3], 0u, H[0]);
  e[6] = prmt(hi[2], hi[3], H[0] >> 16) & H[3];
  e[5] = (prmt(hi[2], hi[3], H[1]) & H[4]) | prmt(hi[1], 0u, H[1] >> 16);
  e[4] = (prmt(hi[2], hi[3], H[2]) & H[5]) | (prmt(hi[0], hi[1], H[2] >> 16) & H[6]);
}

namespace detail {
// One permute of an output register: the value registers r0 (and r0 + 1 for a pair, else the
// zero operand) it reads, where its selector goes (word, shift) and its mask (word, or -1 for a
// permute with zeros, which needs none).
struct TcSource {
  int r0, regs, selWord, selShift, maskWord;
};
// Place value j (in register j / 2, half j % 2) at half `half` of an output through the first
// source holding it: its selector's two nibbles, and its mask's half.
constexpr void tcPlace(std::uint32_t* w, const TcSource* src, int nSrc, unsigned j, unsigned half) {
  for (int k = 0; k < nSrc; ++k) {
    const TcSource& s = src[k];
    const int reg = static_cast<int>(j / 2);
    if (reg < s.r0 || reg >= s.r0 + s.regs) continue;
    const unsigned first = 4u * static_cast<unsigned>(reg - s.r0) + 2u * (j & 1u);
    const unsigned sh = static_cast<unsigned>(s.selShift) + 8u * half;
    w[s.selWord] = (w[s.selWord] & ~(0xffu << sh)) | ((first | (first + 1) << 4) << sh);
    if (s.maskWord >= 0) w[s.maskWord] |= 0xffffu << (16 * half);
    return;
  }
}
}  // namespace detail

// The entries of bytes of four (tcExpandFour): [byte][4] words. Bytes of other counts (padding
// rows, whose values are zero) get selectors in range.
struct TcSelectorTable {
  std::uint32_t v[1024];
};
constexpr TcSelectorTable makeTcSelectors() {
  TcSelectorTable t{};
  // Output n's sources: 0 from lo and zeros, 1 and 2 from the pair, 3 from hi and zeros.
  constexpr detail::TcSource src[4] = {{0, 1, 0, 0, -1}, {0, 2, 1, 0, 2}, {0, 2, 1, 16, 3}, {1, 1, 0, 16, -1}};
  for (unsigned b = 0; b < 256; ++b) {
    std::uint32_t* w = t.v + 4 * b;
    w[0] = 0x44444444u;  // zeros where nothing is placed
    unsigned idx = 0;
    for (unsigned p = 0; p < 8; ++p) {
      if (!((b >> p) & 1u)) continue;
      if (idx < 4) detail::tcPlace(w, &src[p >> 1], 1, idx, p & 1u);
      ++idx;
    }
  }
  return t;
}

struct TcSelectorTable16 {
  std::uint32_t v[2 * 256 * 8];
};
constexpr TcSelectorTable16 makeTcSelectors16() {
  TcSelectorTable16 t{};
  // Per side, output k = 0..3 (e0..e3 of the low side, e7..e4 of the high side): its sources in
  // the order tried (a register, then a pair; or a pair, then the next pair).
  constexpr detail::TcSource lo[4][2] = {{{0, 1, 0, 0, -1}, {0, 0, 0, 0, -1}},
                                         {{0, 2, 0, 16, 3}, {0, 0, 0, 0, -1}},
                                         {{0, 2, 1, 0, 4}, {2, 1, 1, 16, -1}},
                                         {{0, 2, 2, 0, 5}, {2, 2, 2, 16, 6}}};
  constexpr detail::TcSource hi[4][2] = {{{3, 1, 0, 0, -1}, {0, 0, 0, 0, -1}},
                                         {{2, 2, 0, 16, 3}, {0, 0, 0, 0, -1}},
                                         {{2, 2, 1, 0, 4}, {1, 1, 1, 16, -1}},
                                         {{2, 2, 2, 0, 5}, {0, 2, 2, 16, 6}}};
  for (unsigned side = 0; side < 2; ++side)
    for (unsigned b = 0; b < 256; ++b) {
      std::uint32_t* w = t.v + (side * 256 + b) * 8;
      w[0] = 0x44444444u;  // e0 / e7 (and e1 / e6, masked): zeros by default
      w[1] = 0x44440000u;  // e2 / e5's single register
      for (unsigned p = 0; p < 8; ++p) {
        if (!((b >> p) & 1u)) continue;
        const unsigned j = side == 0 ? static_cast<unsigned>(std::popcount(b & ((1u << p) - 1u)))
                                     : 8u - static_cast<unsigned>(std::popcount(b >> p));
        const unsigned n = p >> 1, k = side == 0 ? n : 3 - n;
        detail::tcPlace(w, side == 0 ? lo[k] : hi[k], 2, j, p & 1u);
      }
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
