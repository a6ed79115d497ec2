// The projection of a command's JSON contract into a tool's answer
// (service/projection.h), on shapes the tests declare, and the check that
// refuses a table the projection would misread; the embedded table itself
// is checked in service_mcp_test.cc (McpTools.ShapesAreWellFormed).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "service/projection.h"

namespace keet {
namespace {

using nlohmann::json;
using service::Projections;
using service::ProjectionScope;

Projections table(const char* shapes, Projections::Derivations derivations = {}) {
  return Projections(json::parse(shapes), std::move(derivations));
}

TEST(Projection, MembersTakeTheirTypeAndDefault) {
  auto p = table(R"({"row": {
      "index": {"integer": "index"}, "count": {"integer": "n", "at_least": 1},
      "name": {"string": ["demangled", "name"]}, "short": {"name": "name"},
      "library": {"string": "library", "or_null": true}, "tags": {"strings": "tags"},
      "grid": {"dim3": "grid"}, "value": {"number": "v"}, "raw": {"copy": "raw"},
      "device": {"string": "device.name"}, "first": {"integer": "indices.0"}, "indices": {"ranges": "indices"}}})");
  ProjectionScope scope;
  json full = p.apply("row", json::parse(R"({"index": 3, "n": 4, "demangled": "", "name": "k", "library": "cublas",
      "tags": ["a"], "grid": [1, 2, 3], "v": 2.5, "raw": "x", "device": {"name": "H100"}, "indices": [4, 5, 6, 9]})"),
                      scope);
  EXPECT_EQ(full, json::parse(R"({"index": 3, "count": 4, "name": "k", "short": "k", "library": "cublas",
      "tags": ["a"], "grid": [1, 2, 3], "value": 2.5, "raw": "x", "device": "H100", "first": 4, "indices": "4-6,9"})"));
  // A contract member that is absent or of another type gives the member's default.
  json empty = p.apply("row", json::parse(R"({"v": "NaN", "grid": [1, 2], "indices": 7})"), scope);
  EXPECT_EQ(empty, json::parse(R"({"index": 0, "count": 1, "name": "", "short": "", "library": null, "tags": [],
      "grid": [0, 0, 0], "value": null, "raw": null, "device": "", "first": 0, "indices": "7"})"));
}

TEST(Projection, NamesAreAbbreviatedWhenLong) {
  auto p = table(R"({"k": {"name": {"name": "name"}}})");
  ProjectionScope scope;
  std::string name = "void gemm<" + std::string(200, 'T') + ">(float*, float*)";
  std::string shown = p.apply("k", json{{"name", name}}, scope)["name"];
  EXPECT_LT(shown.size(), name.size());
  EXPECT_TRUE(shown.starts_with("void gemm<")) << shown;
}

TEST(Projection, MeasuresNameTheirMetricAndUnit) {
  auto p = table(R"({
      "ev": {"$is": {"measure": "value", "metric": "{metric}", "unit": "{unit}", "with": {"formula": "formula"}}},
      "load": {"u": {"measure": "pct", "metric": ["{metric}", "{unit}_utilization"], "unit": "%"},
               "share": {"measure": "pct", "metric": ["{$sorted_by}", "share"], "unit": "fraction"},
               "time": {"measure": "ns", "metric": "gpu__time_duration.sum", "unit_of_metric": true}}})");
  ProjectionScope scope;
  EXPECT_EQ(p.apply("ev", json::parse(R"({"metric": "m", "value": 2, "unit": "%", "formula": "a/b"})"), scope),
            json::parse(R"({"metric": "m", "value": 2.0, "unit": "%", "formula": "a/b"})"));
  // An empty formula is not carried; a value that is not a number is no measure.
  EXPECT_FALSE(p.apply("ev", json::parse(R"({"metric": "m", "value": 2, "formula": ""})"), scope).contains("formula"));
  EXPECT_TRUE(p.apply("ev", json::parse(R"({"metric": "m", "value": null})"), scope).is_null());
  // The first template that is not empty names the metric.
  json load = p.apply("load", json::parse(R"({"metric": "", "unit": "dram", "pct": 50, "ns": 1000})"), scope);
  EXPECT_EQ(load["u"]["metric"], "dram_utilization");
  EXPECT_EQ(load["share"]["metric"], "share");
  EXPECT_EQ(load["time"]["unit"], "nsecond");  // the unit ncu gives the metric
  scope.vars["sorted_by"] = "samples";
  EXPECT_EQ(p.apply("load", json::parse(R"({"pct": 50})"), scope)["share"]["metric"], "samples");
}

