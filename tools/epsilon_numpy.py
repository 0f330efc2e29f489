#!/usr/bin/env python3
"""The epsilon analysis and its noise floor, recomputed with numpy alone.

usage: tools/epsilon_numpy.py --reference REF.sdw.h5 --runs RUN.sdw.h5 [RUN ...]
                              [--k 64] [--rel-tol 1e-6]

An implementation independent of the C++ engine (gpu/epsilon_analysis.cpp),
written from docs/epsilon.md and docs/run-format.md: it reads the calibration
run files with h5py (laid out as tools/read_run.py shows) and prints JSON with
the same names as `sdw-cli analyze epsilon --json` (NaN as null):

  inputs[i]: name, modules, layer, d_in, k_used, eps[run], noise[run], reference_noise
  modules[m]: module, input, layer, eps[run], ratio, noise[run], beyond_noise
  runs[j] / reference: path, source, storage, tokens, noise_unavailable
  summary: numerator_run, denominator_run, n_modules, n_ar_lower, share_ar_lower,
           median_ratio, ratio_q1, ratio_q3, n_noise_modules, n_beyond_noise,
           n_ar_lower_beyond_noise

For each projection input, with H = xtx / tokens (storage "full") or
H ~ V diag(eigvals) V^T (storage "topk"):
  H_D = U L U^T of the reference; U_k, L_k its top-k eigenpairs above
  rel_tol * lambda_max; W = U_k L_k^(-1/2)
  eps_k(C) = max |eig(W^T H_C W) - 1|
  noise_k(C) = sqrt(2 n_a n_b) / (n_a + n_b) * max |eig(W^T (H_a - H_b) W)|
with the halves H_a = xtx_a / tokens_a, H_b = xtx_b / tokens_b (top-k storage:
V P_a V^T, V P_b V^T from eigproj_a / eigproj_b), and a module differs beyond
noise when |eps(C) - eps(AR)| > (noise(C) + noise(AR)) / sqrt(2).
"""
import argparse
import json
import math
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:  # the CI test relies on this message
    print(f"error: {e.name} is missing: install python3-h5py and python3-numpy "
          "(tools/quickstart.sh installs them)", file=sys.stderr)
    sys.exit(2)

INPUTS = "calibration/inputs"
PROJECTION_RANK = {"q_proj": 0, "k_proj": 0, "v_proj": 0, "o_proj": 1, "gate_proj": 2, "up_proj": 2, "down_proj": 3}


def text(v):
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


def rank(name):
    return PROJECTION_RANK.get(name.rsplit(".", 1)[-1], 4)


def full_names(input_name, modules_attr):
    mods = [m.strip() for m in modules_attr.split(",") if m.strip()]
    if not mods:
        return [input_name]
    prefix = input_name.rsplit(".", 1)[0] + "." if "." in input_name else ""
    return [m if "." in m else prefix + m for m in mods]


def sym(a):
    return 0.5 * (a + a.T)


