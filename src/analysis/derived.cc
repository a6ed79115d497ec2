#include "analysis/derived.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "analysis/expr.h"
#include "analysis/known_names.h"
#include "model/units.h"
#include "util/data_value.h"
#include "util/strings.h"

namespace keet::analysis {
namespace {

using Data = DataValue;

// Lookup: a quantity of the vocabulary only (a name, its spellings, a formula
// over metrics), read on demand with metric_quantity, never computed per kernel.
enum class Kind : uint8_t { Plain, Stall, StallTotal, StallShare, Lookup };

// One metric spelling of a quantity, with what every kernel would otherwise work out again.
struct Spelling {
  model::MetricName metric;
  std::string unit;
  double scale = 1;
};

struct Formula {
  Expr expr;                       // bound to quantity ids
  std::vector<QuantityId> inputs;  // distinct, in order of appearance
};

// A number ncu states in a rule message: the first number after `after`.
struct MessageSource {
  std::string rule, after;
};

struct QuantityDef {
  std::string name, unit, meaning, label;  // label: "derived:<name>"
  std::string reader_label;                // "DRAM throughput": the words evidence is shown under
  std::string section;                     // the ncu section that collects it, when the catalogue says
  Kind kind = Kind::Plain;
  std::vector<Spelling> spellings;  // Stall: one per stall form (an empty name where the form lacks the reason)
  std::vector<Formula> formulas;
  std::vector<MessageSource> messages;
  std::optional<Formula> valid_when;
  bool hidden = false;  // a raw metric that a formula names; not reported as missing
  std::vector<std::string> nvprof;
  std::vector<std::string> known_as;  // names people use for it (known_names.h)
  std::vector<Expr> lookup_formulas;  // Lookup: formulas over metrics, not bound to quantities
};

struct StallForm {
  std::string unit;
  bool nvprof = false;
  bool sampled = false;  // values are PC-sample counts: a share needs enough of them
  std::vector<std::string> complete_set;
};

struct Catalogue {
  std::vector<QuantityDef> defs;
  std::unordered_map<std::string, QuantityId> ids;
  std::vector<QuantityId> by_name;               // the order of KernelDiagnosis::derived
  std::vector<std::string> reasons;              // stall reasons, catalogue order
  std::vector<bool> counts_as_stall;             // per reason: false for "selected"
  std::vector<QuantityId> stall_ids, share_ids;  // per reason
  QuantityId stall_total = 0;
  std::vector<StallForm> forms;
  std::vector<UnitDef> units;
  std::vector<SectionDef> sections;
  // The vocabulary (known_names.h): names, lower-case name -> known[i], metric -> its names.
  std::vector<KnownName> known;
  std::unordered_map<std::string, size_t> known_index;
  std::unordered_map<std::string, std::vector<std::string>> known_of;
  std::vector<std::string> prefixes, sources;

