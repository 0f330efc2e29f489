#!/usr/bin/env python3
"""Print a SparseDecoding Workbench run file (*.sdw.h5) with plain h5py.

usage: tools/read_run.py RUN.sdw.h5 [RUN.sdw.h5 ...]

Shows the root attributes (format, schema version, kind, status), the
provenance and every group and dataset with its shape and dtype, to show that
run files need nothing but h5py to read (see docs/run-format.md).
"""
import sys

import h5py


def text(v):
    return v.decode("utf-8") if isinstance(v, bytes) else v


def main(paths):
    for path in paths:
        with h5py.File(path, "r") as f:
            print(f"== {path}")
            for k in ("sdw_format", "sdw_schema_version", "run_kind", "run_id", "status", "checkpoint"):
                print(f"  {k}: {text(f.attrs.get(k))}")
            prov = f["provenance"].attrs
            for k in ("tool_name", "tool_version", "host", "gpu", "model_id", "created_utc", "finished_utc"):
                print(f"  provenance/{k}: {text(prov.get(k))}")

            def visit(name, obj):
                if isinstance(obj, h5py.Dataset):
                    print(f"  /{name}: {obj.dtype} {obj.shape}")

            f.visititems(visit)
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
