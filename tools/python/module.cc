// keet's Python module (`import keet`): the C++ part, `keet._keet`. Reports
// are read by libkeet's readers and commands run in this process (no keet
// executable, no ncu); python/keet/__init__.py builds the Python API on top.
// The GIL is released while a report is read or a command runs.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/derived.h"
#include "app/app.h"
#include "io/file.h"
#include "model/report.h"
#include "model/select.h"
#include "model/units.h"
#include "readers/reader.h"

namespace py = pybind11;

namespace {

using keet::model::Kernel;
using keet::model::Metric;
using keet::model::Report;
using keet::model::Value;

// KEET's own error, raised as keet.Error with KEET's one-line message. Never
// destroyed: a static py::object would release it after the interpreter ends.
// Which ncu section collects `metric`, from the quantity catalogue
// (data/metrics/quantities.json): (section id, the ncu option, what the
// section measures, the quantity's name), or None when the catalogue does not say.
py::object section_of(const std::string& metric) {
  namespace a = keet::analysis;
  for (a::QuantityId id = 0; id < a::quantity_count(); ++id) {
    const auto& section = a::quantity_section(id);
    if (section.empty()) continue;
    auto spellings = a::quantity_spellings(id);
    if (std::find(spellings.begin(), spellings.end(), metric) == spellings.end()) continue;
    for (const auto& def : a::section_defs())
      if (def.id == section) return py::make_tuple(def.id, def.option, def.what, a::quantity_name(id));
    return py::make_tuple(section, "--section " + section, "", a::quantity_name(id));
  }
  return py::none();
}

py::object& error_type() {
  static auto* type = new py::object();
  return *type;
}

[[noreturn]] void raise(const std::string& message) {
  PyErr_SetString(error_type().ptr(), message.c_str());
  throw py::error_already_set();
}

py::object value_of(const Value& v) {
  switch (v.kind) {
    case Value::Kind::None:
      return py::none();
    case Value::Kind::Uint64:
    case Value::Kind::Uint32:
      return py::int_(v.integer);
    case Value::Kind::String:
      return py::str(v.text);
    default:
      return py::float_(v.number);
  }
}

const char* kind_of(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::None:
      return "none";
    case Value::Kind::Double:
      return "double";
    case Value::Kind::Float:
      return "float";
    case Value::Kind::Uint64:
      return "uint64";
    case Value::Kind::Uint32:
      return "uint32";
    case Value::Kind::String:
      return "string";
  }
  return "none";
}

py::tuple dim(const keet::model::Dim3& d) { return py::make_tuple(d.x, d.y, d.z); }

// A metric as the Python objects see it, 24 bytes: its name as an id into
// the process's name table (NameTable) and a numeric value in place; a
// string value, an instance list or a CSV unit sits in the kernel's side
// table. Reading a report builds no string per metric and touches a seventh
// of the memory keet::model::Metric would.
struct PyMetric {
  static constexpr uint32_t kNoSide = UINT32_MAX;
  uint32_t name = 0;
  uint32_t side = kNoSide;  // into PyKernel::sides
  Value::Kind kind = Value::Kind::None;
  union {
    double number;     // Double, Float
    uint64_t integer;  // Uint64, Uint32
  };
  PyMetric() : integer(0) {}
};
struct PySide {
  std::string text;  // a String value
  keet::model::InstanceList instances;
  std::string unit;  // as a CSV export wrote it; "" for .ncu-rep
};

// Names every report gets first, so the kernel's own fields come from its
// metrics as they stream past (no per-kernel name index is built).
enum : uint32_t { kDuration, kDeviceName, kCcMajor, kCcMinor, kKnownNames };
constexpr const char* kKnown[kKnownNames] = {"gpu__time_duration.sum", "device__attribute_display_name",
                                             "device__attribute_compute_capability_major",
                                             "device__attribute_compute_capability_minor"};

