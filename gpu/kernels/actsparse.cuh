#pragma once
// Run-time activation sparsity in the decode engine (gpu/kernels/actsparse.cu):
// a projection's input rows, in place, keep either their `keep` largest
// magnitudes (per-token top-k, ties at the cut kept, as the eager pass's
// sparsifyActivations: x.masked_fill(|x| < keep-th largest |x|, 0)) or the
// entries above a fixed magnitude threshold (TEAL; |x| <= t zeroed, compared
// in fp32, as thresholdActivations). One block per row; the row is element
// (b, i) at x + b * strideB + i * strideC (decode.cuh's XLayout).

#include "gpu/kernels/decode.cuh"

namespace sdw::kernels {

// keep in [1, cols): top-k; keep <= 0 or >= cols with threshold < 0: nothing to do
// (no launch). threshold >= 0: the threshold form (keep ignored).
cudaError_t launchSparsifyRows(void* x, DType dtype, std::int64_t cols, int batch, XLayout layout, int keep,
                               float threshold, cudaStream_t stream, bool pdl = false);

}  // namespace sdw::kernels
