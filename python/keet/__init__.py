"""KEET in Python: read Nsight Compute reports without ncu and diagnose them.

    import keet
    r = keet.open("profile.ncu-rep")          # .ncu-rep, .ncu-repz, ncu CSV, nvprof CSV
    for k in r.kernels:
        print(k.index, k.name, k.duration_ns, k["dram__bytes.sum"].value)
    a = r.analyze()                           # the keet.analysis/1 document as objects
    print(a.kernels[0].bottleneck.class_)     # `class` is a keyword: class_
    a                                         # in a notebook: the HTML card
    r.to_pandas(); k.to_pandas(); a.to_pandas()  # kernels, metrics, findings (pandas optional)
    k["no_such.metric"]                       # keet.MetricNotFound: absent, and the section that collects it
    keet.explain("dram__bytes"); r.source(0); keet.occupancy(cc="8.6", threads=256, regs=64)

Reading happens in C++ (libkeet's readers) with the GIL released; analyze()
and diff() run keet's own commands in this process, so their fields are the
JSON contracts' (docs/contracts.md) byte for byte. Errors raise keet.Error
with KEET's one-line message. load_report() gives an accessor layer shaped
like NVIDIA's ncu_report module (docs/python.md).
"""
import json as _json
import keyword as _keyword
import warnings as _warnings

from . import _keet

Error = _keet.Error

__all__ = ["Error", "MetricNotFound", "open", "diff", "timeline", "explain", "occupancy", "load_report", "Report",
           "Kernel", "Metric", "Document"]


class MetricNotFound(KeyError):
    """A metric a kernel does not hold. metric: the name asked for; kernel:
    the kernel's index; section and option: the ncu section that collects it
    and the ncu option that does (None when KEET's catalogue does not say)."""

    def __init__(self, metric, kernel, section=None, option=None, what=None, held=0):
        super().__init__(metric)
        self.metric, self.kernel, self.section, self.option = metric, kernel, section, option
        where = f"kernel #{kernel} of this report holds no metric {metric!r} ({held} metrics were collected)"
        if section:
            self.message = f"{where}: ncu collects it with {option} ({what})" if what else f"{where}: ncu collects it with {option}"
        else:
            self.message = (f"{where}; KEET does not know which ncu section collects it "
                            f"(keet metrics REPORT --grep PATTERN lists what the report holds)")

    def __str__(self):
        return self.message


def _pandas():
    try:
        import pandas
    except ImportError:
        raise Error("to_pandas() needs pandas (pip install pandas, or Debian's python3-pandas)") from None
    return pandas


def _run(args):
    """Runs `keet ARGS` in this process and returns its output. A failure
    raises keet.Error with keet's last line; output that came with a failure
    (a truncated report: what could be read) is returned with a warning."""
    status, out, err = _keet.run([str(a) for a in args])
    if status in (0, 1):  # 1: a finding or regression where the command says so
        return out.decode("utf-8")
    lines = [l for l in err.splitlines() if l.strip()]
    last = lines[-1] if lines else f"keet {args[0]} exited with status {status}"
    last = last[len("keet: "):] if last.startswith("keet: ") else last
    if out.strip():
        last = last[len("warning: "):] if last.startswith("warning: ") else last
        _warnings.warn(last, RuntimeWarning, stacklevel=3)
        return out.decode("utf-8")
    raise Error(last)


def _filters(kernel=None, launch_skip=0, launch_count=None):
    args = []
    if kernel is not None:
        args += ["-k", str(kernel)]
    if launch_skip:
        args += ["-s", str(int(launch_skip))]
    if launch_count is not None:
        args += ["-c", str(int(launch_count))]
    return args