  std::optional<QuantityId> find(std::string_view name) const {
    auto it = ids.find(std::string(name));
    return it == ids.end() ? std::nullopt : std::optional(it->second);
  }
  QuantityId add(QuantityDef d) {
    auto id = static_cast<QuantityId>(defs.size());
    if (!ids.emplace(d.name, id).second) throw std::runtime_error("quantity listed twice: " + d.name);
    d.label = "derived:" + d.name;
    defs.push_back(std::move(d));
    return id;
  }
  QuantityId require(const std::string& name, const std::string& user) const {
    if (auto id = find(name)) return *id;
    throw std::runtime_error(user + " names " + name + ", which is not an earlier quantity");
  }
};

Spelling spelling(const std::string& metric, double scale = 1, std::string unit = "") {
  return {model::MetricName(metric), unit.empty() ? model::unit_of(metric) : std::move(unit), scale};
}

QuantityId add_hidden_metric(Catalogue& c, const std::string& metric) {
  QuantityDef raw{metric, model::unit_of(metric), "report metric " + metric};
  raw.spellings.push_back(spelling(metric));
  raw.hidden = true;
  return c.add(std::move(raw));
}

void add_hidden_metrics(Catalogue& c, const std::string& text) {
  auto e = Expr::parse(text);
  if (!e) return;  // parse_formula reports it
  for (const auto& n : e->names())
    if (!c.find(n) && n.find("__") != std::string::npos) add_hidden_metric(c, n);
}

// Parses a formula; a name that is neither an earlier quantity nor a metric
// (it has "__") is an error. A metric becomes a hidden quantity of its own.
Formula parse_formula(Catalogue& c, const std::string& text, const std::string& user) {
  auto e = Expr::parse(text);
  if (!e) throw std::runtime_error(user + ": " + e.error().message);
  Formula f{std::move(*e), {}};
  for (const auto& n : f.expr.names()) {
    auto id = c.find(n);
    if (!id && n.find("__") != std::string::npos) id = add_hidden_metric(c, n);
    f.inputs.push_back(id ? *id : c.require(n, user));
  }
  f.expr.bind([&](const std::string& n) { return *c.find(n); });
  return f;
}

std::string expand(std::string form, const std::string& key, const std::string& value) {
  auto pos = form.find(key);
  if (pos != std::string::npos) form.replace(pos, key.size(), value);
  return form;
}

std::string name_in(Data table, const std::string& reason) {
  auto it = table.find(reason);
  return it ? it->str() : "";
}

// nvprof's name for the stall reason its nvprof form reads ("filed_under"):
// nvprof sums some ncu reasons (stall_exec_dependency is short_scoreboard +
// wait), and its one value is filed under one of them.
std::string nvprof_name_of(Data s, const std::string& reason) {
  for (auto e : s.member("nvprof"))
    if (e.value("filed_under", "") == reason) return e.at("name").str();
  return "";
}

// stall_<reason> for every reason (one spelling per form), stall_total and stall_share_<reason>.
void add_stalls(Catalogue& c, Data s) {
  auto not_a_stall = s.value("not_a_stall", std::vector<std::string>{});
  for (auto f : s.at("forms")) {
    StallForm form{f.at("unit").str(), f.value("nvprof", false), f.value("sampled", false), {}};
    form.complete_set = s.at(form.nvprof ? "nvprof_complete_set" : "complete_set").strings();
    c.forms.push_back(std::move(form));
  }
  for (auto r : s.at("reasons")) {
    std::string reason = r.str();
    QuantityDef d{"stall_" + reason, "", "warps stalled on " + reason};
    d.reader_label = "stall: " + reason;
    d.kind = Kind::Stall;
    for (size_t i = 0; i < c.forms.size(); ++i) {
      std::string form = s.at("forms")[i].at("form").str();
      std::string pcsamp = name_in(s.member("pcsamp_names"), reason);
      std::string nvprof = nvprof_name_of(s, reason);
      form = expand(expand(form, "{reason}", reason), "{pcsamp_reason}", pcsamp.empty() ? reason : pcsamp);
      if (c.forms[i].nvprof) form = nvprof;
      d.spellings.push_back(spelling(form.empty() ? "" : form, 1, c.forms[i].unit));
      if (c.forms[i].nvprof && !nvprof.empty()) d.nvprof.push_back(nvprof);
    }
    c.reasons.push_back(reason);
    c.counts_as_stall.push_back(std::ranges::find(not_a_stall, reason) == not_a_stall.end());
    c.stall_ids.push_back(c.add(std::move(d)));
  }
  QuantityDef total{"stall_total", "", "sum of the stall reasons of one metric form"};
  total.reader_label = "all stalls";
  total.kind = Kind::StallTotal;
  c.stall_total = c.add(std::move(total));
  for (const auto& reason : c.reasons) {
    QuantityDef share{"stall_share_" + reason, "%", "share of all stalls that were " + reason};
    share.reader_label = "share of stalls: " + reason;
    share.kind = Kind::StallShare;
    c.share_ids.push_back(c.add(std::move(share)));
  }
}

// The words a reader sees beside a value: the catalogue's "label", else the
// meaning up to its first colon, without a trailing ", % of peak" or a
// parenthesised aside ("DRAM throughput, % of peak" -> "DRAM throughput").
std::string reader_label_of(Data q, const std::string& meaning) {
  std::string label = q.value("label", "");
  if (!label.empty()) return label;
  label = meaning.substr(0, meaning.find(':'));
  for (std::string_view tail : {", % of peak", ", share of all", ", share"})
    if (label.ends_with(tail)) label.resize(label.size() - tail.size());
  if (auto open = label.find(" ("); open != std::string::npos && label.ends_with(")")) label.resize(open);
  return label;
}

void add_quantity(Catalogue& c, Data q) {
  QuantityDef d{q.at("name").str(), q.value("unit", ""), q.value("meaning", "")};
  d.reader_label = reader_label_of(q, d.meaning);
  d.section = q.value("section", "");
  for (auto s : q.member("spellings")) {
    if (s.is_string())
      d.spellings.push_back(spelling(s.str()));
    else
      d.spellings.push_back(spelling(s.at("metric").str(), s.value("scale", 1.0), d.unit));
  }
  for (auto s : q.member("nvprof")) {
    std::string metric = s.is_string() ? s.str() : s.at("metric").str();
    d.nvprof.push_back(metric);
    d.spellings.push_back(spelling(metric, s.is_string() ? 1.0 : s.value("scale", 1.0), d.unit));
  }
  if (q.value("lookup", false)) {
    d.kind = Kind::Lookup;
    for (auto f : q.member("formulas")) {
      auto e = Expr::parse(f.str());
      if (!e) throw std::runtime_error(d.name + ": " + e.error().message);
      d.lookup_formulas.push_back(std::move(*e));
    }
  } else {
    for (auto f : q.member("formulas")) d.formulas.push_back(parse_formula(c, f.str(), d.name));
  }
  d.known_as = q.value("known_as", std::vector<std::string>{});
  for (auto m : q.member("ncu_messages")) d.messages.push_back({m.at("rule").str(), m.at("after").str()});
  // valid_when may name the quantity itself, so it is bound once the quantity
  // exists; metrics it names are added first, so they are computed before it.
  std::string valid = q.value("valid_when", "");
  if (!valid.empty()) add_hidden_metrics(c, valid);
  QuantityId id = c.add(std::move(d));
  if (!valid.empty()) c.defs[id].valid_when = parse_formula(c, valid, c.defs[id].name + " valid_when");
}

std::vector<QuantityId> ids_of(const Catalogue& c, Data names, const std::string& user) {
  std::vector<QuantityId> out;
  for (auto n : names) out.push_back(c.require(n.str(), user));
  return out;
}

void add_units_and_sections(Catalogue& c, Data root) {
  for (auto u : root.at("units")) {
    UnitDef d{u.at("id").str(), u.at("label").str()};
    d.kind = u.at("kind").view() == "memory" ? BottleneckClass::Memory : BottleneckClass::Compute;
    d.quantities = ids_of(c, u.at("quantities"), "unit " + d.id);
    d.generic = u.value("generic", false);
    d.saturation_finding = u.value("saturation_finding", "");
    d.carries = u.value("carries", std::vector<std::string>{});
    c.units.push_back(std::move(d));
  }
  for (auto s : root.at("sections")) {
    SectionDef d{s.at("id").str(), s.at("what").str(), s.at("option").str()};
    d.quantities = ids_of(c, s.at("quantities"), "section " + d.id);
    c.sections.push_back(std::move(d));
  }
}

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::ranges::find(v, s) == v.end()) v.push_back(s);
}