struct PyKernel {
  int index = 0;
  std::string display, function, demangled, mangled;
  keet::model::Dim3 grid, block;
  uint64_t launches = 1;
  std::vector<PyMetric> metrics;
  std::vector<PySide> sides;
  const PySide* side(const PyMetric& m) const { return m.side == PyMetric::kNoSide ? nullptr : &sides[m.side]; }
  // (name id, position) of every metric, by id then position: the first of
  // each name is found by binary search. Made on first use.
  mutable std::vector<std::pair<uint32_t, uint32_t>> by_name;
  const PyMetric* find(uint32_t id) const {
    if (by_name.empty() && !metrics.empty()) {
      by_name.reserve(metrics.size());
      for (size_t i = 0; i < metrics.size(); ++i) by_name.emplace_back(metrics[i].name, static_cast<uint32_t>(i));
      std::sort(by_name.begin(), by_name.end());
    }
    auto it = std::lower_bound(by_name.begin(), by_name.end(), std::pair<uint32_t, uint32_t>{id, 0});
    return it != by_name.end() && it->first == id ? &metrics[it->second] : nullptr;
  }
  std::optional<double> number(uint32_t id) const {
    const auto* m = find(id);
    if (!m || m->kind == Value::Kind::None || m->kind == Value::Kind::String) return std::nullopt;
    return number_of(*m);
  }
  static double number_of(const PyMetric& m) {
    return m.kind == Value::Kind::Uint64 || m.kind == Value::Kind::Uint32 ? static_cast<double>(m.integer) : m.number;
  }
  std::string device() const {
    const auto* m = find(kDeviceName);
    return m && m->kind == Value::Kind::String ? sides[m->side].text : std::string();
  }
  // Whether ncu's metric database knows the chip (keet::model::chip_has_units).
  bool chip_has_units() const {
    auto major = number(kCcMajor), minor = number(kCcMinor);
    return !major || !minor || keet::model::chip_has_units_cc(*major * 10 + *minor);
  }
};

py::object value_of(const PyMetric& m, const PyKernel& k) {
  switch (m.kind) {
    case Value::Kind::None:
      return py::none();
    case Value::Kind::Uint64:
    case Value::Kind::Uint32:
      return py::int_(m.integer);
    case Value::Kind::String:
      return py::str(k.sides[m.side].text);
    default:
      return py::float_(m.number);
  }
}

// The metric names of the reports this process reads, shared by them: ncu
// spells the same few thousand names in every report, so a report after the
// first finds its names here (no copy and no allocation per name). Reading
// threads intern under the table's lock; the Python strings are made and read
// with the GIL held.
class NameTable {
 public:
  // A table past this many names is left to the reports that hold it; the
  // next report starts a new one (a report of made-up names cannot grow the
  // shared table without end).
  static constexpr size_t kMaxShared = size_t{1} << 18;

  NameTable() {
    for (const char* n : kKnown) intern(n);
  }
  uint32_t intern(std::string_view name) {
    auto held = lock();
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    auto id = static_cast<uint32_t>(names_.size());
    ids_.emplace(names_.emplace_back(name), id);  // a deque's elements stay put: the key views one
    return id;
  }
  std::optional<uint32_t> find(std::string_view name) const {
    auto held = lock();
    auto it = ids_.find(name);
    return it == ids_.end() ? std::nullopt : std::optional<uint32_t>(it->second);
  }
  size_t size() const {
    auto held = lock();
    return names_.size();
  }
  // A deque's element stays put: the reference outlives the lock.
  const std::string& text(uint32_t id) const {
    auto held = lock();
    return names_[id];
  }
  // With the GIL held. Borrowed: the table keeps the string.
  PyObject* py_name_borrowed(uint32_t id) const {
    if (id < py_names_.size() && py_names_[id]) return py_names_[id].ptr();
    if (id >= py_names_.size()) py_names_.resize(size());
    // Outside the lock: making a Python object may run a finalizer that reads
    // names too, or let another thread take the GIL.
    py::str made(text(id));
    auto& slot = py_names_[id];
    if (!slot) slot = std::move(made);
    return slot.ptr();
  }
  py::object py_name(uint32_t id) const { return py::reinterpret_borrow<py::object>(py_name_borrowed(id)); }

