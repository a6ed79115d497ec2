// Build-time generator: data/metrics/units.json -> a C++ header of constexpr
// tables (sorted where looked up by key). keet export needs the units on every
// run, and parsing 70 KB of JSON at start-up took about a millisecond, a third
// of a small export; compiled tables cost nothing. The JSON stays the source.
//
//   keet_units_codegen IN.json OUT.h
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

std::string quoted(const std::string& s) { return json(s).dump(); }  // JSON escapes are valid C++ here

std::string number(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

// Object members without the "_about"-style comments, sorted by key.
std::vector<std::pair<std::string, json>> members(const json& obj) {
  std::vector<std::pair<std::string, json>> out;
  for (const auto& [k, v] : obj.items())
    if (!k.starts_with("_")) out.emplace_back(k, v);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

void string_map(std::ostream& os, const char* name, const json& obj) {
  os << "inline constexpr StringPair " << name << "[] = {\n";
  for (const auto& [k, v] : members(obj)) os << "    {" << quoted(k) << ", " << quoted(v.get<std::string>()) << "},\n";
  os << "};\n";
}

void pair_list(std::ostream& os, const char* name, const json& arr) {
  os << "inline constexpr StringPair " << name << "[] = {\n";
  for (const auto& p : arr)
    os << "    {" << quoted(p.at(0).get<std::string>()) << ", " << quoted(p.at(1).get<std::string>()) << "},\n";
  os << "};\n";
}

void scale_map(std::ostream& os, const char* name, const json& obj) {
  os << "inline constexpr ScaleEntry " << name << "[] = {\n";
  for (const auto& [k, v] : members(obj))
    os << "    {" << quoted(k) << ", " << quoted(v.at(0).get<std::string>()) << ", " << number(v.at(1).get<double>())
       << "},\n";
  os << "};\n";
}

void prefix_map(std::ostream& os, const char* name, const json& obj) {
  os << "inline constexpr PrefixEntry " << name << "[] = {\n";
  for (const auto& [k, v] : members(obj)) os << "    {" << quoted(k) << ", " << number(v.get<double>()) << "},\n";
  os << "};\n";
}

std::string generate(const json& j) {
  std::ostringstream os;
  os << "// Generated from data/metrics/units.json by tools/codegen/units_table.cc. Do not edit.\n"
     << "#pragma once\n#include <string_view>\n\nnamespace keet::model::units_data {\n\n"
     << "struct StringPair { std::string_view key, value; };\n"
     << "struct ScaleEntry { std::string_view key, base; double factor; };\n"
     << "struct PrefixEntry { std::string_view key; double factor; };\n\n";
  const auto& cc = j.at("supported_compute_capability");
  os << "inline constexpr int kMinCc = " << cc.at("min").get<int>() << ";\n";
  os << "inline constexpr int kMaxCc = " << cc.at("max").get<int>() << ";\n\n";
  string_map(os, "kUnits", j.at("units"));
  string_map(os, "kChipIndependent", j.at("chip_independent"));
  const auto& rules = j.at("rules");
  os << "inline constexpr std::string_view kPercentMarkers[] = {\n";
  for (const auto& m : rules.at("percent_markers")) os << "    " << quoted(m.get<std::string>()) << ",\n";
  os << "};\n";
  pair_list(os, "kCounterWords", rules.at("counter_words"));
  pair_list(os, "kRateSuffixes", rules.at("rate_suffixes"));
  const auto& scaled = j.at("scaled_units");
  scale_map(os, "kNumerator", scaled.at("numerator"));
  scale_map(os, "kDenominator", scaled.at("denominator"));
  prefix_map(os, "kCountPrefixes", scaled.at("count_prefixes"));
  os << "\n}  // namespace keet::model::units_data\n";
  return os.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: keet_units_codegen IN.json OUT.h\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  try {
    std::string out = generate(json::parse(in));
    std::ofstream(argv[2]) << out;
  } catch (const std::exception& e) {
    std::cerr << argv[1] << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
