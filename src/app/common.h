// Pieces shared by commands: opening reports, -k, --format, partial reports.
#pragma once
#include <string>
#include <vector>

#include "app/app.h"
#include "model/report.h"
#include "model/select.h"
#include "readers/reader.h"

namespace keet::app {

// Flags every report-reading command has.
struct ReportArgs {
  std::string path;
  std::string kernel;  // -k
  bool allow_partial = false;
};
void add_report_args(CLI::App& sub, ReportArgs& a, bool with_kernel = true);

// Loads the report; prints warnings on err. A partial report is returned with
// `partial_exit` set to BadInput unless --allow-partial was given.
struct Loaded {
  model::Report report;
  std::vector<const model::Kernel*> selected;
  ExitCode partial_exit = ExitCode::Ok;
};
Result<Loaded> load_report(Context& ctx, const ReportArgs& a, const readers::ReadOptions& opt = {});

// Validates --format against the allowed names (first is the default).
CLI::Option* add_format(CLI::App& sub, std::string& value, std::vector<std::string> allowed);

std::string dim_text(const model::Dim3& d);
std::string duration_text(std::optional<double> ns);
std::string device_of(const model::Kernel& k);

}  // namespace keet::app
