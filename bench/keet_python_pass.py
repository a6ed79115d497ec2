#!/usr/bin/env python3
# In-process comparison for scripts/bench: `import keet` loads each report and
# makes one pass over every metric value of every kernel (keet.open and
# Kernel.values(); with --shaped, the ncu_report-shaped accessors, one call per
# metric), the job bench/ncu_report_pass.py gives NVIDIA's module. Prints
# "seconds kernels metrics checksum path" per report, the best of --repeat runs
# (time.perf_counter inside this process).
# Usage: keet_python_pass.py --module-dir BUILD/python [--repeat N] REPORT...
import argparse
import sys
import time

from ncu_report_pass import print_best  # beside this file


def one_pass(keet, path, shaped):
    t0 = time.perf_counter()
    kernels = metrics = 0
    checksum = 0.0
    if shaped:  # ncu_report's shape, one call per metric
        ctx = keet.load_report(path)
        action_values = []
        for r in range(ctx.num_ranges()):
            rng = ctx.range_by_idx(r)
            for a in range(rng.num_actions()):
                action = rng.action_by_idx(a)
                action_values.append([action.metric_by_name(n).value() for n in action.metric_names()])
    else:  # keet's own: every value of a kernel in one call
        action_values = [k.values().values() for k in keet.open(path)]
    for values in action_values:
        kernels += 1
        for v in values:
            metrics += 1
            if isinstance(v, str):
                checksum += len(v)
            elif v is not None:
                checksum += v
    return time.perf_counter() - t0, kernels, metrics, checksum


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module-dir", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shaped", action="store_true", help="through the ncu_report-shaped accessors")
    ap.add_argument("reports", nargs="+")
    args = ap.parse_args()
    sys.path.insert(0, args.module_dir)
    import keet  # noqa: E402  (the build's module)

    print_best(args.reports, args.repeat, lambda path: one_pass(keet, path, args.shaped), keet.Error)


if __name__ == "__main__":
    main()
