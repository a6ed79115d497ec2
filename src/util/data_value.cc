#include "util/data_value.h"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace keet {
namespace {

const char* kind_name(DataKind k) {
  switch (k) {
    case DataKind::Null:
      return "null";
    case DataKind::Bool:
      return "boolean";
    case DataKind::Number:
      return "number";
    case DataKind::String:
      return "string";
    case DataKind::Array:
      return "array";
    case DataKind::Object:
      return "object";
  }
  return "value";
}

[[noreturn]] void wrong_kind(DataKind want, DataKind got) {
  throw std::domain_error(std::string("expected a ") + kind_name(want) + ", found a " + kind_name(got));
}

// Appends `j` and everything under it; returns its node id. A container's
// children are made first, so its ids in `kids` are contiguous.
uint32_t add(const nlohmann::json& j, std::vector<DataNode>& nodes, std::vector<uint32_t>& kids, std::string& chars) {
  auto id = static_cast<uint32_t>(nodes.size());
  nodes.push_back({DataKind::Null, 0, 0, 0});
  auto string_node = [&](const std::string& s) {
    DataNode n{DataKind::String, static_cast<uint32_t>(chars.size()), static_cast<uint32_t>(s.size()), 0};
    chars += s;
    return n;
  };
  switch (j.type()) {
    case nlohmann::json::value_t::boolean:
      nodes[id] = {DataKind::Bool, j.get<bool>() ? 1u : 0u, 0, 0};
      break;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      nodes[id] = {DataKind::Number, 0, 0, j.get<double>()};
      break;
    case nlohmann::json::value_t::string:
      nodes[id] = string_node(j.get_ref<const std::string&>());
      break;
    case nlohmann::json::value_t::array: {
      std::vector<uint32_t> ids;
      for (const auto& e : j) ids.push_back(add(e, nodes, kids, chars));
      nodes[id] = {DataKind::Array, static_cast<uint32_t>(kids.size()), static_cast<uint32_t>(ids.size()), 0};
      kids.insert(kids.end(), ids.begin(), ids.end());
      break;
    }
    case nlohmann::json::value_t::object: {
      std::vector<uint32_t> ids;
      for (const auto& [k, v] : j.items()) {  // nlohmann's objects are sorted by key
        auto key_id = static_cast<uint32_t>(nodes.size());
        nodes.push_back(string_node(k));
        ids.push_back(key_id);
        ids.push_back(add(v, nodes, kids, chars));
      }
      nodes[id] = {DataKind::Object, static_cast<uint32_t>(kids.size()), static_cast<uint32_t>(ids.size() / 2), 0};
      kids.insert(kids.end(), ids.begin(), ids.end());
      break;
    }
    default:
      break;
  }
  return id;
}

}  // namespace

size_t DataValue::size() const {
  auto k = kind();
  return k == DataKind::Array || k == DataKind::Object ? n().b : 0;
}

DataValue DataValue::operator[](size_t i) const {
  if (i >= size()) throw std::out_of_range("index " + std::to_string(i) + " is out of range");
  const auto& node = n();
  size_t slot = node.kind == DataKind::Object ? node.a + 2 * i + 1 : node.a + i;
  return {table_, table_->kids[slot]};
}

std::string_view DataValue::key(size_t i) const {
  if (!is_object() || i >= size()) throw std::out_of_range("member " + std::to_string(i) + " is out of range");
  return DataValue(table_, table_->kids[n().a + 2 * i]).view();
}

std::optional<DataValue> DataValue::find(std::string_view k) const {
  if (!is_object()) return std::nullopt;
  size_t lo = 0, hi = size();
  while (lo < hi) {  // members are sorted by key
    size_t mid = (lo + hi) / 2;
    auto name = key(mid);
    if (name == k) return (*this)[mid];
    if (name < k)
      lo = mid + 1;
    else
      hi = mid;
  }
  return std::nullopt;
}

DataValue DataValue::at(std::string_view k) const {
  if (!is_object()) throw std::domain_error("cannot look up '" + std::string(k) + "' in a " + kind_name(kind()));
  if (auto v = find(k)) return *v;
  throw std::out_of_range("key '" + std::string(k) + "' not found");
}

std::string_view DataValue::view() const {
  if (!is_string()) wrong_kind(DataKind::String, kind());
  return {table_->chars + n().a, n().b};
}

double DataValue::number() const {
  if (!is_number()) wrong_kind(DataKind::Number, kind());
  return n().number;
}

bool DataValue::boolean() const {
  if (!is_bool()) wrong_kind(DataKind::Bool, kind());
  return n().a != 0;
}

std::vector<std::string> DataValue::strings() const {
  if (!is_array()) wrong_kind(DataKind::Array, kind());
  std::vector<std::string> out;
  out.reserve(size());
  for (auto v : *this) out.push_back(v.str());
  return out;
}

std::string DataValue::value(std::string_view k, std::string_view fallback) const {
  auto v = at_or_null(k);
  return v ? v->str() : std::string(fallback);
}

double DataValue::value(std::string_view k, double fallback) const {
  auto v = at_or_null(k);
  return v ? v->number() : fallback;
}

int DataValue::value(std::string_view k, int fallback) const {
  auto v = at_or_null(k);
  return v ? v->integer() : fallback;
}

bool DataValue::value(std::string_view k, bool fallback) const {
  auto v = at_or_null(k);
  return v ? v->boolean() : fallback;
}

std::vector<std::string> DataValue::value(std::string_view k, const std::vector<std::string>& fallback) const {
  auto v = at_or_null(k);
  return v ? v->strings() : fallback;
}

// value()'s lookup: like nlohmann's, it needs an object.
std::optional<DataValue> DataValue::at_or_null(std::string_view k) const {
  if (!is_object()) throw std::domain_error("cannot use value('" + std::string(k) + "') with a " + kind_name(kind()));
  return find(k);
}

std::vector<DataMember> DataValue::items() const {
  std::vector<DataMember> out;
  if (!is_object()) return out;
  out.reserve(size());
  for (size_t i = 0; i < size(); ++i) out.push_back({key(i), (*this)[i]});
  return out;
}

DataDocument::DataDocument(const nlohmann::json& j) {
  add(j, nodes_, kids_, chars_);
  table_ = {nodes_.data(), kids_.data(), chars_.data()};
}

std::unique_ptr<DataDocument> parse_data(std::string_view text) {
  return std::make_unique<DataDocument>(nlohmann::json::parse(text));
}

}  // namespace keet
