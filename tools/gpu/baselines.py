#!/usr/bin/env python3
"""Library baselines on the GPU machine: cuBLAS dense (F.linear) and 2:4
cuSPARSELt (torch._cslt_sparse_mm) per projection shape and batch, timed like
the C++ harness: CUDA-graph-captured launches over weight copies several times
the L2 size, median of repeats. A cross-check for `sdw-cli bench kernels`.

    python3 tools/gpu/baselines.py OUT.json
"""
import json
import statistics
import sys

import torch
import torch.nn.functional as F

SHAPES = [(4096, 4096), (1024, 4096), (14336, 4096), (4096, 14336), (5120, 5120), (1024, 5120),
          (17408, 5120), (5120, 17408), (8192, 5120), (5120, 8192), (25600, 5120), (5120, 25600)]


def time_graph(fn, copies, launches, reps=7):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(copies):
            fn(i)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(launches):
            fn(i % copies)
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1000 / launches)
    return statistics.median(ts)


def main():
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "entries": []}
    for rows, cols in SHAPES:
        nbytes = rows * cols * 2
        copies = max(4, (256 << 20) // nbytes + 1)
        ws = [torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
        launches = max(2 * copies, 20)
        for batch in (1, 2, 4, 8):
            x = torch.randn(batch, cols, device="cuda", dtype=torch.bfloat16)
            ys = [None]

            def dense(i):
                ys[0] = F.linear(x, ws[i])

            e = {"rows": rows, "cols": cols, "batch": batch}
            e["cublas_us"] = time_graph(dense, copies, launches)
            try:
                mask = torch.tensor([1, 1, 0, 0], device="cuda", dtype=torch.bfloat16).repeat(rows, cols // 4)
                comp = [torch._cslt_compress(w * mask) for w in ws]
                xt = x.t().contiguous()

                def sparse(i):
                    ys[0] = torch._cslt_sparse_mm(comp[i], xt)

                try:
                    e["cusparselt_us"] = time_graph(sparse, copies, launches)
                    e["cusparselt_n"] = batch
                except Exception as err:  # noqa: BLE001 - report and pad
                    xp = torch.zeros(cols, 16, device="cuda", dtype=torch.bfloat16)
                    xp[:, :batch] = xt

                    def sparse_p(i):
                        ys[0] = torch._cslt_sparse_mm(comp[i], xp)

                    e["cusparselt_us"] = time_graph(sparse_p, copies, launches)
                    e["cusparselt_n"] = 16
                    e["cusparselt_note"] = "padded to 16 columns: " + str(err).splitlines()[0][:120]
                del comp
            except Exception as err:  # noqa: BLE001
                e["cusparselt_error"] = str(err).splitlines()[0][:200]
            print(e, flush=True)
            out["entries"].append(e)
        del ws
        torch.cuda.empty_cache()
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
