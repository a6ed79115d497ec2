// The rule set's symbol table and the finding text templates bound to it.
#include <gtest/gtest.h>

#include "analysis/derived.h"
#include "analysis/rules.h"
#include "analysis/symbols.h"
#include "analysis/text_template.h"

namespace keet::analysis {
namespace {

TEST(AnalysisSymbols, QuantitiesComeFirstThenContextValues) {
  SymbolTable t;
  ASSERT_EQ(t.size(), quantity_count() + static_cast<size_t>(ContextVar::Count));
  for (QuantityId q = 0; q < quantity_count(); ++q) EXPECT_EQ(t.name(SymbolTable::of(q)), quantity_name(q));
  for (size_t i = 0; i < static_cast<size_t>(ContextVar::Count); ++i) {
    auto v = static_cast<ContextVar>(i);
    // A context value named like a quantity would shift every id after it.
    EXPECT_FALSE(quantity_id(context_var_name(v))) << context_var_name(v);
    EXPECT_EQ(t.name(SymbolTable::of(v)), context_var_name(v));
  }
}

TEST(AnalysisSymbols, InterningIsStableAndNcuWarningsStartAtZero) {
  SymbolTable t;
  size_t before = t.size();
  SymbolId warn = t.intern("ncu_warn_CPIStall");
  SymbolId speed = t.intern("ncu_speedup_CPIStall");
  EXPECT_EQ(t.intern("ncu_warn_CPIStall"), warn);
  EXPECT_EQ(t.intern("compute_sol"), *quantity_id("compute_sol"));
  EXPECT_EQ(t.size(), before + 2);
  EXPECT_EQ(t.find("ncu_speedup_CPIStall"), speed);
  EXPECT_FALSE(t.find("never_interned"));
  ASSERT_EQ(t.initial_values().size(), t.size());
  EXPECT_EQ(t.initial_values()[warn], 0.0);  // ncu did not warn unless the report says so
  EXPECT_FALSE(t.initial_values()[speed].has_value());
  EXPECT_FALSE(t.initial_values()[SymbolTable::of(ContextVar::Cc)].has_value());
}

TEST(AnalysisSymbols, RuleSetBindsNcuRulesItReads) {
  auto set = rule_set();
  ASSERT_TRUE(set) << set.error().message;
  const NcuSymbols* cpi = (*set)->ncu("CPIStall");
  ASSERT_NE(cpi, nullptr);
  EXPECT_EQ(cpi->warn, (*set)->ncu_warn_cpi_stall);
  EXPECT_EQ((*set)->ncu("NoRuleDataReadsThis"), nullptr);
  for (const auto& r : (*set)->rules) {
    ASSERT_EQ(r.ncu_warn.size(), r.ncu_rules.size()) << r.id;
    for (size_t i = 0; i < r.ncu_rules.size(); ++i)
      EXPECT_EQ((*set)->symbols.name(r.ncu_warn[i]), "ncu_warn_" + r.ncu_rules[i]);
  }
  for (const auto& st : (*set)->stalls) {
    EXPECT_EQ((*set)->symbols.name(st.share), "stall_share_" + st.reason);
    EXPECT_EQ((*set)->symbols.name(st.ncu_warn), "ncu_warn_" + st.ncu_rule);
  }
  const StallRule* none = nullptr;
  for (const auto& st : (*set)->stalls)
    if (st.reason == "no_instruction") none = &st;
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->ncu_rule, "CPIStallNoInstructions");  // ncu's spelling
}

// --- Text templates ----------------------------------------------------------

struct Rendered {
  SymbolTable symbols;
  std::vector<std::optional<double>> values;
  TextValues words;
  std::string operator()(const std::string& text) {
    TextTemplate t(text, symbols);
    values.resize(symbols.size());
    return t.render(values, words);
  }
  void set(const std::string& name, double v) {
    SymbolId id = symbols.intern(name);
    values.resize(symbols.size());
    values[id] = v;
  }
};

TEST(AnalysisTextTemplate, PlaceholdersTakeValuesWithTheirFormat) {
  Rendered r;
  r.set("compute_sol", 12.3456);
  r.set("share", 0.5);
  EXPECT_EQ(r("{compute_sol:.1f}% busy, share {share}"), "12.3% busy, share 0.5");
  EXPECT_EQ(r("{compute_sol}"), "12.35");  // {:.4g} when no format is given
  EXPECT_EQ(r("no placeholders"), "no placeholders");
  EXPECT_EQ(r(""), "");
}

// {name:auto}: the one readable formatter, in the quantity's catalogue unit.
TEST(AnalysisTextTemplate, AutoWritesValuesReadablyInTheirUnit) {
  Rendered r;
  r.set("global_excess_sectors", 3145728);  // sector: a count, in full
  r.set("local_bytes", 3145728);            // byte: scaled, with its unit
  r.set("duration_ns", 10411204000.0);      // a duration
  EXPECT_EQ(r("({global_excess_sectors:auto} sectors)"), "(3,145,728 sectors)");
  EXPECT_EQ(r("moved {local_bytes:auto}"), "moved 3.15 MB");
  EXPECT_EQ(r("took {duration_ns:auto}"), "took 10.41 s");
}

TEST(AnalysisTextTemplate, SentencesWithUnknownValuesAreLeftOut) {
  Rendered r;
  EXPECT_EQ(r("at {memory_sol:.1f}% of peak"), "");
  EXPECT_EQ(r("{never_set}"), "");
  r.set("compute_sol", 12.3456);
  EXPECT_EQ(r("SM at {compute_sol:.1f}%. Memory at {memory_sol:.1f}%. Done."), "SM at 12.3%. Done.");
  EXPECT_EQ(r("Memory at {memory_sol:.1f}%! SM at {compute_sol:.1f}%? Yes."), "SM at 12.3%? Yes.");
  // A decimal point or "e.g." inside a sentence does not end it.
  EXPECT_EQ(r("Use e.g.float4 at {compute_sol:.1f}."), "Use e.g.float4 at 12.3.");
}

TEST(AnalysisTextTemplate, RenderCompleteNeedsEveryValue) {
  SymbolTable t;
  TextTemplate tpl("SM {compute_sol:.0f}% and memory {memory_sol:.0f}%", t);
  std::vector<std::optional<double>> values(t.size());
  TextValues words;
  EXPECT_FALSE(tpl.render_complete(values, words));
  values[*t.find("compute_sol")] = 50;
  EXPECT_FALSE(tpl.render_complete(values, words));
  values[*t.find("memory_sol")] = 20;
  EXPECT_EQ(tpl.render_complete(values, words), "SM 50% and memory 20%");
}

TEST(AnalysisTextTemplate, WordsWinOverValues) {
  Rendered r;
  EXPECT_EQ(r("the {pipe_max_name} pipe"), "");
  r.words[static_cast<size_t>(TextVar::PipeMaxName)] = "FMA";
  EXPECT_EQ(r("the {pipe_max_name} pipe"), "the FMA pipe");
}

TEST(AnalysisTextTemplate, BracesWithoutAPlaceholderStayText) {
  Rendered r;
  r.set("a{b", 1);
  EXPECT_EQ(r("{a{b}"), "1");  // the body runs to the first '}'
  EXPECT_EQ(r("open { only"), "open { only");
  EXPECT_EQ(r("close } only"), "close } only");
  EXPECT_EQ(r("{}"), "");  // an empty name is a name nobody sets: its sentence is left out
}

TEST(AnalysisTextTemplate, KeepsItsText) {
  SymbolTable t;
  TextTemplate tpl("x = {compute_sol:.1f}", t);
  EXPECT_EQ(tpl.text(), "x = {compute_sol:.1f}");
  EXPECT_FALSE(tpl.empty());
  EXPECT_TRUE(TextTemplate().empty());
}

}  // namespace
}  // namespace keet::analysis
