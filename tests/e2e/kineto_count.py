#!/usr/bin/env python3
"""A plain count of PyTorch profiler (Kineto) traces, for tests/e2e/kineto_test.cc.

Independent of keet's reader: Python's json module with exact decimals. For
each trace given, prints one JSON line: the path, the complete ('X') events
of each kind (kernels, copies, memsets, runtime and driver calls) with a
valid ts and dur, and per device the union of its kernel, copy and memset
intervals in ns (ts and dur in microseconds, to the nanosecond, half up)."""
import gzip
import json
import sys
from decimal import ROUND_HALF_UP, Decimal

KINDS = {'kernel': 'kernels', 'gpu_memcpy': 'copies', 'memcpy': 'copies', 'gpu_memset': 'memsets',
         'memset': 'memsets', 'cuda_runtime': 'calls', 'cuda_driver': 'calls', 'runtime': 'calls'}


def ns(v):
    return int((Decimal(str(v)) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


for path in sys.argv[1:]:
    raw = open(path, 'rb').read()
    if raw[:2] == b'\x1f\x8b':
        raw = gzip.decompress(raw)
    trace = json.loads(raw, parse_float=Decimal)
    counts = {'kernels': 0, 'copies': 0, 'memsets': 0, 'calls': 0}
    intervals = {}
    for e in trace['traceEvents']:
        if not isinstance(e, dict) or e.get('ph') != 'X' or 'ts' not in e or 'dur' not in e:
            continue
        kind = KINDS.get(str(e.get('cat', '')).lower())
        if not kind or ns(e['dur']) < 0:
            continue
        counts[kind] += 1
        if kind != 'calls':
            device = e.get('args', {}).get('device', e.get('pid'))
            start = ns(e['ts'])
            intervals.setdefault(int(device), []).append((start, start + ns(e['dur'])))
    busy = {}
    for device, spans in intervals.items():
        spans.sort()
        total, end = 0, None
        for s, e in spans:
            if end is None or s > end:
                total += e - s
                end = e
            elif e > end:
                total += e - end
                end = e
        busy[str(device)] = total
    print(json.dumps({'path': path, **counts, 'busy_ns': busy}))
