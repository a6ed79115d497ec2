#include "analysis/vocabulary.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include <fmt/format.h>

#include "util/data_value.h"

namespace keet::analysis {
namespace {

using Data = DataValue;

struct Vocabulary {
  std::vector<MetricAlias> aliases;
  std::unordered_map<std::string, size_t> alias_index;                    // lower-case alias -> aliases[i]
  std::vector<std::vector<std::string>> groups;                           // rename groups, canonical first
  std::unordered_map<std::string, size_t> group_index;                    // member -> groups[i]
  std::unordered_map<std::string, std::vector<std::string>> reverse;      // metric -> aliases
  std::unordered_map<std::string, std::vector<std::string>> stall_names;  // reason -> its forms
  std::vector<std::string> prefixes;
  std::vector<std::string> sources;
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::ranges::find(v, s) == v.end()) v.push_back(s);
}

void add_group(Vocabulary& v, std::vector<std::string> names) {
  size_t id = v.groups.size();
  for (const auto& n : names) v.group_index.try_emplace(n, id);
  v.groups.push_back(std::move(names));
}

std::string expand(std::string form, const std::string& key, const std::string& value) {
  auto pos = form.find(key);
  if (pos != std::string::npos) form.replace(pos, key.size(), value);
  return form;
}

// Every form of every stall reason is one rename group: the same stall seen
// through different metric families (and units) across ncu versions.
void load_stalls(Vocabulary& v, Data root) {
  auto forms = member_or(root, "stall_forms", std::vector<std::string>{});
  for (auto r : member_or(root, "stall_reasons", Data())) {
    auto reason = member_or<std::string>(r, "reason", "");
    auto pcsamp = member_or<std::string>(r, "pcsamp_reason", reason);
    std::vector<std::string> names;
    for (const auto& f : forms) names.push_back(expand(expand(f, "{reason}", reason), "{pcsamp_reason}", pcsamp));
    v.stall_names[reason] = names;
    add_group(v, std::move(names));
  }
}

MetricFormula formula_from(Data j) {
  MetricFormula f;
  f.scale = member_or(j, "scale", 1.0);
  f.num = member_or(j, "num", std::vector<std::string>{});
  f.den = member_or(j, "den", std::vector<std::string>{});
  return f;
}

// One reason: its forms are equivalents. Several: a sum per form, so terms
// of one formula always share a unit.
void add_stall_reasons(const Vocabulary& v, MetricAlias& a, const std::vector<std::string>& reasons) {
  if (reasons.size() == 1) {
    if (auto it = v.stall_names.find(reasons[0]); it != v.stall_names.end()) a.metrics = it->second;
    return;
  }
  size_t forms = reasons.empty() ? 0 : v.stall_names.at(reasons[0]).size();
  for (size_t f = 0; f < forms; ++f) {
    MetricFormula sum;
    sum.exact_terms = true;
    for (const auto& r : reasons) sum.num.push_back(v.stall_names.at(r).at(f));
    a.formulas.push_back(std::move(sum));
  }
}

void index_alias(Vocabulary& v, const MetricAlias& a) {
  v.alias_index.emplace(lower(a.alias), v.aliases.size());
  auto link = [&](const std::string& m) { add_unique(v.reverse[m], a.alias); };
  for (const auto& m : a.metrics) link(m);
  for (const auto& f : a.formulas) {
    for (const auto& m : f.num) link(m);
    for (const auto& m : f.den) link(m);
  }
}

void load_aliases(Vocabulary& v, Data root) {
  for (auto j : member_or(root, "aliases", Data())) {
    MetricAlias a;
    a.alias = member_or<std::string>(j, "alias", "");
    a.metrics = member_or(j, "metrics", std::vector<std::string>{});
    a.note = member_or<std::string>(j, "note", "");
    if (auto it = j.find("formula")) a.formulas.push_back(formula_from(*it));
    auto reasons = member_or(j, "stall_reasons", std::vector<std::string>{});
    bool known = std::ranges::all_of(reasons, [&](const auto& r) { return v.stall_names.contains(r); });
    if (known) add_stall_reasons(v, a, reasons);
    index_alias(v, a);
    v.aliases.push_back(std::move(a));
  }
}

void load_renames(Vocabulary& v, Data root) {
  for (auto j : member_or(root, "renames", Data())) {
    std::vector<std::string> names{member_or<std::string>(j, "canonical", "")};
    for (auto& n : member_or(j, "also", std::vector<std::string>{})) names.push_back(std::move(n));
    add_group(v, std::move(names));
  }
}

Vocabulary load() {
  Vocabulary v;
  auto found = compiled_data("metrics/quantities.json");
  if (!found) return v;  // our own data: the unit tests catch this
  Data root = *found;
  v.prefixes = member_or(root, "prefixes", std::vector<std::string>{});
  v.sources = member_or(root, "sources", std::vector<std::string>{});
  load_stalls(v, root);
  load_renames(v, root);
  load_aliases(v, root);
  return v;
}

const Vocabulary& vocab() {
  static const Vocabulary v = load();
  return v;
}

std::string strip_prefix(std::string_view name) {
  for (const auto& p : vocab().prefixes)
    if (name.starts_with(p)) return std::string(name.substr(p.size()));
  return std::string(name);
}

// `name` first, then the rest of its rename group (canonical first).
void append_with_renames(std::vector<std::string>& out, const std::string& name) {
  add_unique(out, name);
  if (auto it = vocab().group_index.find(name); it != vocab().group_index.end())
    for (const auto& n : vocab().groups[it->second]) add_unique(out, n);
}

std::optional<double> term_sum(const model::Kernel& k, const std::vector<std::string>& terms, bool exact,
                               std::vector<std::string>& used) {
  double sum = 0;
  for (const auto& t : terms) {
    const auto* m = exact ? k.find(t) : find_metric(k, t);
    auto v = m ? m->value.as_number() : std::nullopt;
    if (!v) return std::nullopt;
    sum += *v;
    used.push_back(m->name);
  }
  return sum;
}

std::optional<ResolvedValue> evaluate(const model::Kernel& k, const MetricFormula& f) {
  ResolvedValue r;
  auto num = term_sum(k, f.num, f.exact_terms, r.metrics);
  if (!num) return std::nullopt;
  double den = 1;
  if (!f.den.empty()) {
    auto d = term_sum(k, f.den, f.exact_terms, r.metrics);
    if (!d || *d == 0) return std::nullopt;
    den = *d;
  }
  r.value = f.scale * *num / den;
  r.formula = f.text();
  return r;
}

std::string joined_sum(const std::vector<std::string>& terms) {
  std::string s;
  for (const auto& t : terms) s += (s.empty() ? "" : " + ") + t;
  return terms.size() > 1 ? "(" + s + ")" : s;
}

}  // namespace

