"""`import keet` against the keet executable and NVIDIA's ncu_report.

Run by ctest (Python.Module) with PYTHONPATH=build/python, KEET_BINARY (the
executable), KEET_TEST_REPORT (a report tests/web/write_report.cc writes) and,
when ../shared is there, KEET_NCU_ORACLE (ncu-oracle-2024.1: its NVIDIA
samples and its ncu_report module).
"""
import json
import os
import shutil
import subprocess
import sys
import threading

import pytest

import keet

KEET = os.environ.get("KEET_BINARY", "keet")
REPORT = os.environ["KEET_TEST_REPORT"]
ORACLE = os.environ.get("KEET_NCU_ORACLE", "")


def cli(*args):
    r = subprocess.run([KEET, *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def test_open_reads_the_kernels_and_their_metrics_as_keet_metrics_does():
    r = keet.open(REPORT)
    assert r.format == "ncu-rep" and len(r) == 1 and not r.partial
    k = r.kernels[0]
    assert "strided_copy" in k.name and k.index == 0
    assert k.grid == (8192, 1, 1) and k.block == (256, 1, 1)
    rc, out, err = cli("metrics", REPORT, "--format", "json")
    assert rc == 0, err
    want = json.loads(out)["kernels"][0]["metrics"]
    got = k.metrics
    assert set(got) == set(want)
    for name, m in want.items():
        assert got[name].value == pytest.approx(m["value"]) if isinstance(m["value"], float) else got[name].value == m["value"]
        assert got[name].unit == m["unit"], name
    assert k.duration_ns == pytest.approx(want["gpu__time_duration.sum"]["value"])
    assert k["gpu__time_duration.sum"].kind in ("double", "float", "uint64", "uint32")
    with pytest.raises(KeyError):
        k["no__such.metric"]
    assert k.metric("no__such.metric") is None


def test_analyze_is_the_json_contract_keet_analyze_writes():
    a = keet.open(REPORT).analyze()
    rc, out, err = cli("analyze", REPORT, "--format", "json")
    assert rc == 0, err
    assert a.to_json() == out
    assert a.schema == "keet.analysis/1"
    assert a.kernels[0].bottleneck.class_ == "memory"
    assert a["kernels"][0]["bottleneck"]["class"] == "memory"
    assert "<svg" in a._repr_html_()


def test_filters_pick_kernels_as_the_command_line_does():
    assert len(keet.open(REPORT, kernel="regex:strided")) == 1
    assert len(keet.open(REPORT, kernel="regex:^nothing$")) == 0
    assert len(keet.open(REPORT, launch_skip=1)) == 0
    assert len(keet.open(REPORT, kernel=0, launch_count=1)) == 1


@pytest.mark.skipif(not shutil.which("zstd"), reason="the zstd tool is not installed (scripts/bootstrap installs it)")
def test_a_compressed_report_reads_as_the_plain_one(tmp_path):
    packed = tmp_path / "report.ncu-repz"
    subprocess.run(["zstd", "-q", "-o", str(packed), REPORT], check=True)
    r, plain = keet.open(packed), keet.open(REPORT)
    assert r.format == "ncu-rep"  # the container is zstd; the report inside is an .ncu-rep
    assert r.kernels[0].values() == plain.kernels[0].values()


def test_errors_raise_keet_error_with_keets_message(tmp_path):
    with pytest.raises(keet.Error, match="No such file"):
        keet.open(tmp_path / "absent.ncu-rep")
    junk = tmp_path / "junk.ncu-rep"
    junk.write_bytes(b"\x00\x01not a report" * 10)
    with pytest.raises(keet.Error) as e:
        keet.open(junk)
    assert str(e.value).startswith(str(junk)), "the message names the file"
    with pytest.raises(keet.Error, match="regex"):
        keet.open(REPORT, kernel="regex:(")
    with pytest.raises(keet.Error):
        keet.diff(REPORT, junk)


def test_a_truncated_report_reads_as_far_as_it_goes(tmp_path):
    big = [p for p in fixtures() if p.endswith(".ncu-rep") and os.path.getsize(p) > 2_000_000]
    if not big:
        pytest.skip("needs a fixture report over 2 MB (../shared)")
    cut = tmp_path / "cut.ncu-rep"
    with open(big[0], "rb") as f:
        cut.write_bytes(f.read(os.path.getsize(big[0]) * 3 // 4))
    r = keet.open(cut)
    assert r.partial and len(r) >= 1
    assert "runs past the end of the file" in r.warnings[0]
    with pytest.warns(RuntimeWarning, match="runs past the end of the file"):
        a = r.analyze()
    assert len(a.kernels) == len(r)


def test_small_and_large_reports_read_alike(tmp_path):
    # A report of 16 MB or less is read into the reading thread's buffer, kept
    # from one report to the next; a larger one is mapped and streamed. The
    # same blocks repeated past 16 MB read as the small report's kernels again.
    small = [p for p in fixtures() if p.endswith(".ncu-rep") and 2_000_000 < os.path.getsize(p) < 8_000_000]
    if not small:
        pytest.skip("needs a fixture report of 2 to 8 MB (../shared)")
    data = open(small[0], "rb").read()
    blocks = 8 + int.from_bytes(data[4:8], "little")  # magic, then the file header's size and bytes
    copies = (16 << 20) // len(data) + 1
    large = tmp_path / "large.ncu-rep"
    large.write_bytes(data + data[blocks:] * copies)
    assert os.path.getsize(large) > 16 << 20
    one = keet.open(small[0])
    many = keet.open(large)
    assert len(many) == len(one) * (copies + 1)
    again = keet.open(small[0])  # after the large one, the buffer again
    for k in (many.kernels[0], many.kernels[-1], again.kernels[-1]):
        assert k.values() == one.kernels[k.index % len(one)].values()


def test_a_missing_metric_says_it_is_absent_and_which_section_collects_it():
    k = keet.open(REPORT).kernels[0]
    # A metric KEET's catalogue places in a section, absent from this report.
    absent = next(n for n in ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                              "sm__warps_active.avg.pct_of_peak_sustained_active",
                              "smsp__inst_executed.sum", "launch__registers_per_thread")
                  if n not in k and keet._keet.section_of(n))
    with pytest.raises(keet.MetricNotFound) as caught:
        k[absent]
    e = caught.value
    assert isinstance(e, KeyError), "code that catches KeyError still catches it"
    assert e.kernel == 0 and e.section and e.option.startswith("--section ")
    assert f"kernel #0 of this report holds no metric {e.metric!r}" in str(e)
    assert f"ncu collects it with {e.option}" in str(e)
    with pytest.raises(keet.MetricNotFound) as unknown:
        k["no__such.metric"]
    assert unknown.value.section is None and "does not know which ncu section" in str(unknown.value)


def test_documents_show_their_fields_to_dir_and_help():
    a = keet.open(REPORT).analyze()
    kernel = a.kernels[0]
    names = dir(kernel)
    for field in ("bottleneck", "findings", "duration_ns", "to_pandas", "to_json"):
        assert field in names, names
    assert "class_" in dir(kernel.bottleneck), "a keyword field is reached with a trailing _"
    assert "keet.analysis/1" in repr(a)
    import pydoc
    text = pydoc.render_doc(kernel, renderer=pydoc.plaintext)
    assert "to_pandas" in text and "JSON contract" in text


def test_tables_for_pandas():
    pd = pytest.importorskip("pandas", reason="python3-pandas is not installed (scripts/bootstrap installs it)")
    r = keet.open(REPORT)
    kernels = r.to_pandas(metrics=["gpu__time_duration.sum", "no__such.metric"])
    assert isinstance(kernels, pd.DataFrame) and len(kernels) == 1
    assert kernels["duration_ns"][0] == pytest.approx(r.kernels[0].duration_ns)
    assert kernels["gpu__time_duration.sum"][0] == pytest.approx(r.kernels[0].duration_ns)
    assert kernels["no__such.metric"].isna().all()
    metrics = r.kernels[0].to_pandas()
    assert list(metrics.columns) == ["name", "value", "unit", "kind"] and len(metrics) == len(r.kernels[0].metrics)
    a = r.analyze()
    findings = a.to_pandas()
    assert len(findings) == len(a.kernels[0].findings) > 0
    assert list(findings["id"]) == [f.id for f in a.kernels[0].findings]
    assert set(findings["kernel"]) == {0}
    d = keet.diff(REPORT, REPORT).to_pandas()
    assert len(d) == 1 and d["verdict"][0] == "unchanged"


def test_explain_source_and_occupancy_are_the_commands_json():
    e = keet.explain("long_scoreboard")
    status, out, err = cli("explain", "long_scoreboard", "--format", "json")
    assert status == 0, err
    assert e.to_json() == out
    o = keet.occupancy(cc="8.6", threads=256, regs=64)
    status, out, err = cli("occupancy", "--cc", "8.6", "--threads", "256", "--regs", "64", "--smem", "0",
                           "--format", "json")
    assert status == 0, err
    assert o.to_json() == out
    src = keet.open(REPORT).source(kernel=0)
    status, out, err = cli("source", REPORT, "--format", "json", "--top", "20", "-k", "0")
    assert status == 0, err
    assert src.to_json() == out
    with pytest.raises(keet.Error):
        keet.occupancy(cc="0.1", threads=256, regs=64)


def test_diff_pairs_two_reports():
    d = keet.diff(REPORT, REPORT)
    assert d.schema == "keet.diff/1"
    assert d.pairs[0].verdict == "unchanged"


def test_timeline_reads_a_pytorch_profiler_trace(tmp_path):
    # What torch.profiler's export_chrome_trace writes, cut to two kernels
    # launched by two runtime calls, gzip-compressed as tensorboard's handler
    # writes it: the module gives the keet.timeline/1 document the CLI writes.
    import gzip
    events = []
    for i, (ts, dur) in enumerate([(1000.0, 5.5), (2000.0, 7.25)]):
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": ts - 10, "dur": 4, "args": {"correlation": 100 + i}})
        events.append({"ph": "X", "cat": "kernel", "name": "void add_kernel<float>(float*, int)", "pid": 0,
                       "tid": 7, "ts": ts, "dur": dur,
                       "args": {"device": 0, "stream": 7, "correlation": 100 + i, "grid": [64, 1, 1],
                                "block": [256, 1, 1]}})
    trace = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
             "traceEvents": events}
    path = tmp_path / "step.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(trace).encode()))
    t = keet.timeline(path)
    status, out, err = cli("timeline", str(path), "--format", "json")
    assert status == 0, err
    assert t.to_json() == out
    assert t.schema == "keet.timeline/1"
    kernels = t.kernels if "kernels" in t else t.summary.kernels
    assert sum(k.launches for k in kernels) == 2
    with pytest.raises(keet.Error):
        keet.timeline(tmp_path / "absent.json")


def test_threads_read_at_once():
    counts = []
    threads = [threading.Thread(target=lambda: counts.append(len(keet.open(REPORT).kernels[0].metrics)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(counts) == 4 and len(set(counts)) == 1


def test_reports_keep_their_names_when_the_shared_name_table_starts_anew(tmp_path):
    # More metric names than the process-wide table keeps (2**18): the next
    # report starts a new table, and both reports still name their metrics.
    many = 2**18 + 1000
    names = [f"made_up__metric_{i}.sum" for i in range(many)]
    ids = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context", "Stream"]
    header = [f'"{c}"' for c in ids] + [f'"{n}"' for n in names]
    units = ['""'] * len(ids) + ['"byte"'] * many
    values = ['"0"', '"1"', '"a.out"', '"host"', '"wide"', '"2025-Feb-26 20:10:07"', '"1"', '"7"']
    values += [f'"{i}"' for i in range(many)]
    wide = tmp_path / "wide.csv"
    wide.write_text("\n".join(",".join(row) for row in (header, units, values)) + "\n")
    first = keet.open(wide)
    plain = keet.open(REPORT)
    again = keet.open(wide)
    for r in (first, again):
        k = r.kernels[0]
        values = k.values()
        assert len(values) == many and list(values)[-1] == names[-1]
        assert k["made_up__metric_123456.sum"].value == 123456
    assert plain.kernels[0].values() == keet.open(REPORT).kernels[0].values()
    assert "gpu__time_duration.sum" in plain.kernels[0].metrics


def test_ncu_report_shaped_accessors():
    ctx = keet.load_report(REPORT)
    assert ctx.num_ranges() == 1
    rng = ctx.range_by_idx(0)
    assert rng.num_actions() == 1
    action = rng.action_by_idx(0)
    assert action.name() == "strided_copy"
    assert action.metric_by_name("gpu__time_duration.sum").as_double() > 0
    assert action.metric_by_name("no__such.metric") is None
    assert "gpu__time_duration.sum" in action.metric_names()


def nvidia_samples():
    if not ORACLE or not os.access(ORACLE, os.X_OK):
        return []
    examples = subprocess.run([ORACLE, "--examples"], capture_output=True, text=True).stdout.strip()
    out = []
    for root, _, files in os.walk(examples):
        out += [os.path.join(root, f) for f in sorted(files) if f.endswith(".ncu-rep")]
    return sorted(out)


def fixtures():
    root = os.environ.get("KEET_FIXTURES", "")
    out = []
    for dirpath, _, files in os.walk(root) if root else []:
        out += [os.path.join(dirpath, f) for f in files if f.endswith((".ncu-rep", ".nsight-cuprof-report"))]
    return sorted(out)


@pytest.mark.skipif(not nvidia_samples(), reason="../shared/tools/ncu-oracle-2024.1 is absent")
def test_every_metric_of_every_report_agrees_with_ncu_report():
    """NVIDIA's own module, run in its own process (it needs its library
    folder), against keet's values for every metric of every kernel of
    NVIDIA's samples and of every fixture report (../shared/fixtures/public):
    the value (or its absence), the number of instances and the last one."""
    root = subprocess.run([ORACLE, "--root"], capture_output=True, text=True).stdout.strip()
    module_dir = os.path.join(root, "usr/lib/python3/dist-packages")
    library_dir = os.path.join(root, "usr/lib/nsight-compute/target/linux-desktop-glibc_2_11_3-x64")
    dump = os.path.join(os.path.dirname(__file__), "ncu_report_dump.py")
    checked = reports = 0
    for path in nvidia_samples() + fixtures():
        r = subprocess.run([sys.executable, dump, module_dir, library_dir, path], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        if not r.stdout:  # ncu_report 2024.1 cannot load it (ncu_report_dump.py says why)
            continue
        theirs = json.loads(r.stdout)
        reports += 1
        ours = keet.load_report(path).range_by_idx(0)
        assert ours.num_actions() == len(theirs), path
        for i, metrics in enumerate(theirs):
            action = ours.action_by_idx(i)
            for name, want in metrics.items():
                m = action.metric_by_name(name)
                where = f"{path} #{i}: {name}"
                assert m is not None, f"{where} missing"
                value = want["value"]
                if value is None or isinstance(value, str):
                    assert m.value() == value, where
                elif value != value:  # NaN, as the report stores it
                    assert m.value() != m.value(), where
                else:
                    assert m.value() == pytest.approx(value, rel=1e-12, abs=0), where
                assert m.num_instances() == want["instances"], where
                if want["instances"]:
                    last = m._m.instances[-1][1]
                    if isinstance(last, str):
                        assert last == want["last_text"], where
                    elif want["last"] is not None and want["last"] == want["last"]:
                        assert last == pytest.approx(want["last"], rel=1e-12, abs=0), where
                checked += 1
    print(f"{reports} reports, {checked} metrics agree with ncu_report")
    assert checked > 1000