class Run:
    """One calibration run: per input, what the analysis needs."""

    def __init__(self, path):
        self.path = path
        self.f = h5py.File(path, "r")
        if text(self.f.attrs["run_kind"]) != "calibration":
            raise SystemExit(f"{path} is not a calibration run")
        cal = self.f["calibration"]
        self.source = text(cal.attrs.get("source", ""))
        self.tokens = int(cal.attrs.get("tokens_collected", 0))
        self.inputs = {}
        self.noise_unavailable = ""
        any_topk = False
        for name, g in cal["inputs"].items():
            topk = "xtx" not in g
            any_topk = any_topk or topk
            self.inputs[name] = g
            why = self.halves_problem(g, name, topk)
            if why and not self.noise_unavailable:
                self.noise_unavailable = why
        self.storage = "topk" if any_topk else text(cal.attrs.get("storage", "full"))

    def halves_problem(self, g, name, topk):
        a, b = ("eigproj_a", "eigproj_b") if topk else ("xtx_a", "xtx_b")
        if a not in g or b not in g or "tokens_a" not in g.attrs or "tokens_b" not in g.attrs:
            halves = self.f["calibration"].attrs.get("halves")
            if halves is None:
                return "no half statistics (written before they were collected)"
            return "collected without half statistics" if int(halves) == 0 else f"input '{name}' has no half statistics"
        ta, tb, n = int(g.attrs["tokens_a"]), int(g.attrs["tokens_b"]), int(g.attrs["tokens"])
        if ta < 0 or tb < 0 or ta + tb != n:
            return f"the halves of input '{name}' do not add up to its tokens"
        if ta == 0 or tb == 0:
            return f"a half of input '{name}' is empty"
        return ""

    def topk(self, name):
        g = self.inputs[name]
        return "xtx" not in g

    def hessian(self, name):
        g = self.inputs[name]
        return sym(g["xtx"][:].astype(np.float64) / float(g.attrs["tokens"]))

    def eigenpairs(self, name):
        """Top-k storage: eigenvalues descending [k], eigenvectors as columns [d, k], the order used."""
        g = self.inputs[name]
        vals = g["eigvals"][:].astype(np.float64)
        order = np.argsort(-vals, kind="stable")
        return vals[order], g["eigvecs"][:].astype(np.float64)[order].T, order

    def half_difference(self, name, W):
        """W^T (H_a - H_b) W and the half-budget scale, or None without usable halves."""
        if self.noise_unavailable:
            return None
        g = self.inputs[name]
        ta, tb = float(g.attrs["tokens_a"]), float(g.attrs["tokens_b"])
        scale = math.sqrt(2.0 * ta * tb) / (ta + tb)
        if self.topk(name):
            _, vecs, order = self.eigenpairs(name)
            pa = g["eigproj_a"][:].astype(np.float64)[np.ix_(order, order)]
            pb = g["eigproj_b"][:].astype(np.float64)[np.ix_(order, order)]
            vw = vecs.T @ W
            return vw.T @ (pa - pb) @ vw, scale
        d = g["xtx_a"][:].astype(np.float64) / ta - g["xtx_b"][:].astype(np.float64) / tb
        return W.T @ d @ W, scale


def max_abs_eig(a):
    return float(np.max(np.abs(np.linalg.eigvalsh(sym(a)))))


def quantile(values, q):
    """Linear interpolation between order statistics (numpy's default); NaN left out, inf sorts last."""
    v = sorted(x for x in values if not math.isnan(x))
    if not v:
        return math.nan
    pos = min(max(q, 0.0), 1.0) * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    frac = pos - lo
    if frac == 0 or v[lo] == v[hi]:
        return v[lo]
    return v[lo] + frac * (v[hi] - v[lo])


def ratio(c, a):
    if math.isnan(c) or math.isnan(a):
        return math.nan
    if a == 0:
        return math.nan if c == 0 else math.inf
    return c / a


def ratio_pair(runs):
    if len(runs) < 2:
        return -1, -1
    ar = [i for i, r in enumerate(runs) if r.source == "ar"]
    other = [i for i, r in enumerate(runs) if r.source != "ar"]
    if len(ar) == 1 and other:
        for i in other:
            if runs[i].source == "fixed":
                return i, ar[0]
        return other[0], ar[0]
    return 0, 1


