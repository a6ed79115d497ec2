// The compiled data tables hold exactly what the JSON files say, and
// DataValue reads them (and run-time documents) as nlohmann reads the text.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "util/data_value.h"
#include "util/embedded_data.h"

namespace keet {
namespace {

using nlohmann::json;

// `v` rebuilt as an nlohmann tree through DataValue's accessors only.
json rebuilt(DataValue v) {
  switch (v.kind()) {
    case DataKind::Null:
      return nullptr;
    case DataKind::Bool:
      return v.boolean();
    case DataKind::Number:
      return v.number();
    case DataKind::String:
      return v.str();
    case DataKind::Array: {
      json out = json::array();
      for (auto e : v) out.push_back(rebuilt(e));
      return out;
    }
    case DataKind::Object: {
      json out = json::object();
      for (auto [k, e] : v.items()) out[std::string(k)] = rebuilt(e);
      return out;
    }
  }
  return nullptr;
}

// Numbers compare as doubles: the tables keep every number as one.
json as_doubles(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_array() || j.is_object()) {
    json out = j;
    for (auto& e : out) e = as_doubles(e);
    return out;
  }
  return j;
}

TEST(CompiledData, EveryCompiledFileHoldsWhatItsJsonSays) {
  int compiled = 0;
  for (const auto& f : embedded_files()) {
    auto table = compiled_data(f.path);
    if (!table) continue;
    ++compiled;
    EXPECT_EQ(rebuilt(*table), as_doubles(json::parse(f.content))) << f.path;
  }
  // The engine's data: quantities, rules, ncu rules, libraries, two GPU tables.
  EXPECT_GE(compiled, 7);
  EXPECT_FALSE(compiled_data("no/such.json"));
}

TEST(DataValue, ReadsLikeNlohmann) {
  auto doc = parse_data(R"({"b": [1, "two", null, true], "a": {"z": 1.5, "m": "x"}, "e": [], "s": "\u00e9\"q"})");
  auto root = doc->root();
  ASSERT_TRUE(root.is_object());
  EXPECT_EQ(root.size(), 4u);
  EXPECT_EQ(root.key(0), "a");  // members sorted by key, as nlohmann iterates them
  EXPECT_EQ(root.at("a").at("z").number(), 1.5);
  EXPECT_EQ(root.at("a").value("m", ""), "x");
  EXPECT_EQ(root.at("a").value("absent", "fallback"), "fallback");
  EXPECT_EQ(root.value("absent", 7), 7);
  EXPECT_EQ(root.at("s").view(), "\xc3\xa9\"q");
  EXPECT_EQ(root.at("b").size(), 4u);
  EXPECT_EQ(root.at("b")[1].str(), "two");
  EXPECT_TRUE(root.at("b")[2].is_null());
  EXPECT_TRUE(root.at("b")[3].boolean());
  EXPECT_EQ(root.member("e").size(), 0u);
  EXPECT_EQ(root.member("absent").size(), 0u);  // an absent list iterates as empty
  EXPECT_FALSE(root.contains("absent"));
  EXPECT_EQ(member_or<std::string>(root.at("a"), "m", ""), "x");
  EXPECT_EQ(member_or(root, "absent", std::vector<std::string>{"d"}), std::vector<std::string>{"d"});
}

TEST(DataValue, MissingKeysAndWrongTypesThrowAsNlohmannDoes) {
  auto doc = parse_data(R"({"n": 1, "s": "x", "l": ["a", 2]})");
  auto root = doc->root();
  EXPECT_THROW(root.at("absent"), std::out_of_range);
  EXPECT_THROW(root.at("n").str(), std::domain_error);
  EXPECT_THROW(root.at("s").number(), std::domain_error);
  EXPECT_THROW(root.value("s", 1.0), std::domain_error);  // present but of another type
  EXPECT_THROW(root.at("l").strings(), std::domain_error);
  EXPECT_THROW(root.at("l")[2], std::out_of_range);
  EXPECT_THROW(root.at("n").at("x"), std::domain_error);
  EXPECT_THROW(parse_data("{\"unterminated\": "), std::exception);
}

}  // namespace
}  // namespace keet