class Document:
    """A JSON contract (keet.analysis/1, keet.diff/1, ...) read as attributes:
    doc.kernels[0].bottleneck.class_ (a trailing _ reaches a Python keyword);
    doc["kernels"] works too. to_json() gives the document as KEET wrote it."""

    def __init__(self, data, text=None, html=None):
        self._data = data
        self._text = text
        self._html = html

    @staticmethod
    def _wrap(v):
        if isinstance(v, dict):
            return Document(v)
        if isinstance(v, list):
            return [Document._wrap(x) for x in v]
        return v

    def __getattr__(self, name):
        data = self.__dict__.get("_data")
        if not isinstance(data, dict):
            raise AttributeError(name)
        key = name[:-1] if name.endswith("_") and name[:-1] in data else name
        if key not in data:
            raise AttributeError(f"no field {name!r} (fields: {', '.join(sorted(data))})")
        return Document._wrap(data[key])

    def __getitem__(self, key):
        return Document._wrap(self._data[key])

    def __contains__(self, key):
        return key in self._data

    def __iter__(self):
        return iter(self._data)

    def __eq__(self, other):
        return isinstance(other, Document) and self._data == other._data

    def keys(self):
        return self._data.keys()

    def __dir__(self):
        data = self.__dict__.get("_data")
        fields = [k + "_" if _keyword.iskeyword(k) else k for k in data] if isinstance(data, dict) else []
        return sorted(set(fields) | {"keys", "to_dict", "to_json", "to_pandas"})

    def to_dict(self):
        return self._data

    def to_pandas(self):
        """A table of the document: an analysis (keet.analysis/1) gives one row
        per finding (with its kernel's index and name); a diff (keet.diff/1)
        one row per pair; a timeline (keet.timeline/1) one row per kernel; any
        other list of objects one row per object."""
        pd = _pandas()
        data = self._data
        schema = data.get("schema", "") if isinstance(data, dict) else ""
        if schema.startswith("keet.analysis/"):
            return pd.DataFrame(_finding_rows(data))
        if schema.startswith("keet.diff/"):
            return pd.json_normalize(data.get("pairs", []))
        if schema.startswith("keet.timeline/"):
            return pd.json_normalize(data.get("kernels", []))
        if isinstance(data, list):
            return pd.json_normalize(data)
        raise Error("to_pandas(): this document is not a table (an analysis, a diff, a timeline or a list)")

    def to_json(self):
        return self._text if self._text is not None else _json.dumps(self._data, indent=2)

    def __repr__(self):
        data = self._data
        schema = data.get("schema") if isinstance(data, dict) else None
        text = _json.dumps(data)
        text = text if len(text) <= 200 else text[:197] + "..."
        return f"keet.Document({schema}: {text})" if isinstance(schema, str) else f"keet.Document({text})"

    def _repr_html_(self):
        if self._html is None:
            return None
        html = self._html() if callable(self._html) else self._html
        self._html = html
        return html


def _finding_rows(analysis):
    rows = []
    for k in analysis.get("kernels", []):
        for f in k.get("findings", []):
            rows.append({"kernel": k.get("index"), "name": k.get("demangled") or k.get("name"),
                         "id": f.get("id"), "severity": f.get("severity"), "title": f.get("title"),
                         "estimated_speedup": f.get("estimated_speedup"),
                         "evidence": {e.get("label") or e.get("metric"): e.get("value")
                                      for e in f.get("evidence", []) if isinstance(e, dict)},
                         "explanation": f.get("explanation"), "advice": f.get("advice")})
    return rows


class Metric:
    """One metric of a kernel as the report stores it: value (float, int,
    str or None), unit, and its per-instance list as (key, value) pairs."""

    def __init__(self, native):
        self._m = native

    name = property(lambda self: self._m.name)
    value = property(lambda self: self._m.value)
    kind = property(lambda self: self._m.kind)
    unit = property(lambda self: self._m.unit)
    instances = property(lambda self: self._m.instances)

    def __len__(self):
        return self._m.num_instances

    def __repr__(self):
        unit = f" {self.unit}" if self.unit else ""
        return f"keet.Metric({self.name}={self.value!r}{unit})"


