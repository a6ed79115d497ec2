// Finding texts in rule data ("{global_excess_pct:.1f}% more sectors ..."):
// placeholders name a quantity, a context value or a word, with an optional
// fmt format spec. Split into pieces once when the rules load; rendered only
// for findings that fire.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/symbols.h"

namespace keet::analysis {

class TextTemplate {
 public:
  TextTemplate() = default;
  // Interns every placeholder name in `symbols`.
  TextTemplate(std::string_view text, SymbolTable& symbols);

  const std::string& text() const { return text_; }
  bool empty() const { return text_.empty(); }
  // A placeholder becomes its word when one is set, else its value formatted
  // with the spec ("{:.4g}" when none is given; "auto": model::readable in
  // the quantity's catalogue unit; "ms": a value in milliseconds written as a
  // readable duration). KEET never prints a value the
  // report does not hold: a sentence with an unknown placeholder is left out.
  std::string render(std::span<const std::optional<double>> values, const TextValues& words) const;
  // The whole text, or nothing when any placeholder is unknown (titles).
  std::optional<std::string> render_complete(std::span<const std::optional<double>> values,
                                             const TextValues& words) const;
  // Every placeholder name (for validation against the catalogue).
  std::vector<SymbolId> symbols() const;

 private:
  struct Piece {
    std::string literal;  // text before the placeholder
    bool placeholder = false;
    SymbolId symbol = 0;
    std::optional<TextVar> word;
    std::string spec;                 // a complete fmt replacement field, e.g. "{:.1f}"
    std::optional<std::string> unit;  // {name:auto}: written by model::readable in this unit
    bool ms = false;                  // {name:ms}: a duration in milliseconds, written readable ("1.2 s")
  };
  // Appends piece `p`'s value; false when it is unknown.
  bool append_value(const Piece& p, std::span<const std::optional<double>> values, const TextValues& words,
                    std::string& out) const;

  std::string text_;
  std::vector<Piece> pieces_;
};

}  // namespace keet::analysis
