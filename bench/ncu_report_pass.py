#!/usr/bin/env python3
# In-process comparison for scripts/bench: NVIDIA's own reader (the ncu_report
# module that ships with Nsight Compute) loads each report and makes one pass
# over every metric of every kernel, reading its value (the same job as
# keet_bench's BM_FullDecode). Prints "seconds kernels metrics checksum path" per report,
# the best of --repeat runs, measured with time.perf_counter inside this process
# (interpreter start-up and module import are outside the timing).
# Usage: ncu_report_pass.py --module-dir DIR --library-dir DIR [--repeat N] REPORT...
import argparse
import sys
import time


def one_pass(ncu_report, path, library_dir):
    kinds = ncu_report.IMetric
    t0 = time.perf_counter()
    ctx = ncu_report._ncu_report.load_report(path, library_dir)
    kernels = metrics = 0
    checksum = 0.0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            kernels += 1
            for name in action.metric_names():
                m = action.metric_by_name(name)
                metrics += 1
                kind = m.kind()
                if kind == kinds.ValueKind_STRING:
                    checksum += len(m.as_string() or "")
                elif kind in (kinds.ValueKind_UINT32, kinds.ValueKind_UINT64):
                    checksum += m.as_uint64()
                elif kind in (kinds.ValueKind_FLOAT, kinds.ValueKind_DOUBLE):
                    checksum += m.as_double()
    return time.perf_counter() - t0, kernels, metrics, checksum


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module-dir", required=True)
    ap.add_argument("--library-dir", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("reports", nargs="+")
    args = ap.parse_args()
    sys.path.insert(0, args.module_dir)
    import ncu_report  # noqa: E402  (found only through --module-dir)

    # Any failure is a report this ncu_report cannot load.
    print_best(args.reports, args.repeat, lambda path: one_pass(ncu_report, path, args.library_dir), Exception)


def print_best(reports, repeat, run, failure):
    """For each report, "seconds kernels metrics checksum path" of the best of
    `repeat` runs of run(path) -> (seconds, kernels, metrics, checksum); the
    checksum sums every value (a string's length), so two readers that agree
    on every value agree on it. "- 0 0 0 path (why)" when run raises
    `failure`. bench/keet_python_pass.py prints the same way."""
    for path in reports:
        best = None
        kernels = metrics = 0
        checksum = 0.0
        try:
            for _ in range(repeat):
                dt, kernels, metrics, checksum = run(path)
                best = dt if best is None else min(best, dt)
            print(f"{best:.6f} {kernels} {metrics} {checksum!r} {path}", flush=True)
        except failure as e:
            print(f"- 0 0 0 {path} ({type(e).__name__}: {e})", flush=True)


if __name__ == "__main__":
    main()