std::string MetricFormula::text() const {
  std::string s = joined_sum(num);
  if (!den.empty()) s += " / " + joined_sum(den);
  return scale == 1 ? s : fmt::format("{} * {}", scale, s);
}

const std::vector<MetricAlias>& metric_aliases() { return vocab().aliases; }

const std::vector<std::string>& vocabulary_sources() { return vocab().sources; }

const MetricAlias* find_alias(std::string_view name) {
  auto it = vocab().alias_index.find(lower(name));
  return it == vocab().alias_index.end() ? nullptr : &vocab().aliases[it->second];
}

std::vector<std::string> equivalents(std::string_view name) {
  std::vector<std::string> out;
  if (const auto* a = find_alias(name)) {
    for (const auto& m : a->metrics) append_with_renames(out, m);
    return out;
  }
  append_with_renames(out, strip_prefix(name));
  return out;
}

std::vector<std::string> resolve(std::string_view name) {
  auto out = equivalents(name);
  if (const auto* a = find_alias(name))
    for (const auto& f : a->formulas) {
      for (const auto& m : f.num) add_unique(out, m);
      for (const auto& m : f.den) add_unique(out, m);
    }
  return out;
}

std::vector<std::string> aliases_of(std::string_view metric) {
  auto it = vocab().reverse.find(strip_prefix(metric));
  return it == vocab().reverse.end() ? std::vector<std::string>{} : it->second;
}

const model::Metric* find_metric(const model::Kernel& kernel, std::string_view canonical_or_alias) {
  if (const auto* exact = kernel.find(canonical_or_alias)) return exact;
  for (const auto& name : equivalents(canonical_or_alias))
    if (const auto* m = kernel.find(name)) return m;
  return nullptr;
}

std::optional<ResolvedValue> find_value(const model::Kernel& kernel, std::string_view canonical_or_alias) {
  if (const auto* m = find_metric(kernel, canonical_or_alias))
    if (auto v = m->value.as_number()) return ResolvedValue{*v, {m->name}, ""};
  if (const auto* a = find_alias(canonical_or_alias))
    for (const auto& f : a->formulas)
      if (auto r = evaluate(kernel, f)) return r;
  return std::nullopt;
}

}  // namespace keet::analysis
