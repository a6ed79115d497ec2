// Every quantity name a data file, rule, template or renderer uses exists in
// the catalogue (data/metrics/quantities.json): a misspelt name would make a
// rule silently never fire or a table silently lose a row.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "analysis/derived.h"
#include "analysis/rules.h"
#include "util/embedded_data.h"

namespace keet::analysis {
namespace {

nlohmann::json data(const char* name) {
  auto text = embedded_file(name);
  EXPECT_TRUE(text) << name;
  return nlohmann::json::parse(text.value_or("{}"));
}

TEST(CatalogueNames, DiffKeyMetricsAndPromptNameQuantities) {
  for (const auto& m : data("diff/key_metrics.json").at("metrics")) {
    auto q = quantity_id(m.at("quantity").get<std::string>());
    ASSERT_TRUE(q) << m.dump();
    // The stored name is one of the quantity's own spellings.
    auto spellings = quantity_spellings(*q);
    EXPECT_NE(std::ranges::find(spellings, m.at("metric").get<std::string>()), spellings.end()) << m.dump();
  }
  for (const auto& name : data("llm/prompt.json").at("metrics"))
    EXPECT_TRUE(quantity_id(name.get<std::string>())) << name;
}

TEST(CatalogueNames, EveryRuleNameIsKnown) {
  auto set = rule_set();
  ASSERT_TRUE(set) << set.error().message;
  for (const auto& r : (*set)->rules)
    for (const auto& e : r.evidence) EXPECT_TRUE(quantity_id(e)) << r.id << " evidence " << e;
}

TEST(CatalogueNames, AMisspeltNameFailsWhenTheRulesLoad) {
  auto findings = std::string(*embedded_file("rules/findings.json"));
  auto stalls = std::string(*embedded_file("rules/stalls.json"));
  ASSERT_TRUE(parse_rules(findings, stalls));
  auto at = findings.find("global_excess_pct >= 15");
  ASSERT_NE(at, std::string::npos);
  std::string bad = findings;
  bad.replace(at, 17, "global_exces_pct");  // one letter short
  auto r = parse_rules(bad, stalls);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("global_exces_pct"), std::string::npos) << r.error().message;
  // A misspelt placeholder in a text template is caught the same way.
  bad = findings;
  at = bad.find("{global_excess_pct:.1f}%");
  bad.replace(at, 18, "{global_excess_pt");
  EXPECT_FALSE(parse_rules(bad, stalls));
}

TEST(CatalogueNames, UnitsAndSectionsNameQuantities) {
  EXPECT_GE(unit_defs().size(), 15u);
  for (const auto& u : unit_defs()) {
    EXPECT_FALSE(u.quantities.empty()) << u.id;
    EXPECT_FALSE(u.saturation_finding.empty()) << u.id;
    auto set = rule_set();
    ASSERT_TRUE(set);
    EXPECT_TRUE((*set)->find(u.saturation_finding)) << u.id << " -> " << u.saturation_finding;
  }
  for (const auto& s : section_defs()) EXPECT_FALSE(s.quantities.empty()) << s.id;
}

TEST(CatalogueNames, EveryRuleTitleHasAFallbackWithoutValues) {
  auto set = rule_set();
  ASSERT_TRUE(set);
  for (const auto& r : (*set)->rules) {
    ASSERT_FALSE(r.titles.empty()) << r.id;
    EXPECT_TRUE(r.titles.back().symbols().empty()) << r.id << ": the last title must name no value";
    EXPECT_FALSE(r.titles.back().when) << r.id << ": the last title must hold for every kernel";
  }
}

}  // namespace
}  // namespace keet::analysis