// The metrics a formula names directly (names with "__"), not the inputs of
// the quantities it names.
void add_formula_metrics(std::vector<std::string>& out, const Expr& e) {
  for (const auto& n : e.names())
    if (n.find("__") != std::string::npos) add_unique(out, n);
}

// The ncu spellings of a quantity (its nvprof spellings are names of their own).
void add_ncu_spellings(std::vector<std::string>& out, const QuantityDef& d) {
  for (const auto& s : d.spellings)
    if (!s.metric.name.empty() && std::ranges::find(d.nvprof, s.metric.name) == d.nvprof.end())
      add_unique(out, s.metric.name);
}

void add_known(Catalogue& c, KnownName k) {
  c.known_index.emplace(to_lower(k.name), c.known.size());
  for (const auto& m : k.metrics)
    if (m != k.name) add_unique(c.known_of[m], k.name);
  c.known.push_back(std::move(k));
}

// Each quantity's known_as names, then nvprof's stall names (a sum of ncu
// reasons: every ncu form of each reason carries it).
void add_known_names(Catalogue& c, Data root) {
  c.prefixes = root.value("prefixes", std::vector<std::string>{});
  c.sources = root.value("sources", std::vector<std::string>{});
  for (const auto& d : c.defs)
    for (const auto& name : d.known_as) {
      KnownName k{name, {d.name}, {}, ""};
      add_ncu_spellings(k.metrics, d);
      for (const auto& f : d.formulas) add_formula_metrics(k.metrics, f.expr);
      for (const auto& f : d.lookup_formulas) add_formula_metrics(k.metrics, f);
      if (d.spellings.empty() && !d.lookup_formulas.empty())
        k.formula = d.lookup_formulas[0].text();
      else if (d.spellings.empty() && !d.formulas.empty())
        k.formula = d.formulas[0].expr.text();
      add_known(c, std::move(k));
    }
  for (auto e : root.at("stalls").member("nvprof")) {
    KnownName k{e.at("name").str(), {}, {}, ""};
    for (auto r : e.at("reasons")) {
      std::string q = "stall_" + r.str();
      k.quantities.push_back(q);
      k.formula += (k.formula.empty() ? "" : " + ") + q;
      add_ncu_spellings(k.metrics, c.defs[c.require(q, "stalls.nvprof " + k.name)]);
    }
    if (k.quantities.size() == 1) k.formula.clear();
    add_known(c, std::move(k));
  }
}