TEST(Projection, CounterMapsLeaveOutAndCountTheirZeros) {
  auto p = table(R"({"line": {
      "values": {"measures": "metrics", "skip_zeros": true, "drop_prefixed": ["stalled_", "stalls"]},
      "stalls": {"measures": "stalls", "unit": "samples", "skip_zeros": true},
      "all": {"measures": "stalls"}}})");
  ProjectionScope scope;
  json line = p.apply(
      "line", json::parse(R"({"metrics": {"a": 0, "b": 3, "stalled_wait": 7}, "stalls": {"wait": 7, "barrier": 0}})"),
      scope);
  EXPECT_EQ(line["values"], json::parse(R"([{"metric": "b", "value": 3.0, "unit": ""}])"));
  EXPECT_EQ(line["stalls"], json::parse(R"([{"metric": "wait", "value": 7.0, "unit": "samples"}])"));
  EXPECT_EQ(line["all"].size(), 2u);
  EXPECT_EQ(scope.zeros, 2);  // a, and barrier
}

TEST(Projection, ListsFilterAndNestedShapesSeeTheScope) {
  auto p = table(R"({
      "snap": {"index": {"integer": "index"}, "device": {"string": "device", "if": "detail"}},
      "pair": {"before": {"object": "before", "shape": "snap"},
               "moved": {"each": "metrics", "drop_zero": "change", "unless": "detail", "shape": {"m": {"string": "m"}}},
               "timed": {"each": "metrics", "where_number": "change", "shape": {"m": {"string": "m"}}},
               "total": {"measure": "total", "metric": "t", "unit": "ns", "if_above": ["launches", 1]},
               "kernel": {"object": "kernel", "shape": "snap", "if": "detail", "omit_null": true}},
      "unpaired": {"$is": {"each": "", "first": 2, "shape": "snap", "set": {"detail": false}}}})");
  json pair = json::parse(R"({"before": {"index": 1, "device": "H100"}, "launches": 1, "total": 5,
      "metrics": [{"m": "a", "change": 0}, {"m": "b", "change": 0.5}, {"m": "c"}]})");
  ProjectionScope brief;
  EXPECT_EQ(p.apply("pair", pair, brief), json::parse(R"({"before": {"index": 1},
      "moved": [{"m": "b"}, {"m": "c"}], "timed": [{"m": "a"}, {"m": "b"}]})"));
  ProjectionScope detail{.vars = {{"detail", true}}};
  pair["launches"] = 3;
  json full = p.apply("pair", pair, detail);
  EXPECT_EQ(full["before"]["device"], "H100");
  EXPECT_EQ(full["moved"].size(), 3u);
  EXPECT_EQ(full["total"]["value"], 5.0);
  EXPECT_FALSE(full.contains("kernel"));  // detail, but the contract holds none
  // `set` holds for the list it is on, and the scope is the caller's again after.
  json list = json::parse(R"([{"index": 1, "device": "a"}, {"index": 2, "device": "b"}, {"index": 3}])");
  EXPECT_EQ(p.apply("unpaired", list, detail), json::parse(R"([{"index": 1}, {"index": 2}])"));
  EXPECT_EQ(detail.vars["detail"], true);
  EXPECT_EQ(p.apply_each("snap", list, detail)[0]["device"], "a");
}

TEST(Projection, DerivationsAndVariables) {
  auto p = table(R"({"k": {"note": {"derive": "twice"}, "path": {"var": "path"}}})",
                 {{"twice", [](const json& s) { return json(s.value("n", 0) * 2); }}});
  ProjectionScope scope{.vars = {{"path", "a.ncu-rep"}}};
  EXPECT_EQ(p.apply("k", json{{"n", 21}}, scope), json::parse(R"({"note": 42, "path": "a.ncu-rep"})"));
}

TEST(Projection, ATableTheProjectionWouldMisreadIsRefused) {
  EXPECT_EQ(table(R"({"about": "x", "k": {"i": {"integer": "index"}}})").problem(), std::nullopt);
  for (const char* bad : {R"({"k": {"i": {"integr": "index"}}})",                     // misspelt operation
                          R"({"k": {"i": {"integer": "index", "string": "name"}}})",  // two operations
                          R"({"k": {"i": {"integer": "index", "at_mostt": 3}}})",     // unknown modifier
                          R"({"k": {"i": {"object": "x", "shape": "nowhere"}}})",     // a shape not declared
                          R"({"k": {"i": {"each": "x"}}})",                           // each without a shape
                          R"({"k": {"i": {"derive": "nothing"}}})",                   // a derivation not given
                          R"({"k": {"i": {"integer": 3}}})",                          // an argument that is no key
                          R"({"k": {"$is": {"each": "x", "shape": {"j": {"nope": "y"}}}}})",  // inside an inline shape
                          R"({"k": 3})"}) {
    auto problem = table(bad).problem();
    EXPECT_TRUE(problem.has_value()) << bad;
  }
}

}  // namespace
}  // namespace keet