 private:
  [[nodiscard]] std::unique_lock<std::mutex> lock() const { return std::unique_lock(mutex_); }
  mutable std::mutex mutex_;
  std::deque<std::string> names_;  // by id
  std::unordered_map<std::string_view, uint32_t> ids_;
  mutable std::vector<py::object> py_names_;
};

// The table the next report shares, called with the GIL held (a table let go
// here releases Python strings). The holder is never destroyed: it would
// release them after the interpreter ends.
std::shared_ptr<NameTable> shared_names() {
  static auto* current = new std::shared_ptr<NameTable>();
  if (!*current || (*current)->size() > NameTable::kMaxShared) *current = std::make_shared<NameTable>();
  return *current;
}

// A report read whole, shared by the Python objects that view into it.
struct Loaded {
  explicit Loaded(std::shared_ptr<NameTable> table) : names(std::move(table)) {}
  Report head;  // session, warnings, partial; its kernels are `kernels`
  std::vector<PyKernel> kernels;
  std::shared_ptr<NameTable> names;
  std::vector<uint32_t> by_report_id;  // the report's string-table id + 1 -> the table's id + 1

  uint32_t id_of(const Metric& m) {
    if (m.name_id == Metric::kNoNameId) return names->intern(m.name);
    if (m.name_id >= by_report_id.size()) by_report_id.resize(static_cast<size_t>(m.name_id) + 1, 0);
    uint32_t& slot = by_report_id[m.name_id];
    if (!slot) slot = names->intern(m.name) + 1;
    return slot - 1;
  }
  // Takes what the reader decoded into `k`; the reader reuses `k` for the next kernel.
  void take(Kernel& k) {
    PyKernel& p = kernels.emplace_back();
    p.index = k.index;
    p.display = k.display_name();
    p.function = k.function;
    p.demangled = k.demangled;
    p.mangled = k.mangled;
    p.grid = k.grid;
    p.block = k.block;
    p.launches = k.launches();
    p.metrics.resize(k.metrics.size());
    for (size_t i = 0; i < k.metrics.size(); ++i) {
      auto& from = k.metrics[i];
      auto& to = p.metrics[i];
      to.name = id_of(from);
      to.kind = from.value.kind;
      if (to.kind == Value::Kind::Uint64 || to.kind == Value::Kind::Uint32)
        to.integer = from.value.integer;
      else
        to.number = from.value.number;
      if (to.kind == Value::Kind::String || !from.instances.empty() || !from.unit.empty()) {
        to.side = static_cast<uint32_t>(p.sides.size());
        p.sides.push_back({std::move(from.value.text), std::move(from.instances), std::move(from.unit)});
      }
    }
  }
};

struct KernelView {
  std::shared_ptr<const Loaded> owner;
  const PyKernel* kernel;
};

struct MetricView {
  std::shared_ptr<const Loaded> owner;
  const PyKernel* kernel;
  const PyMetric* metric;
  py::object name() const { return owner->names->py_name(metric->name); }
  std::string unit() const {
    const auto* side = kernel->side(*metric);
    if (side && !side->unit.empty()) return side->unit;
    return keet::model::unit_of(owner->names->text(metric->name), kernel->chip_has_units());
  }
  size_t num_instances() const {
    const auto* side = kernel->side(*metric);
    return side ? side->instances.size() : 0;
  }
  py::list instances() const {
    py::list out;
    if (const auto* side = kernel->side(*metric))
      for (const auto& i : side->instances) out.append(py::make_tuple(value_of(i.key), value_of(i.value)));
    return out;
  }
};