class Kernel:
    """One profiled launch: its names, launch, device and every metric."""

    def __init__(self, native):
        self._k = native

    index = property(lambda self: self._k.index)
    name = property(lambda self: self._k.name)
    function = property(lambda self: self._k.function)
    demangled = property(lambda self: self._k.demangled)
    mangled = property(lambda self: self._k.mangled)
    grid = property(lambda self: self._k.grid)
    block = property(lambda self: self._k.block)
    device = property(lambda self: self._k.device)
    launches = property(lambda self: self._k.launches)
    duration_ns = property(lambda self: self._k.duration_ns)

    @property
    def metrics(self):
        """Every metric, by name (the first of a repeated name)."""
        out = {}
        for i in range(len(self._k)):
            m = self._k.metric_at(i)
            out.setdefault(m.name, Metric(m))
        return out

    def values(self):
        """{name: value} of every metric in one call: the fast way to read them all."""
        return self._k.values()

    def metric(self, name):
        m = self._k.find(name)
        return Metric(m) if m is not None else None

    def __getitem__(self, name):
        m = self.metric(name)
        if m is None:
            found = _keet.section_of(str(name))
            section, option, what = (found[0], found[1], found[2]) if found else (None, None, None)
            raise MetricNotFound(name, self.index, section, option, what, len(self._k))
        return m

    def __contains__(self, name):
        return self._k.find(name) is not None

    def to_pandas(self):
        """The kernel's metrics as a table: name, value, unit, kind."""
        pd = _pandas()
        rows = [{"name": m.name, "value": m.value, "unit": m.unit, "kind": m.kind}
                for m in (self._k.metric_at(i) for i in range(len(self._k)))]
        return pd.DataFrame(rows, columns=["name", "value", "unit", "kind"])

    def __repr__(self):
        return f"keet.Kernel(#{self.index} {self.name})"


class Report:
    """A report read whole (any format KEET reads), its kernels in order."""

    def __init__(self, path, native, filters):
        self._path = path
        self._r = native
        self._filters = filters
        self._kernels = None

    path = property(lambda self: self._r.path)
    format = property(lambda self: self._r.format)
    ncu_version = property(lambda self: self._r.ncu_version)
    warnings = property(lambda self: self._r.warnings)
    partial = property(lambda self: self._r.partial)

    @property
    def kernels(self):
        if self._kernels is None:
            self._kernels = [Kernel(k) for k in self._r.kernels()]
        return self._kernels

    def __len__(self):
        return len(self._r)

    def __iter__(self):
        return iter(self.kernels)

    def analyze(self, **filters):
        """KEET's diagnosis (keet.analysis/1) of the kernels this report was
        opened with, or of those the filters (kernel, launch_skip,
        launch_count) pick."""
        chosen = _filters(**filters) if filters else self._filters
        text = _run(["analyze", self._path, "--format", "json", *chosen])
        html = lambda: _run(["analyze", self._path, "--format", "html", *chosen])  # noqa: E731
        return Document(_json.loads(text), text, html)

    def to_pandas(self, metrics=()):
        """One row per kernel: index, name, demangled, grid, block, device,
        duration_ns, and a column for each name in `metrics` (None where a
        kernel does not hold it)."""
        pd = _pandas()
        rows = []
        for k in self.kernels:
            row = {"index": k.index, "name": k.name, "demangled": k.demangled, "grid": k.grid, "block": k.block,
                   "device": k.device, "duration_ns": k.duration_ns}
            for name in metrics:
                m = k.metric(name)
                row[name] = m.value if m is not None else None
            rows.append(row)
        return pd.DataFrame(rows, columns=["index", "name", "demangled", "grid", "block", "device", "duration_ns",
                                           *metrics])

    def source(self, kernel=None, top=20, by=None):
        """The kernel's source lines (or SASS) by cost, as keet source
        --format json (keet.source/1): kernel is -k's selector (an index, a
        name or "regex:..."); None takes the kernels this report was opened with."""
        args = ["source", self._path, "--format", "json", "--top", str(int(top))]
        args += ["-k", str(kernel)] if kernel is not None else self._filters
        if by is not None:
            args += ["--by", str(by)]
        text = _run(args)
        return Document(_json.loads(text), text)

    def _repr_html_(self):
        return self.analyze()._repr_html_()

    def __repr__(self):
        return f"keet.Report({self._path!r}, {len(self)} kernel(s), {self.format})"


def open(path, kernel=None, launch_skip=0, launch_count=None):  # noqa: A001 (keet.open, as the CLI reads)
    """Reads a report: kernel (an index, a name or "regex:..."), launch_skip
    and launch_count filter as keet's -k, -s and -c do."""
    path = str(path)
    native = _keet.open(path, "" if kernel is None else str(kernel), int(launch_skip),
                        -1 if launch_count is None else int(launch_count))
    return Report(path, native, _filters(kernel, launch_skip, launch_count))