Catalogue make_catalogue() {
  Catalogue c;
  auto root = compiled_data("metrics/quantities.json");
  if (!root) throw std::logic_error("metrics/quantities.json is not compiled in");
  add_stalls(c, root->at("stalls"));
  for (auto q : root->at("quantities")) add_quantity(c, q);
  add_units_and_sections(c, *root);
  add_known_names(c, *root);
  for (QuantityId i = 0; i < c.defs.size(); ++i) c.by_name.push_back(i);
  std::sort(c.by_name.begin(), c.by_name.end(),
            [&](QuantityId a, QuantityId b) { return c.defs[a].name < c.defs[b].name; });
  return c;
}

// The catalogue is data compiled into the binary: a broken file is a build
// bug that every analysis test hits on its first kernel.
const Catalogue& catalogue() {
  // Never destroyed: freeing thousands of small objects at exit cost a twentieth
  // of a short run; the process's memory goes back to the system whole.
  static const Catalogue& c = *new Catalogue([] {
    try {
      return make_catalogue();
    } catch (const std::exception& e) {
      throw std::logic_error(std::string("data/metrics/quantities.json: ") + e.what());
    }
  }());
  return c;
}

const QuantityDef& def(QuantityId id) { return catalogue().defs[id]; }

// Why a value the report holds cannot be a measurement, or empty.
// A throughput may read a little over 100% of its sustained peak; a hit rate
// is a fraction of requests and never can.
std::string implausible(double v, const std::string& unit, std::string_view metric = {}) {
  if (std::isnan(v)) return "not a number";
  if (std::isinf(v)) return "infinite";
  if (v < 0) return "negative";
  if (unit == "%" && metric.find("hit_rate") != std::string_view::npos && v > 100.0001) return "a hit rate above 100%";
  if (unit == "%" && v > 110) return "a percentage far above 100";
  return "";
}

}  // namespace

size_t quantity_count() { return catalogue().defs.size(); }
const std::string& quantity_name(QuantityId id) { return def(id).name; }
const std::string& quantity_unit(QuantityId id) { return def(id).unit; }
const std::string& quantity_meaning(QuantityId id) { return def(id).meaning; }
const std::string& quantity_label(QuantityId id) { return def(id).reader_label; }
const std::string& quantity_section(QuantityId id) { return def(id).section; }
std::optional<QuantityId> quantity_id(std::string_view name) { return catalogue().find(name); }

std::vector<std::string> quantity_spellings(QuantityId id) {
  std::vector<std::string> out;
  for (const auto& s : def(id).spellings)
    if (!s.metric.name.empty() && std::ranges::find(out, s.metric.name) == out.end()) out.push_back(s.metric.name);
  return out;
}

