#include "store/history.h"

#include <filesystem>

#include <fmt/format.h>

#include "store/sql.h"
#include "util/json.h"
#include "util/strings.h"

namespace keet::store {

std::string Run::device() const {
  for (const auto& k : kernels)
    if (!k.device.empty()) return k.device;
  return "";
}

std::string default_store_path(const std::string& xdg_data_home, const std::string& home) {
  std::filesystem::path base = !xdg_data_home.empty()
                                   ? std::filesystem::path(xdg_data_home)
                                   : std::filesystem::path(home.empty() ? "." : home) / ".local/share";
  return (base / "keet" / "history.sqlite").string();
}

Result<std::unique_ptr<HistoryStore>> open_store(const std::string& url) {
  if (is_postgres_url(url)) return open_postgres(url);
  std::string path = starts_with_ci(url, "sqlite:") ? url.substr(7) : url;
  if (path.empty()) return fail(ExitCode::BadInput, "history database: empty path");
  return open_sqlite(path);
}

std::string kernel_payload(const compare::KernelSnapshot& s) { return json_text(compare::snapshot_json(s)); }

std::optional<compare::KernelSnapshot> kernel_from_payload(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return compare::snapshot_from_json(j);
}

// A run counts as "on the device" when any of its kernels ran there, so a
// baseline recorded on another GPU is never compared against.
std::optional<Run> pick_baseline(std::vector<Run> newest_first, const std::string& tag, const std::string& device) {
  for (auto& run : newest_first) {
    if (tag != "latest" && run.tag != tag) continue;
    for (const auto& k : run.kernels)
      if (k.device == device) return std::move(run);
  }
  return std::nullopt;
}

}  // namespace keet::store
