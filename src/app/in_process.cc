#include "app/in_process.h"

#include <set>
#include <sstream>

#include "app/app.h"

namespace keet::app {

service::CommandRunner in_process_runner(std::function<std::string(const std::string&)> getenv) {
  auto visible = [getenv = std::move(getenv)](const std::string& name) {
    static const std::set<std::string, std::less<>> kVisible{"HOME",      "XDG_DATA_HOME", "PATH",
                                                             "CUDA_HOME", "CUDA_PATH",     "TMPDIR"};
    return kVisible.contains(name) ? getenv(name) : std::string();
  };
  return [visible](const std::vector<std::string>& args) {
    std::vector<const char*> argv = {"keet"};
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    Context ctx{out, err, false, false, visible};
    int rc = run(static_cast<int>(argv.size()), argv.data(), ctx);
    return service::CommandOutput{rc, out.str(), err.str()};
  };
}

}  // namespace keet::app