def diff(before, after, pairs=None):
    """Pairs the kernels of two reports and compares them (keet.diff/1);
    pairs: [(before_index, after_index), ...] forced first."""
    args = ["diff", str(before), str(after)]
    for b, a in pairs or []:
        args += ["--pair", f"{int(b)}:{int(a)}"]
    text = _run(args + ["--format", "json"])
    html = lambda: _run(args + ["--format", "html"])  # noqa: E731
    return Document(_json.loads(text), text, html)


def timeline(path, name_base=None):
    """The whole run (keet.timeline/1) of a PyTorch profiler (Kineto) trace
    (.json or .json.gz from torch.profiler), an Nsight Systems SQLite export,
    or an .nsys-rep that nsys on PATH can export: where the GPU waits, the
    verdicts, the kernels and copies, and the ncu command for the kernel to
    profile next. name_base: "function", "demangled" or "mangled", as
    keet timeline --name-base."""
    args = ["timeline", str(path)]
    if name_base is not None:
        args += ["--name-base", str(name_base)]
    text = _run(args + ["--format", "json"])
    html = lambda: _run(args + ["--format", "html"])  # noqa: E731
    return Document(_json.loads(text), text, html)


def explain(term, n=None):
    """What a metric, stall reason, finding id or topic means (keet explain
    TERM --format json), from KEET's knowledge base: no report needed."""
    args = ["explain", str(term), "--format", "json"]
    if n is not None:
        args += ["-n", str(int(n))]
    text = _run(args)
    return Document(_json.loads(text), text)


def occupancy(cc, threads, regs, smem=0, carveout=None):
    """Theoretical occupancy of a launch configuration on compute capability
    cc ("8.6"), as keet occupancy --format json: threads per block, registers
    per thread, shared memory per block in bytes."""
    args = ["occupancy", "--cc", str(cc), "--threads", str(int(threads)), "--regs", str(int(regs)),
            "--smem", str(int(smem)), "--format", "json"]
    if carveout is not None:
        args += ["--carveout", str(carveout)]
    text = _run(args)
    return Document(_json.loads(text), text)


# ---- an accessor layer shaped like NVIDIA's ncu_report, for existing scripts

class _IMetric:
    def __init__(self, metric):
        self._m = metric

    def name(self):
        return self._m.name

    def value(self):
        return self._m.value

    def as_double(self):
        v = self._m.value
        return float(v) if isinstance(v, (int, float)) else 0.0

    def as_uint64(self):
        v = self._m.value
        return int(v) if isinstance(v, (int, float)) else 0

    def as_string(self):
        v = self._m.value
        return v if isinstance(v, str) else ("" if v is None else str(v))

    def unit(self):
        return self._m.unit

    def num_instances(self):
        return len(self._m)


class _IAction:
    def __init__(self, kernel):
        self._k = kernel

    def name(self, base=None):
        return self._k.function or self._k.name

    def metric_names(self):
        return tuple(dict.fromkeys(self._k._k.names()))

    def metric_by_name(self, name):
        m = self._k.metric(name)
        return _IMetric(m) if m is not None else None

    def __getitem__(self, name):
        return self.metric_by_name(name)


class _IRange:
    def __init__(self, report):
        self._r = report

    def num_actions(self):
        return len(self._r)

    def action_by_idx(self, i):
        return _IAction(self._r.kernels[i])

    def __len__(self):
        return len(self._r)

    def __getitem__(self, i):
        return self.action_by_idx(i)


class _IContext:
    def __init__(self, report):
        self._r = report

    def num_ranges(self):
        return 1

    def range_by_idx(self, i):
        if i != 0:
            raise IndexError("a report read by keet is one range")
        return _IRange(self._r)

    def __len__(self):
        return 1

    def __getitem__(self, i):
        return self.range_by_idx(i)


def load_report(path):
    """ncu_report.load_report's shape: ctx.range_by_idx(0).action_by_idx(i)
    .metric_by_name(n).as_double(), without an Nsight Compute installation."""
    return _IContext(open(path))