def analyze(ref, runs, k, rel_tol):
    for r in runs:
        if set(r.inputs) != set(ref.inputs):
            raise SystemExit(f"different models: {ref.path} and {r.path} have different inputs")
    order = sorted(ref.inputs, key=lambda n: (int(ref.inputs[n].attrs["layer"]), rank(n), n))
    inputs = []
    for name in order:
        g = ref.inputs[name]
        if ref.topk(name):
            values, vectors, _ = ref.eigenpairs(name)
        else:
            ev, evec = np.linalg.eigh(ref.hessian(name))
            values, vectors = ev[::-1], evec[:, ::-1]
        lmax = values[0]
        alive = int(np.sum(values > rel_tol * lmax)) if lmax > 0 else 0
        k_used = min(k, alive)
        W = vectors[:, :k_used] / np.sqrt(values[:k_used])[None, :] if k_used > 0 else None

        def noise(run):
            if W is None:
                return math.nan
            hd = run.half_difference(name, W)
            return math.nan if hd is None else hd[1] * max_abs_eig(hd[0])

        eps, noises = [], []
        for run in runs:
            if W is None:
                eps.append(math.nan)
            elif run.topk(name):
                vals, vecs, _ = run.eigenpairs(name)
                vw = vecs.T @ W
                eps.append(float(np.max(np.abs(np.linalg.eigvalsh(sym(vw.T @ (vw * vals[:, None]))) - 1.0))))
            else:
                eps.append(float(np.max(np.abs(np.linalg.eigvalsh(sym(W.T @ run.hessian(name) @ W)) - 1.0))))
            noises.append(noise(run))
        inputs.append({"name": name,
                       "modules": full_names(name, text(g.attrs.get("modules", ""))),
                       "layer": int(g.attrs["layer"]),
                       "d_in": int(g.attrs["d_in"]),
                       "k_used": k_used,
                       "eps": eps,
                       "noise": noises,
                       "reference_noise": noise(ref)})

    num, den = ratio_pair(runs)
    modules, eC, eA, nC, nA = [], [], [], [], []
    for i, inp in enumerate(inputs):
        for mod in inp["modules"]:
            row = {"module": mod, "input": i, "layer": inp["layer"], "eps": inp["eps"], "noise": inp["noise"],
                   "ratio": math.nan, "beyond_noise": None}
            if num >= 0:
                c, a = inp["eps"][num], inp["eps"][den]
                nc, na = inp["noise"][num], inp["noise"][den]
                row["ratio"] = ratio(c, a)
                if not any(math.isnan(x) for x in (c, a, nc, na)):
                    row["beyond_noise"] = abs(c - a) > (nc + na) / math.sqrt(2.0)
                eC.append(c)
                eA.append(a)
                nC.append(nc)
                nA.append(na)
            modules.append(row)

    summary = {"numerator_run": num, "denominator_run": den}
    if num >= 0:
        pairs = [(c, a) for c, a in zip(eC, eA) if not (math.isnan(c) or math.isnan(a))]
        ratios = [ratio(c, a) for c, a in pairs]
        with_noise = [(c, a, x, y) for c, a, x, y in zip(eC, eA, nC, nA) if not any(math.isnan(v) for v in (c, a, x, y))]
        beyond = [(c, a) for c, a, x, y in with_noise if abs(c - a) > (x + y) / math.sqrt(2.0)]
        summary.update({"n_modules": len(pairs),
                        "n_ar_lower": sum(1 for c, a in pairs if a < c),
                        "share_ar_lower": sum(1 for c, a in pairs if a < c) / len(pairs) if pairs else math.nan,
                        "median_ratio": quantile(ratios, 0.5),
                        "ratio_q1": quantile(ratios, 0.25),
                        "ratio_q3": quantile(ratios, 0.75),
                        "n_noise_modules": len(with_noise),
                        "n_beyond_noise": len(beyond),
                        "n_ar_lower_beyond_noise": sum(1 for c, a in beyond if a < c)})

    def info(r):
        return {"path": r.path, "source": r.source, "storage": r.storage, "tokens": r.tokens,
                "noise_unavailable": r.noise_unavailable or None}

    return {"analysis": "epsilon", "implementation": "numpy", "k": k, "rel_tol": rel_tol,
            "reference": info(ref), "runs": [info(r) for r in runs],
            "inputs": inputs, "modules": modules, "summary": summary}


def nan_to_none(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: nan_to_none(v) for k, v in x.items()}
    if isinstance(x, list):
        return [nan_to_none(v) for v in x]
    return x


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reference", required=True)
    p.add_argument("--runs", nargs="+", required=True)
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--rel-tol", type=float, default=1e-6)
    a = p.parse_args()
    if a.k < 1:
        p.error("--k must be >= 1")
    ref = Run(a.reference)
    runs = [Run(r) for r in a.runs]
    print(json.dumps(nan_to_none(analyze(ref, runs, a.k, a.rel_tol)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
