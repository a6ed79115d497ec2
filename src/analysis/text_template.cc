#include "analysis/text_template.h"

#include <iterator>

#include <fmt/format.h>

#include "model/units.h"

namespace keet::analysis {
namespace {

// {name:auto}: durations and sizes carry their (scaled) unit; other values
// are written as plain numbers, the sentence names what they count.
std::string readable_unit(SymbolId symbol) {
  if (symbol >= quantity_count()) return "";
  const std::string& unit = quantity_unit(static_cast<QuantityId>(symbol));
  bool scaled = unit == "nsecond" || unit == "ns" || unit == "byte" || unit == "byte/second";
  return scaled ? unit : "";
}

}  // namespace

// A '{' opens a placeholder only when a '}' follows somewhere; the body runs
// to the first '}' (so "{a{b}" names "a{b"), as the engine always read them.
TextTemplate::TextTemplate(std::string_view text, SymbolTable& symbols) : text_(text) {
  Piece piece;
  for (size_t i = 0; i < text.size(); ++i) {
    auto close = text.find('}', i);
    if (text[i] != '{' || close == std::string_view::npos) {
      piece.literal += text[i];
      continue;
    }
    auto body = text.substr(i + 1, close - i - 1);
    auto colon = body.find(':');
    auto name = body.substr(0, colon);
    piece.placeholder = true;
    piece.symbol = symbols.intern(name);
    piece.word = text_var(name);
    piece.spec = colon == std::string_view::npos ? "{:.4g}" : "{" + std::string(body.substr(colon)) + "}";
    if (piece.spec == "{:auto}") piece.unit = readable_unit(piece.symbol);
    piece.ms = piece.spec == "{:ms}";
    pieces_.push_back(std::move(piece));
    piece = Piece{};
    i = close;
  }
  if (!piece.literal.empty()) pieces_.push_back(std::move(piece));
}

bool TextTemplate::append_value(const Piece& p, std::span<const std::optional<double>> values, const TextValues& words,
                                std::string& out) const {
  if (p.word && words[static_cast<size_t>(*p.word)]) {
    out += *words[static_cast<size_t>(*p.word)];
    return true;
  }
  const auto& v = values[p.symbol];
  if (!v) return false;
  if (p.unit) {
    out += model::readable(*v, *p.unit);
    return true;
  }
  if (p.ms) {
    out += model::readable_duration(*v * 1e6);
    return true;
  }
  fmt::format_to(std::back_inserter(out), fmt::runtime(p.spec), *v);
  return true;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

// Sentence by sentence: a sentence ends at ". ", "! " or "? " in the literal
// text; one whose placeholder is unknown is dropped whole.
std::string TextTemplate::render(std::span<const std::optional<double>> values, const TextValues& words) const {
  std::string out, sentence;
  bool known = true;
  auto end_sentence = [&] {
    if (known) out += sentence;
    sentence.clear();
    known = true;
  };
  for (const auto& p : pieces_) {
    const std::string& lit = p.literal;
    for (size_t i = 0; i < lit.size(); ++i) {
      sentence += lit[i];
      bool stop = (lit[i] == '.' || lit[i] == '!' || lit[i] == '?') && i + 1 < lit.size() && lit[i + 1] == ' ';
      if (stop) {
        sentence += ' ';
        ++i;
        end_sentence();
      }
    }
    if (p.placeholder && !append_value(p, values, words, sentence)) known = false;
  }
  end_sentence();
  return std::string(trim(out));
}

std::optional<std::string> TextTemplate::render_complete(std::span<const std::optional<double>> values,
                                                         const TextValues& words) const {
  std::string out;
  out.reserve(text_.size() + 16);
  for (const auto& p : pieces_) {
    out += p.literal;
    if (p.placeholder && !append_value(p, values, words, out)) return std::nullopt;
  }
  return out;
}

std::vector<SymbolId> TextTemplate::symbols() const {
  std::vector<SymbolId> out;
  for (const auto& p : pieces_)
    if (p.placeholder && !p.word) out.push_back(p.symbol);
  return out;
}

}  // namespace keet::analysis