std::optional<SpelledValue> metric_quantity_spelled(const model::Kernel& k, QuantityId id) {
  for (const auto& s : def(id).spellings) {
    if (s.metric.name.empty()) continue;
    auto v = k.number(s.metric);
    if (v && implausible(*v, s.unit).empty())
      return SpelledValue{s.metric.name, *v * s.scale, s.scale == 1 ? s.unit : def(id).unit};
  }
  return std::nullopt;
}

std::optional<double> metric_quantity(const model::Kernel& k, QuantityId id) {
  auto v = metric_quantity_spelled(k, id);
  return v ? std::optional(v->value) : std::nullopt;
}

model::KernelIdentity identity_of(const model::Kernel& k) {
  return {k.index,
          k.display_name(),
          k.mangled,
          k.grid,
          k.block,
          k.text("device__attribute_display_name").value_or(""),
          kernel_duration_ns(k)};
}

std::optional<double> kernel_duration_ns(const model::Kernel& k) {
  static const QuantityId duration = *quantity_id("duration_ns");
  return metric_quantity(k, duration);
}

bool is_duration_metric(std::string_view metric) {
  static const QuantityId duration = *quantity_id("duration_ns");
  return std::ranges::any_of(def(duration).spellings, [&](const Spelling& s) { return s.metric.name == metric; });
}

const std::vector<KnownName>& known_names() { return catalogue().known; }
const std::vector<std::string>& known_name_sources() { return catalogue().sources; }

const KnownName* find_known_name(std::string_view name) {
  const Catalogue& c = catalogue();
  auto it = c.known_index.find(to_lower(name));
  return it == c.known_index.end() ? nullptr : &c.known[it->second];
}

const std::vector<std::string>& known_names_of(std::string_view metric) {
  static const std::vector<std::string> none;
  const Catalogue& c = catalogue();
  for (const auto& p : c.prefixes)
    if (metric.starts_with(p)) {
      metric.remove_prefix(p.size());
      break;
    }
  auto it = c.known_of.find(std::string(metric));
  return it == c.known_of.end() ? none : it->second;
}

const std::vector<UnitDef>& unit_defs() { return catalogue().units; }
const std::vector<SectionDef>& section_defs() { return catalogue().sections; }
const std::vector<std::string>& stall_reasons() { return catalogue().reasons; }

Facts::Facts(const model::Report&, const model::Kernel& kernel)
    : k_(kernel), values_(quantity_count()), source_(quantity_count(), 0) {
  compute_stalls();
  for (QuantityId id = 0; id < values_.size(); ++id)
    if (def(id).kind == Kind::Plain) compute(id);
}

// The first spelling present with a plausible value, else the first formula
// that evaluates; then the quantity's floor.
void Facts::compute(QuantityId id) {
  if (!from_spelling(id) && !from_formula(id) && !from_message(id)) {
    if (!def(id).hidden) missing_.push_back(id);
    return;
  }
  apply_floor(id);
}

bool Facts::from_spelling(QuantityId id) {
  const auto& spellings = def(id).spellings;
  for (size_t i = 0; i < spellings.size(); ++i) {
    auto v = k_.number(spellings[i].metric);
    if (!v) continue;
    if (auto why = implausible(*v, spellings[i].unit, spellings[i].metric.name); !why.empty()) {
      bool listed = std::ranges::any_of(invalid_, [&](auto& x) { return x.metric == spellings[i].metric.name; });
      if (!listed) invalid_.push_back({spellings[i].metric.name, *v, why});
      continue;
    }
    values_[id] = *v * spellings[i].scale;
    source_[id] = static_cast<int16_t>(i);
    return true;
  }
  return false;
}

bool Facts::from_formula(QuantityId id) {
  const auto& formulas = def(id).formulas;
  for (size_t i = 0; i < formulas.size(); ++i) {
    auto v = formulas[i].expr.eval(values_);
    if (!v || !std::isfinite(*v)) continue;
    values_[id] = *v;
    source_[id] = static_cast<int16_t>(-1 - static_cast<int>(i));
    return true;
  }
  return false;
}

