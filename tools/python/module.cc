// keet's Python module (`import keet`): the C++ part, `keet._keet`. Reports
// are read by libkeet's readers and commands run in this process (no keet
// executable, no ncu); python/keet/__init__.py builds the Python API on top.
// The GIL is released while a report is read or a command runs.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "app/app.h"
#include "app/common.h"
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

const char* kind_of(const Value& v) {
  switch (v.kind) {
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

// A report read whole, shared by the Python objects that view into it.
struct Loaded {
  Report report;
  // Metric names as Python strings, made once per name of the report's
  // string table (kernels share their names), so reading every value of
  // every kernel does not build the same string again and again.
  mutable std::vector<py::object> names;
  py::object name_of(const Metric& m) const {
    if (m.name_id == Metric::kNoNameId) return py::str(m.name);
    if (m.name_id >= names.size()) names.resize(static_cast<size_t>(m.name_id) + 1);
    auto& slot = names[m.name_id];
    if (!slot) slot = py::str(m.name);
    return slot;
  }
};

struct KernelView {
  std::shared_ptr<const Loaded> owner;
  const Kernel* kernel;
};

struct MetricView {
  std::shared_ptr<const Loaded> owner;
  const Kernel* kernel;
  const Metric* metric;
  std::string unit() const { return metric->unit.empty() ? keet::model::unit_of(metric->name, *kernel) : metric->unit; }
  py::list instances() const {
    py::list out;
    for (const auto& i : metric->instances) out.append(py::make_tuple(value_of(i.key), value_of(i.value)));
    return out;
  }
};

std::shared_ptr<const Loaded> open_report(const std::string& path, const std::string& kernel, int64_t skip,
                                          int64_t count) {
  auto selector = keet::model::KernelSelector::parse(kernel);
  if (!selector) raise(selector.error().message);
  auto loaded = std::make_shared<Loaded>();
  std::string failure;
  {
    py::gil_scoped_release unlocked;
    // What the Python API shows: kernels and their metrics. Cubins, source
    // and ncu's rule results are for analyze(), which reads the report itself.
    keet::readers::ReadOptions opt;
    opt.allow_partial = true;
    opt.rules = opt.modules = false;
    auto r = keet::readers::load_file(path, opt);
    if (!r) {
      failure = r.error().message;
    } else {
      loaded->report = std::move(*r);
      auto& ks = loaded->report.kernels;
      bool filtered = !selector->all() || skip > 0 || count >= 0;
      if (filtered) {
        std::vector<Kernel> kept;
        int64_t matched = 0;
        for (auto& k : ks) {
          if (!selector->matches(k)) continue;
          if (matched++ < skip) continue;
          if (count >= 0 && static_cast<int64_t>(kept.size()) >= count) break;
          kept.push_back(std::move(k));
        }
        ks = std::move(kept);
      }
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
      .def_property_readonly("path", [](const Loaded& l) { return l.report.path; })
      .def_property_readonly("format",
                             [](const Loaded& l) { return std::string(keet::model::format_name(l.report.format)); })
      .def_property_readonly("ncu_version", [](const Loaded& l) { return l.report.ncu_version(); })
      .def_property_readonly("warnings", [](const Loaded& l) { return l.report.warnings; })
      .def_property_readonly("partial", [](const Loaded& l) { return l.report.partial; })
      .def("__len__", [](const Loaded& l) { return l.report.kernels.size(); })
      .def("kernel", [](const std::shared_ptr<Loaded>& l, size_t i) {
        if (i >= l->report.kernels.size()) throw py::index_error("no kernel at that position");
        return KernelView{l, &l->report.kernels[i]};
      });

  py::class_<KernelView>(m, "Kernel")
      .def_property_readonly("index", [](const KernelView& k) { return k.kernel->index; })
      .def_property_readonly("name", [](const KernelView& k) { return k.kernel->display_name(); })
      .def_property_readonly("function", [](const KernelView& k) { return k.kernel->function; })
      .def_property_readonly("demangled", [](const KernelView& k) { return k.kernel->demangled; })
      .def_property_readonly("mangled", [](const KernelView& k) { return k.kernel->mangled; })
      .def_property_readonly("grid", [](const KernelView& k) { return dim(k.kernel->grid); })
      .def_property_readonly("block", [](const KernelView& k) { return dim(k.kernel->block); })
      .def_property_readonly("device", [](const KernelView& k) { return keet::app::device_of(*k.kernel); })
      .def_property_readonly("launches", [](const KernelView& k) { return k.kernel->launches(); })
      .def_property_readonly("duration_ns",
                             [](const KernelView& k) -> py::object {
                               auto d = k.kernel->number("gpu__time_duration.sum");
                               return d ? py::object(py::float_(*d)) : py::object(py::none());
                             })
      .def("__len__", [](const KernelView& k) { return k.kernel->metrics.size(); })
      // Every metric's value by name in one call (the first of a repeated name).
      .def("values",
           [](const KernelView& k) {
             py::dict out;
             for (const auto& m : k.kernel->metrics) {
               py::object name = k.owner->name_of(m), value = value_of(m.value);
               // The first of a repeated name stays (one hash lookup per metric).
               if (!PyDict_SetDefault(out.ptr(), name.ptr(), value.ptr())) throw py::error_already_set();
             }
             return out;
           })
      .def("names",
           [](const KernelView& k) {
             py::list out;
             for (const auto& m : k.kernel->metrics) out.append(k.owner->name_of(m));
             return out;
           })
      .def("metric_at",
           [](const KernelView& k, size_t i) {
             if (i >= k.kernel->metrics.size()) throw py::index_error("no metric at that position");
             return MetricView{k.owner, k.kernel, &k.kernel->metrics[i]};
           })
      .def("find", [](const KernelView& k, const std::string& name) -> py::object {
        const Metric* m = k.kernel->find(name);
        return m ? py::cast(MetricView{k.owner, k.kernel, m}) : py::object(py::none());
      });

  py::class_<MetricView>(m, "Metric")
      .def_property_readonly("name", [](const MetricView& v) { return v.metric->name; })
      .def_property_readonly("value", [](const MetricView& v) { return value_of(v.metric->value); })
      .def_property_readonly("kind", [](const MetricView& v) { return kind_of(v.metric->value); })
      .def_property_readonly("unit", &MetricView::unit)
      .def_property_readonly("num_instances", [](const MetricView& v) { return v.metric->instances.size(); })
      .def_property_readonly("instances", &MetricView::instances);

  m.def("open", &open_report, py::arg("path"), py::arg("kernel") = "", py::arg("launch_skip") = 0,
        py::arg("launch_count") = -1, "Reads a whole report (the GIL is released while it reads).");
  m.def("run", &run_command, py::arg("args"), "Runs `keet ARGS...` in this process: (status, stdout, stderr).");
}
