"""Prints every metric of every kernel of a report as NVIDIA's ncu_report
module reads it, as JSON: [{name: {value, instances, last}}, ...]: the value (null when the
report holds none), the number of per-instance values and the last of them
(as a number and as text). Usage: ncu_report_dump.py MODULE_DIR LIBRARY_DIR REPORT
"""
import json
import sys


def main():
    module_dir, library_dir, path = sys.argv[1:4]
    sys.path.insert(0, module_dir)
    import ncu_report  # noqa: E402  (found only through MODULE_DIR)

    kinds = ncu_report.IMetric
    try:
        ctx = ncu_report._ncu_report.load_report(path, library_dir)
    except Exception as e:  # a report this ncu_report cannot load: no output
        print(f"ncu_report cannot load {path}: {e}", file=sys.stderr)
        return
    out = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            metrics = {}
            for name in action.metric_names():
                m = action.metric_by_name(name)
                kind = m.kind()
                if not m.has_value():
                    value = None
                elif kind == kinds.ValueKind_STRING:
                    value = m.as_string() or ""
                elif kind in (kinds.ValueKind_UINT32, kinds.ValueKind_UINT64):
                    value = m.as_uint64()
                elif kind in (kinds.ValueKind_FLOAT, kinds.ValueKind_DOUBLE):
                    value = m.as_double()
                else:
                    continue
                n = m.num_instances()
                last = None
                if n and kind in (kinds.ValueKind_FLOAT, kinds.ValueKind_DOUBLE):
                    last = m.as_double(n - 1)
                elif n and kind in (kinds.ValueKind_UINT32, kinds.ValueKind_UINT64):
                    last = m.as_uint64(n - 1)
                last_text = m.as_string(n - 1) if n else None
                metrics[name] = {"value": value, "instances": n, "last": last, "last_text": last_text}
            out.append(metrics)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