namespace {

// The first number after `after` in `text` ("1,024" and "29.5" included).
std::optional<double> number_after(std::string_view text, std::string_view after) {
  auto pos = text.find(after);
  if (pos == std::string_view::npos) return std::nullopt;
  pos += after.size();
  while (pos < text.size() && text[pos] == ' ') ++pos;
  std::string digits;
  for (; pos < text.size(); ++pos) {
    char ch = text[pos];
    if (std::isdigit(static_cast<unsigned char>(ch)) || (ch == '.' && !digits.empty()))
      digits += ch;
    else if (ch == ',' && !digits.empty() && pos + 1 < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[pos + 1])))
      continue;
    else
      break;
  }
  if (digits.empty() || digits.back() == '.') {
    if (!digits.empty()) digits.pop_back();
    if (digits.empty()) return std::nullopt;
  }
  return std::strtod(digits.c_str(), nullptr);
}

}  // namespace

// Numbers ncu itself stated in a rule message, when no metric carries them
// (a details CSV without launch statistics still says "the GPU's 108 multiprocessors").
bool Facts::from_message(QuantityId id) {
  const auto& sources = def(id).messages;
  for (size_t i = 0; i < sources.size(); ++i)
    for (const auto& r : k_.rules) {
      if (r.id != sources[i].rule) continue;
      for (const auto& m : r.messages)
        if (auto v = number_after(m.text, sources[i].after)) {
          values_[id] = *v;
          source_[id] = static_cast<int16_t>(kFromMessage - static_cast<int>(i));
          message_rule_.emplace_back(id, r.id);
          return true;
        }
    }
  return false;
}

// A ratio over a handful of events is not evidence: below its floor the
// quantity is absent (and data_quality says so).
void Facts::apply_floor(QuantityId id) {
  const auto& floor = def(id).valid_when;
  if (!floor) return;
  auto ok = floor->expr.eval(values_);
  if (ok && *ok != 0) return;
  values_[id].reset();
  below_floor_.push_back(id);
}

// Stall values come in several metric forms with different units; use the
// form that covers the most reasons, so every value and share is in one unit.
void Facts::compute_stalls() {
  const Catalogue& c = catalogue();
  size_t best_form = 0, best_count = 0;
  std::vector<std::vector<std::optional<double>>> by_form(c.forms.size(),
                                                          std::vector<std::optional<double>>(c.reasons.size()));
  for (size_t f = 0; f < c.forms.size(); ++f) {
    size_t count = 0;
    for (size_t r = 0; r < c.reasons.size(); ++r) {
      const Spelling& s = def(c.stall_ids[r]).spellings[f];
      if (s.metric.name.empty()) continue;
      auto v = k_.number(s.metric);
      if (!v) continue;
      if (auto why = implausible(*v, ""); !why.empty()) {
        invalid_.push_back({s.metric.name, *v, why});
        continue;
      }
      by_form[f][r] = *v;
      ++count;
    }
    if (count > best_count) best_form = f, best_count = count;
  }
  if (best_count == 0) return;
  stall_unit_ = c.forms[best_form].unit;
  stall_sampled_ = c.forms[best_form].sampled;
  double total = 0;
  for (size_t r = 0; r < c.reasons.size(); ++r) {
    if (!by_form[best_form][r]) continue;
    values_[c.stall_ids[r]] = by_form[best_form][r];
    source_[c.stall_ids[r]] = static_cast<int16_t>(best_form);
    stalls_present_.push_back(c.reasons[r]);
    if (c.counts_as_stall[r]) total += *by_form[best_form][r];
  }
  const auto& complete = c.forms[best_form].complete_set;
  stall_shares_ = total > 0 && std::ranges::all_of(complete, [&](const std::string& r) {
                    return std::ranges::find(stalls_present_, r) != stalls_present_.end();
                  });
  if (!stall_shares_) return;
  values_[c.stall_total] = total;
  for (size_t r = 0; r < c.reasons.size(); ++r)
    if (c.counts_as_stall[r] && values_[c.stall_ids[r]])
      values_[c.share_ids[r]] = 100 * *values_[c.stall_ids[r]] / total;
}