// A script reads report after report in one process. A report of a few MB is
// read into this thread's buffer, which keeps its memory from one report to
// the next: mapping each file anew (and unmapping it) costs page-table
// updates, and on a paravirtualised VM each is a call to the hypervisor
// (over the fixtures: 0.025 s against 0.046 s). A larger report is mapped and
// streamed as the command line streams it. Nothing the Python objects keep
// views these bytes (ReadOptions::modules is off: no cubin is kept).
constexpr size_t kReadIntoBuffer = size_t{16} << 20;

keet::Result<std::unique_ptr<keet::io::ByteSource>> open_source(const std::string& path) {
  thread_local std::string buffer;
  KEET_TRY(read, keet::io::read_file_into(path, buffer, kReadIntoBuffer));
  if (*read) return keet::io::view_source(path, buffer);
  return keet::io::open_file(path);
}

std::shared_ptr<const Loaded> open_report(const std::string& path, const std::string& kernel, int64_t skip,
                                          int64_t count) {
  auto selector = keet::model::KernelSelector::parse(kernel);
  if (!selector) raise(selector.error().message);
  auto loaded = std::make_shared<Loaded>(shared_names());
  std::string failure;
  {
    py::gil_scoped_release unlocked;
    // What the Python API shows: kernels and their metrics. Cubins, source
    // and ncu's rule results are for analyze(), which reads the report itself.
    keet::readers::ReadOptions opt;
    opt.allow_partial = true;
    opt.rules = opt.modules = false;
    int64_t matched = 0;
    auto take = [&](Kernel&& k) {
      if (!selector->matches(k) || matched++ < skip) return true;
      if (count >= 0 && static_cast<int64_t>(loaded->kernels.size()) >= count) return false;
      loaded->take(k);
      return true;
    };
    auto src = open_source(path);
    if (!src) {
      failure = src.error().message;
    } else if (auto ok = keet::readers::stream_into(**src, opt, loaded->head, take); !ok) {
      failure = ok.error().message();
    }
  }
  if (!failure.empty()) raise(failure);
  return loaded;
}

// Runs `keet ARGS...` here; returns (exit status, stdout, stderr).
py::tuple run_command(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int rc = 0;
  {
    py::gil_scoped_release unlocked;
    std::vector<const char*> argv = {"keet"};
    for (const auto& a : args) argv.push_back(a.c_str());
    keet::app::Context ctx{out, err, false, false, [](const std::string& name) {
                             const char* v = std::getenv(name.c_str());
                             return std::string(v ? v : "");
                           }};
    rc = keet::app::run(static_cast<int>(argv.size()), argv.data(), ctx);
  }
  return py::make_tuple(rc, py::bytes(out.str()), err.str());
}

}  // namespace

