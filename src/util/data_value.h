// Read-only JSON values laid out flat, for KEET's own data files.
//
// The data (data/**/*.json) is compiled into the binary twice over: as text
// (util/embedded_data.h, for commands that print or hand it on) and as node
// tables made at build time by tools/codegen/data_tables.cc, which the engine
// reads with no parse at all. Parsing quantities.json, the rules and the GPU
// tables into nlohmann's tree took 12M of the 27M instructions of analyzing a
// one-kernel report: a map node and a string for every member, every run.
//
// A value is a (table, node) handle: copying one is free, and the tables of
// compiled data live as long as the program. parse_data() builds the same
// tables at run time from text (rule files under test, user-given data).
// Accessors throw on a missing key or a wrong type, as nlohmann's do, so the
// loaders keep one error path for a malformed file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace keet {

enum class DataKind : uint8_t { Null, Bool, Number, String, Array, Object };

// String: `a` is the offset of its bytes in `chars`, `b` their count.
// Array: `a` is the offset of its element ids in `kids`, `b` their count.
// Object: `a` is the offset in `kids` of (key id, value id) pairs sorted by
// key, `b` the number of members. Bool: `a` is 0 or 1. Number: `number`.
struct DataNode {
  DataKind kind;
  uint32_t a, b;
  double number;
};

struct DataTable {
  const DataNode* nodes;
  const uint32_t* kids;
  const char* chars;
};

class DataIterator;
struct DataMember;

class DataValue {
 public:
  DataValue() = default;  // null
  DataValue(const DataTable* table, uint32_t node) : table_(table), node_(node) {}

  DataKind kind() const { return table_ ? n().kind : DataKind::Null; }
  bool is_null() const { return kind() == DataKind::Null; }
  bool is_bool() const { return kind() == DataKind::Bool; }
  bool is_number() const { return kind() == DataKind::Number; }
  bool is_string() const { return kind() == DataKind::String; }
  bool is_array() const { return kind() == DataKind::Array; }
  bool is_object() const { return kind() == DataKind::Object; }

  // Elements of an array or members of an object; 0 for anything else.
  size_t size() const;
  // Element i of an array, or the value of member i of an object.
  DataValue operator[](size_t i) const;
  std::string_view key(size_t i) const;  // name of member i of an object

  std::optional<DataValue> find(std::string_view key) const;  // null unless an object with that member
  bool contains(std::string_view key) const { return find(key).has_value(); }
  DataValue at(std::string_view key) const;  // throws std::out_of_range
  // The member's value, or null when absent (so an absent list iterates as empty).
  DataValue member(std::string_view key) const { return find(key).value_or(DataValue()); }

  std::string_view view() const;  // throws std::domain_error unless a string
  std::string str() const { return std::string(view()); }
  double number() const;  // throws unless a number
  bool boolean() const;   // throws unless a bool
  int integer() const { return static_cast<int>(number()); }
  std::vector<std::string> strings() const;  // an array of strings

  // A member's value, or `fallback` when the member is absent (a member of
  // the wrong type throws, as nlohmann's value() does).
  std::string value(std::string_view key, std::string_view fallback) const;
  std::string value(std::string_view key, const char* fallback) const { return value(key, std::string_view(fallback)); }
  double value(std::string_view key, double fallback) const;
  int value(std::string_view key, int fallback) const;
  bool value(std::string_view key, bool fallback) const;
  std::vector<std::string> value(std::string_view key, const std::vector<std::string>& fallback) const;

  // Over the elements of an array or the member values of an object.
  DataIterator begin() const;
  DataIterator end() const;
  std::vector<DataMember> items() const;  // an object's members, sorted by key

 private:
  const DataNode& n() const { return table_->nodes[node_]; }
  std::optional<DataValue> at_or_null(std::string_view key) const;
  const DataTable* table_ = nullptr;
  uint32_t node_ = 0;
};

class DataIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = DataValue;
  using difference_type = std::ptrdiff_t;
  DataIterator(DataValue parent, size_t i) : parent_(parent), i_(i) {}
  DataValue operator*() const { return parent_[i_]; }
  DataIterator& operator++() { return ++i_, *this; }
  DataIterator operator++(int) {
    auto old = *this;
    ++i_;
    return old;
  }
  bool operator==(const DataIterator& o) const { return i_ == o.i_; }

 private:
  DataValue parent_;
  size_t i_;
};

struct DataMember {
  std::string_view key;
  DataValue value;
};

inline DataIterator DataValue::begin() const { return {*this, 0}; }
inline DataIterator DataValue::end() const { return {*this, size()}; }

// A member of `j` as T (std::string, bool, int, double, std::vector<std::string>,
// std::vector<int> or DataValue), or `fallback` when it is absent or null.
template <typename T>
T member_or(DataValue j, std::string_view key, T fallback) {
  auto v = j.find(key);
  if (!v || v->is_null()) return fallback;
  if constexpr (std::is_same_v<T, std::string>)
    return v->str();
  else if constexpr (std::is_same_v<T, bool>)
    return v->boolean();
  else if constexpr (std::is_same_v<T, int>)
    return v->integer();
  else if constexpr (std::is_same_v<T, double>)
    return v->number();
  else if constexpr (std::is_same_v<T, std::vector<std::string>>)
    return v->strings();
  else if constexpr (std::is_same_v<T, std::vector<int>>) {
    std::vector<int> out;
    for (auto e : *v) out.push_back(e.integer());
    return out;
  } else {
    static_assert(std::is_same_v<T, DataValue>);
    return *v;
  }
}

// Tables built at run time; values stay valid while the document lives.
class DataDocument {
 public:
  explicit DataDocument(const nlohmann::json& j);
  DataDocument(const DataDocument&) = delete;
  DataDocument& operator=(const DataDocument&) = delete;
  DataValue root() const { return {&table_, 0}; }
  const std::vector<DataNode>& nodes() const { return nodes_; }
  const std::vector<uint32_t>& kids() const { return kids_; }
  const std::string& chars() const { return chars_; }

 private:
  std::vector<DataNode> nodes_;
  std::vector<uint32_t> kids_;
  std::string chars_;
  DataTable table_{};
};

// JSON text as a document; throws nlohmann's parse_error on bad text.
std::unique_ptr<DataDocument> parse_data(std::string_view text);

// A data file compiled at build time, by its path under data/
// ("metrics/quantities.json"); nullopt if it is not compiled in.
std::optional<DataValue> compiled_data(std::string_view path);

}  // namespace keet
