// The streaming JSON writers lay text out exactly as json_text() does for the
// whole document, at every indent and for empty and nested arrays.
#include <gtest/gtest.h>

#include <sstream>

#include "util/json.h"

namespace keet {
namespace {

using nlohmann::json;

// Writes `doc` (an object) member by member, streaming `array_key`'s elements.
std::string streamed(const json& doc, const std::string& array_key, int indent) {
  std::ostringstream out;
  JsonObjectStream obj(out, indent);
  for (const auto& [key, value] : doc.items()) {
    if (key != array_key) {
      obj.member(key, value);
      continue;
    }
    auto arr = obj.array_member(key);
    for (const auto& e : value) arr.add(e);
    arr.close();
  }
  obj.close();
  return out.str();
}

TEST(JsonStream, SameBytesAsOneDump) {
  json kernel = {{"name", "k<\x01>\"q\""},
                 {"metrics", {{"a", 1.5}, {"b", json::array()}, {"c", json::object()}}},
                 {"list", {1, 2, {{"x", nullptr}}}}};
  std::vector<json> docs = {
      {{"kernels", json::array()}, {"schema", "s/1"}},
      {{"kernels", {kernel}}, {"report", {{"path", "r"}}}},
      {{"bad", 3}, {"kernels", {kernel, kernel, 7, "text"}}, {"zeta", {1, 2}}},
  };
  for (const auto& doc : docs)
    for (int indent : {-1, 0, 1, 2, 4}) EXPECT_EQ(streamed(doc, "kernels", indent), json_text(doc, indent) + "\n") << indent;
}

TEST(JsonStream, EmptyObject) {
  std::ostringstream out;
  JsonObjectStream(out, 2).close();
  EXPECT_EQ(out.str(), "{}\n");
}

TEST(JsonStream, InvalidUtf8IsReplacedNotThrown) {
  std::ostringstream out;
  JsonArrayStream arr(out, 2, 0);
  EXPECT_NO_THROW(arr.add(json(std::string("k\xff"))));
  arr.close();
  EXPECT_EQ(out.str(), "[\n  \"k\xEF\xBF\xBD\"\n]");
}

TEST(JsonStream, TextAtDepthIndentsEveryLine) {
  json j = {{"a", {1, 2}}};
  EXPECT_EQ(json_text_at(j, 2, 1), "{\n    \"a\": [\n      1,\n      2\n    ]\n  }");
  EXPECT_EQ(json_text_at(j, -1, 3), json_text(j));
}

}  // namespace
}  // namespace keet