PYBIND11_MODULE(_keet, m) {
  m.doc() = "keet's reader and commands (use the keet package, not this module)";
  error_type() = py::reinterpret_steal<py::object>(PyErr_NewException("keet.Error", PyExc_RuntimeError, nullptr));
  m.attr("Error") = error_type();

  py::class_<Loaded, std::shared_ptr<Loaded>>(m, "Report")
      .def_property_readonly("path", [](const Loaded& l) { return l.head.path; })
      .def_property_readonly("format",
                             [](const Loaded& l) { return std::string(keet::model::format_name(l.head.format)); })
      .def_property_readonly("ncu_version", [](const Loaded& l) { return l.head.ncu_version(); })
      .def_property_readonly("warnings", [](const Loaded& l) { return l.head.warnings; })
      .def_property_readonly("partial", [](const Loaded& l) { return l.head.partial; })
      .def("__len__", [](const Loaded& l) { return l.kernels.size(); })
      .def("kernel",
           [](const std::shared_ptr<Loaded>& l, size_t i) {
             if (i >= l->kernels.size()) throw py::index_error("no kernel at that position");
             return KernelView{l, &l->kernels[i]};
           })
      // Every kernel in one call (a Python call per kernel costs more than the kernel's view).
      .def("kernels", [](const std::shared_ptr<Loaded>& l) {
        py::list out(l->kernels.size());
        for (size_t i = 0; i < l->kernels.size(); ++i) out[i] = py::cast(KernelView{l, &l->kernels[i]});
        return out;
      });

  py::class_<KernelView>(m, "Kernel")
      .def_property_readonly("index", [](const KernelView& k) { return k.kernel->index; })
      .def_property_readonly("name", [](const KernelView& k) { return k.kernel->display; })
      .def_property_readonly("function", [](const KernelView& k) { return k.kernel->function; })
      .def_property_readonly("demangled", [](const KernelView& k) { return k.kernel->demangled; })
      .def_property_readonly("mangled", [](const KernelView& k) { return k.kernel->mangled; })
      .def_property_readonly("grid", [](const KernelView& k) { return dim(k.kernel->grid); })
      .def_property_readonly("block", [](const KernelView& k) { return dim(k.kernel->block); })
      .def_property_readonly("device", [](const KernelView& k) { return k.kernel->device(); })
      .def_property_readonly("launches", [](const KernelView& k) { return k.kernel->launches; })
      .def_property_readonly("duration_ns",
                             [](const KernelView& k) -> py::object {
                               auto d = k.kernel->number(kDuration);
                               return d ? py::object(py::float_(*d)) : py::object(py::none());
                             })
      .def("__len__", [](const KernelView& k) { return k.kernel->metrics.size(); })
      // Every metric's value by name in one call (the first of a repeated name).
      .def("values",
           [](const KernelView& k) {
             // Sized for every metric at once: a dict grown entry by entry rehashes as it goes.
             PyObject* dict = _PyDict_NewPresized(static_cast<Py_ssize_t>(k.kernel->metrics.size()));
             if (!dict) throw py::error_already_set();
             auto out = py::reinterpret_steal<py::dict>(dict);
             for (const auto& m : k.kernel->metrics) {
               py::object value = value_of(m, *k.kernel);
               // The first of a repeated name stays (one hash lookup per metric).
               if (!PyDict_SetDefault(out.ptr(), k.owner->names->py_name_borrowed(m.name), value.ptr()))
                 throw py::error_already_set();
             }
             return out;
           })
      .def("names",
           [](const KernelView& k) {
             py::list out;
             for (const auto& m : k.kernel->metrics) out.append(k.owner->names->py_name(m.name));
             return out;
           })
      .def("metric_at",
           [](const KernelView& k, size_t i) {
             if (i >= k.kernel->metrics.size()) throw py::index_error("no metric at that position");
             return MetricView{k.owner, k.kernel, &k.kernel->metrics[i]};
           })
      .def("find", [](const KernelView& k, const std::string& name) -> py::object {
        auto id = k.owner->names->find(name);
        const PyMetric* m = id ? k.kernel->find(*id) : nullptr;
        return m ? py::cast(MetricView{k.owner, k.kernel, m}) : py::object(py::none());
      });

  py::class_<MetricView>(m, "Metric")
      .def_property_readonly("name", [](const MetricView& v) { return v.name(); })
      .def_property_readonly("value", [](const MetricView& v) { return value_of(*v.metric, *v.kernel); })
      .def_property_readonly("kind", [](const MetricView& v) { return kind_of(v.metric->kind); })
      .def_property_readonly("unit", &MetricView::unit)
      .def_property_readonly("num_instances", &MetricView::num_instances)
      .def_property_readonly("instances", &MetricView::instances);

  m.def("open", &open_report, py::arg("path"), py::arg("kernel") = "", py::arg("launch_skip") = 0,
        py::arg("launch_count") = -1, "Reads a whole report (the GIL is released while it reads).");
  m.def("run", &run_command, py::arg("args"), "Runs `keet ARGS...` in this process: (status, stdout, stderr).");
  m.def("section_of", &section_of, py::arg("metric"),
        "The ncu section that collects a metric spelling KEET's catalogue knows: (section, option, what, quantity), "
        "or None.");
}
