// The streaming JSON writers lay text out exactly as json_text() does for the
// whole document, at every indent and for empty and nested arrays.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
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
    for (int indent : {-1, 0, 1, 2, 4})
      EXPECT_EQ(streamed(doc, "kernels", indent), json_text(doc, indent) + "\n") << indent;
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

// Walks `j` and writes it through JsonWriter's own calls (a scalar's kind
// picks the overload), so the writer is compared with the serializer on
// every kind of value.
void write_tree(JsonWriter& w, const json& j) {
  switch (j.type()) {
    case json::value_t::object:
      w.begin_object();
      for (const auto& [k, v] : j.items()) {
        w.key(k);
        write_tree(w, v);
      }
      w.end_object();
      return;
    case json::value_t::array:
      w.begin_array();
      for (const auto& v : j) write_tree(w, v);
      w.end_array();
      return;
    case json::value_t::string:
      w.value(j.get_ref<const std::string&>());
      return;
    case json::value_t::boolean:
      w.value(j.get<bool>());
      return;
    case json::value_t::number_integer:
      w.value(j.get<int64_t>());
      return;
    case json::value_t::number_unsigned:
      w.value(j.get<uint64_t>());
      return;
    case json::value_t::number_float:
      w.value(j.get<double>());
      return;
    default:
      w.null();
      return;
  }
}

std::string written(const json& j, int indent, int depth) {
  std::string out;
  JsonWriter w(out, indent, depth);
  write_tree(w, j);
  return out;
}

TEST(JsonWriter, SameBytesAsTheSerializerAtEveryIndentAndDepth) {
  json kernel = {{"name", "k<\x01>\"q\"\\ \t\u00e9"},
                 {"bad", std::string("k\xff\xc3")},
                 {"metrics", {{"a", 1.5}, {"b", json::array()}, {"c", json::object()}, {"d", {json::array()}}}},
                 {"list", {1, -2, 3u, true, false, nullptr, 0.1, 1e300, -0.0, {{"x", nullptr}}}},
                 {"nan", std::nan("")},
                 {"max", std::numeric_limits<uint64_t>::max()},
                 {"min", std::numeric_limits<int64_t>::min()}};
  std::vector<json> docs = {json::object(), json::array(), kernel, {{"k", {kernel, kernel}}}, "just a string", 42};
  for (const auto& doc : docs)
    for (int indent : {-1, 0, 1, 2, 4})
      for (int depth : {0, 1, 3})
        EXPECT_EQ(written(doc, indent, depth), json_text_at(doc, indent, depth)) << indent << " " << depth;
}

TEST(JsonWriter, NumbersAsTheSerializerPrintsThem) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int i = 0; i < 20000; ++i) {
    uint64_t bits = rng();
    double any;
    std::memcpy(&any, &bits, sizeof any);
    double scaled = std::ldexp(unit(rng), static_cast<int>(rng() % 200) - 100);
    for (double d : {any, scaled, std::round(scaled * 1e6), static_cast<double>(static_cast<float>(scaled))}) {
      std::string out;
      JsonWriter(out, -1).value(d);
      ASSERT_EQ(out, json_text(json(d))) << bits;
    }
  }
}

TEST(JsonWriter, SubTreesSitAtTheirDepth) {
  json sub = {{"a", {1, 2}}, {"b", json::object()}};
  for (int indent : {-1, 2}) {
    std::string out;
    JsonWriter w(out, indent, 1);
    w.begin_object().key("sub").value(sub).member("z", std::vector<std::string>{"x"}).end_object();
    EXPECT_EQ(out, json_text_at(json{{"sub", sub}, {"z", {"x"}}}, indent, 1));
  }
}

TEST(JsonWriter, StreamedElementsMatchTreeElements) {
  json doc = {{"kernels", {{{"a", 1}}, json::object(), {{"b", {1, 2}}}}}, {"z", 1}};
  for (int indent : {-1, 2}) {
    std::ostringstream out;
    JsonObjectStream obj(out, indent);
    auto arr = obj.array_member("kernels");
    for (const auto& e : doc["kernels"]) arr.add([&](JsonWriter& w) { write_tree(w, e); });
    arr.close();
    obj.member("z", 1);
    obj.close();
    EXPECT_EQ(out.str(), json_text(doc, indent) + "\n");
  }
}

// Strings of random bytes (mostly UTF-8-ish, some broken) come out as the
// serializer writes them: escapes, multi-byte characters and replacements.
TEST(JsonWriter, StringsAsTheSerializerWritesThem) {
  std::mt19937 rng(11);
  const std::vector<std::string> pieces = {"a",        "\"",           "\\",
                                           "\n",       "\x01",         "\x7f",
                                           "\xc3\xa9", "\xe2\x89\xa5", "\xf0\x9f\x98\x80",
                                           "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                           "\xe0\x80", "\xff",         "\x80",
                                           "\xc3"};
  for (int i = 0; i < 5000; ++i) {
    std::string s;
    for (int n = static_cast<int>(rng() % 24); n > 0; --n)
      s += rng() % 3 ? std::string(1 + rng() % 9, 'x') : pieces[rng() % pieces.size()];
    std::string out;
    JsonWriter(out, -1).value(s);
    ASSERT_EQ(out, json_text(json(s))) << ::testing::PrintToString(s);
  }
}

}  // namespace
}  // namespace keet
