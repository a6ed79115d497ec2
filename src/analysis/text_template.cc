#include "analysis/text_template.h"

#include <iterator>

#include <fmt/format.h>

namespace keet::analysis {

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
    pieces_.push_back(std::move(piece));
    piece = Piece{};
    i = close;
  }
  if (!piece.literal.empty()) pieces_.push_back(std::move(piece));
}

std::string TextTemplate::render(std::span<const std::optional<double>> values, const TextValues& words) const {
  std::string out;
  out.reserve(text_.size() + 16);
  for (const auto& p : pieces_) {
    out += p.literal;
    if (!p.placeholder) continue;
    if (p.word && words[static_cast<size_t>(*p.word)]) {
      out += *words[static_cast<size_t>(*p.word)];
    } else if (const auto& v = values[p.symbol]) {
      fmt::format_to(std::back_inserter(out), fmt::runtime(p.spec), *v);
    } else {
      out += "n/a";
    }
  }
  return out;
}

}  // namespace keet::analysis