std::optional<double> Facts::get(std::string_view name) const {
  auto id = quantity_id(name);
  return id ? values_[*id] : std::nullopt;
}

Evidence Facts::evidence(QuantityId id) const {
  const QuantityDef& d = def(id);
  if (source_[id] <= kFromMessage) {
    auto it = std::ranges::find(message_rule_, id, &std::pair<QuantityId, std::string>::first);
    return Evidence{"ncu-rule:" + it->second,
                    *values_[id],
                    d.unit,
                    "",
                    "stated in ncu's " + it->second + " message",
                    d.reader_label};
  }
  if ((d.kind == Kind::Plain || d.kind == Kind::Stall) && source_[id] >= 0) {
    const Spelling& s = d.spellings[static_cast<size_t>(source_[id])];
    // A scaled spelling (a fraction shown as a percentage) is the quantity,
    // not the metric: the metric's name never stands beside another value.
    if (s.scale != 1)
      return Evidence{d.label,       *values_[id], d.unit, "", fmt::format("{} * {:g}", s.metric.name, s.scale),
                      d.reader_label};
    return Evidence{s.metric.name, *values_[id], s.unit, "", "", d.reader_label};
  }
  std::string formula;
  if (d.kind == Kind::StallTotal)
    formula = "sum of the stall reasons (" + stall_unit_ + ")";
  else if (d.kind == Kind::StallShare)
    formula = "stall_" + d.name.substr(12) + " / stall_total * 100";
  else
    formula = d.formulas[static_cast<size_t>(-1 - source_[id])].expr.text();
  return Evidence{d.label, *values_[id], d.kind == Kind::StallTotal ? stall_unit_ : d.unit,
                  "",      formula,      d.reader_label};
}

namespace {

bool lists(const std::vector<Evidence>& out, const std::string& metric) {
  return std::any_of(out.begin(), out.end(), [&](const Evidence& e) { return e.metric == metric; });
}

}  // namespace

// The report values a quantity came from, in formula order, each metric once.
void Facts::add_inputs(QuantityId id, std::vector<Evidence>& out) const {
  if (!values_[id]) return;
  const QuantityDef& d = def(id);
  const Catalogue& c = catalogue();
  switch (d.kind) {
    case Kind::Plain:
      if (source_[id] >= 0 || source_[id] <= kFromMessage) {
        Evidence e = evidence(id);
        if (!lists(out, e.metric)) out.push_back(std::move(e));
        return;
      }
      for (QuantityId in : d.formulas[static_cast<size_t>(-1 - source_[id])].inputs) add_inputs(in, out);
      return;
    case Kind::Stall:
      if (!lists(out, d.spellings[static_cast<size_t>(source_[id])].metric.name)) out.push_back(evidence(id));
      return;
    case Kind::StallTotal:
    case Kind::Lookup:
      return;
    case Kind::StallShare:
      for (size_t r = 0; r < c.share_ids.size(); ++r)
        if (c.share_ids[r] == id) add_inputs(c.stall_ids[r], out);
      return;
  }
}

void Facts::add_evidence(QuantityId id, std::vector<Evidence>& out) const {
  if (!values_[id]) return;
  bool plain_metric =
      (def(id).kind == Kind::Plain || def(id).kind == Kind::Stall) && (source_[id] >= 0 || source_[id] <= kFromMessage);
  if (plain_metric) return add_inputs(id, out);
  if (!lists(out, def(id).label)) out.push_back(evidence(id));
  add_inputs(id, out);
}

std::vector<Evidence> Facts::evidence_for(QuantityId id) const {
  std::vector<Evidence> out;
  add_evidence(id, out);
  return out;
}

std::vector<Evidence> Facts::evidence_for(std::string_view name) const {
  auto id = quantity_id(name);
  return id ? evidence_for(*id) : std::vector<Evidence>{};
}

std::vector<Evidence> Facts::all_evidence() const {
  std::vector<Evidence> out;
  for (QuantityId id : catalogue().by_name)
    if (values_[id]) out.push_back(evidence(id));
  return out;
}

}  // namespace keet::analysis
