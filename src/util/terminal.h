// The terminal sanitiser: strings from reports (kernel names, file names,
// source lines, rule messages) may carry ESC, BEL, CR and other control
// characters that a terminal would obey (set the window title, clear the
// screen, overwrite a line). Everything KEET writes on stdout and stderr goes
// through this filter (app/app.cc), so no command can forget it.
#pragma once
#include <string>
#include <string_view>

namespace keet {

// Appends `in` to `out` with every control character other than newline and
// tab shown in caret notation ("^[" for ESC, "^G" for BEL, "^M" for CR, "^?"
// for DEL) and every C1 control (U+0080..U+009F) as "U+009B". The
// replacements hold no quote, backslash or markup character, so JSON, CSV and
// XML written on stdout stay valid. With keep_sgr, colour sequences
// (ESC [ digits/semicolons m) pass unchanged: KEET paints with them.
//
// Returns how many bytes of `in` were consumed. Unless `final`, a possible
// sequence cut at the end of `in` (a lone ESC, ESC [ 1;3, a lone 0xC2) is left
// for the next call, so a stream can be filtered in chunks.
size_t append_terminal_safe(std::string& out, std::string_view in, bool keep_sgr, bool final);

// How many leading bytes of `in` the filter passes unchanged whatever follows
// (no control character, no C1 lead byte among them).
size_t terminal_clean_prefix(std::string_view in);

// The whole of `s`, filtered (no colour sequences kept).
std::string terminal_safe(std::string_view s);

}  // namespace keet
