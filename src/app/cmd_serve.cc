// keet serve: the REST API, the web UI and the job workers in one process;
// keet worker: workers only, sharing the queue of a `keet serve` (same
// --store and --data-dir). See docs/server.md.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "app/in_process.h"
#include "app/timeline_input.h"
#include "service/api.h"
#include "service/http_server.h"
#include "service/mcp.h"
#include "service/service.h"
#include "store/history.h"
#include "util/error.h"
#include "util/strings.h"

namespace keet::app {
namespace {

struct ServeArgs {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string data_dir, store, db, token, llm, nsys, max_upload = "256M";
  std::vector<std::string> origins, mcp_roots;
  int workers = 2, max_queue = 64;
  int max_connections = 512, max_connections_per_client = 256, idle_timeout_s = 30, request_timeout_s = 30;
  int job_timeout_s = 300, lease_s = 30;
};

// "256M", "64k", "1G", "1000" -> bytes.
std::optional<size_t> parse_size(const std::string& s) {
  if (s.empty()) return std::nullopt;
  size_t unit = 1;
  std::string digits = s;
  switch (std::tolower(static_cast<unsigned char>(s.back()))) {
    case 'k':
      unit = 1u << 10;
      break;
    case 'm':
      unit = 1u << 20;
      break;
    case 'g':
      unit = 1u << 30;
      break;
    default:
      unit = 0;
  }
  if (unit)
    digits.pop_back();
  else
    unit = 1;
  auto n = parse_number(digits);
  if (!n || *n < 1) return std::nullopt;
  return static_cast<size_t>(*n) * unit;
}

std::string default_data_dir(Context& ctx) {
  std::string xdg = ctx.getenv("XDG_DATA_HOME"), home = ctx.getenv("HOME");
  return (xdg.empty() ? (home.empty() ? "." : home) + "/.local/share" : xdg) + "/keet/serve";
}

std::string machine_name() {
  char buf[256] = "";
  gethostname(buf, sizeof buf - 1);
  return buf;
}

Result<service::ServiceOptions> options_from(Context& ctx, const ServeArgs& a) {
  service::ServiceOptions o;
  std::error_code ec;
  o.data_dir = std::filesystem::absolute(a.data_dir.empty() ? default_data_dir(ctx) : a.data_dir, ec).string();
  std::filesystem::create_directories(o.data_dir, ec);
  if (ec) return fail(ExitCode::BadInput, fmt::format("--data-dir {}: {}", o.data_dir, ec.message()));
  o.history_db = a.db;
  // A shared PostgreSQL queue usually means a shared history too.
  if (o.history_db.empty() && (starts_with_ci(a.store, "postgres://") || starts_with_ci(a.store, "postgresql://")))
    o.history_db = a.store;
  o.llm = a.llm.empty() ? ctx.getenv("KEET_LLM") : a.llm;
  o.token = a.token.empty() ? ctx.getenv("KEET_SERVE_TOKEN") : a.token;
  o.allowed_origins = a.origins;
  o.loopback = service::loopback_address(a.host);
  auto size = parse_size(a.max_upload);
  if (!size) return fail(ExitCode::BadInput, "--max-upload: a size such as 256M, 64k or 1G");
  o.max_upload = *size;
  o.max_queue = a.max_queue;
  o.job_timeout = std::chrono::seconds(a.job_timeout_s);
  o.lease = std::chrono::seconds(a.lease_s);
  o.workers = a.workers;
  o.worker_name = fmt::format("{}:{}", machine_name(), getpid());
  o.log = [&ctx](std::string_view line) {
    static std::mutex mu;  // lines come from the server's and the workers' threads
    std::lock_guard lock(mu);
    ctx.err << line << "\n" << std::flush;
  };
  return o;
}

// The nsys that exports uploaded Nsight Systems reports, found once as
// `keet timeline` finds it (--nsys, $NSYS, PATH, CUDA folders) and said on
// standard error, found or not: without one an uploaded .nsys-rep fails and
// asks for its SQLite export. An --nsys that is no executable stops the
// start: the operator asked for that one.
Result<std::string> serve_nsys(Context& ctx, const ServeArgs& a, std::string_view who) {
  auto nsys = find_nsys(a.nsys, ctx.getenv);
  if (!nsys && !a.nsys.empty()) return fail(ExitCode::Dependency, "--nsys " + nsys.error().message);
  if (!nsys) {
    ctx.err << fmt::format(
                   "keet {}: no nsys found (--nsys, $NSYS, PATH, /usr/local/cuda*/bin, "
                   "/opt/nvidia/nsight-systems{}): an uploaded .nsys-rep/.qdrep fails, asking for its SQLite export\n",
                   who, ctx.getenv("NSYS").empty() ? "" : "; $NSYS " + nsys.error().message)
            << std::flush;
    return std::string();
  }
  // Jobs run in folders of their own: a relative --nsys would name nothing there.
  std::error_code ec;
  std::string path = std::filesystem::absolute(*nsys, ec).lexically_normal().string();
  if (ec) path = *nsys;
  ctx.err << fmt::format("keet {}: nsys {} exports uploaded .nsys-rep/.qdrep reports\n", who, path) << std::flush;
  return path;
}

// What a killed server or worker left behind: half-written uploads (older
// than an hour: another process may be writing one) and job folders older
// than any job can run.
void clean_leftovers(const service::ServiceOptions& o, const service::BlobStore& blobs) {
  auto job_life = std::chrono::duration_cast<std::chrono::seconds>(o.job_timeout + o.lease) + std::chrono::seconds(60);
  int uploads = blobs.remove_partial(std::chrono::hours(1));
  int folders = service::remove_stale_work(o.data_dir, job_life);
  if (uploads || folders)
    service::log_event(o.log, io::system_unix_ms(), "serve.cleanup",
                       {{"partial_uploads", std::to_string(uploads)}, {"job_folders", std::to_string(folders)}});
}

// SIGINT/SIGTERM are taken by one thread, which stops everything in order;
// the mask is set before any other thread exists, so all of them inherit it.
class StopSignal {
 public:
  StopSignal() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }
  void on_signal(std::function<void()> stop) {
    thread_ = std::thread([this, stop = std::move(stop)] {
      int sig = 0;
      sigwait(&set_, &sig);
      stop();
    });
    thread_.detach();
  }

 private:
  sigset_t set_;
  std::thread thread_;
};

struct Backend {
  std::unique_ptr<service::JobStore> jobs;
  std::unique_ptr<service::BlobStore> blobs;
  std::unique_ptr<service::KeetRunner> runner;
};

Result<Backend> open_backend(const service::ServiceOptions& o, const std::string& store) {
  Backend b;
  KEET_TRY(jobs, service::open_job_store(store.empty() ? "sqlite:" + o.data_dir + "/jobs.sqlite" : store));
  b.jobs = std::move(*jobs);
  b.blobs = std::make_unique<service::BlobStore>(o.data_dir);
  b.runner = service::make_process_runner(service::self_executable(), o.data_dir + "/work/runs");
  return b;
}

// /mcp: the MCP server's streamable HTTP transport (service/mcp.h), behind
// the same token, Host and Origin checks as the API (service/api.cc).
service::Handler mcp_handler(service::McpServer& mcp) {
  return [&mcp](const service::Request& r) {
    if (!r.body_file.empty())  // past the HTTP layer's in-memory budget: no JSON-RPC message is that long
      return service::Response{413, "application/json", {}, R"({"error":"an MCP message must be under 256 KiB"})", {}};
    auto reply = mcp.handle_http({r.method, r.headers, r.body});
    service::Response res{reply.status, "application/json", {}, std::move(reply.body), {}};
    for (auto& [name, value] : reply.headers)
      if (to_lower(name) == "content-type")
        res.content_type = value;
      else
        res.headers.emplace_back(name, value);
    return res;
  };
}

std::unique_ptr<service::McpServer> make_mcp(Context& ctx, const ServeArgs& a, const service::ServiceOptions& o) {
  service::McpOptions mo;
  mo.run = in_process_runner(ctx.getenv);
  // The tools read reports only under these folders: by default the uploads
  // (by content address), never the whole machine.
  mo.roots = a.mcp_roots.empty() ? std::vector<std::string>{o.data_dir + "/reports"} : a.mcp_roots;
  mo.store = o.history_db;
  mo.allowed_origins = a.origins;
  mo.log = [&ctx](std::string_view line) {
    static std::mutex mu;  // requests log from the server's threads
    std::lock_guard lock(mu);
    ctx.err << "keet serve: mcp: " << line << "\n" << std::flush;
  };
  return std::make_unique<service::McpServer>(std::move(mo));
}

ExitCode run_serve(Context& ctx, const ServeArgs& a) {
  StopSignal signals;
  auto opt = options_from(ctx, a);
  if (!opt) return report_error(ctx, opt.error());
  auto nsys = serve_nsys(ctx, a, "serve");
  if (!nsys) return report_error(ctx, nsys.error());
  opt->nsys = *nsys;
  if (!opt->loopback && opt->token.empty())
    return report_error(
        ctx, {ExitCode::BadInput, fmt::format("refusing to listen on {} without --token (or $KEET_SERVE_TOKEN): "
                                              "beyond loopback every request must carry a bearer token",
                                              a.host)});
  auto backend = open_backend(*opt, a.store);
  if (!backend) return report_error(ctx, backend.error());
  clean_leftovers(*opt, *backend->blobs);
  service::Workers workers(*backend->jobs, *backend->blobs, *backend->runner, *opt);
  service::Api api(*backend->jobs, *backend->blobs, *backend->runner, &workers, *opt);
  std::error_code ec;
  std::filesystem::create_directories(opt->data_dir + "/reports", ec);
  auto mcp = make_mcp(ctx, a, *opt);
  api.mount_mcp(mcp_handler(*mcp));
  service::ServerConfig config;
  config.host = a.host;
  config.port = a.port;
  config.max_body_bytes = opt->max_upload + (64u << 10);  // room for multipart framing
  config.spool_dir = opt->data_dir + "/reports/spool";    // beside the store: an upload is renamed in
  std::filesystem::create_directories(config.spool_dir, ec);
  config.max_connections = a.max_connections;
  config.max_connections_per_client = a.max_connections_per_client;
  config.idle_timeout_s = a.idle_timeout_s;
  config.request_timeout_s = a.request_timeout_s;
  config.log = [log = opt->log](std::string_view line) {
    service::log_event(log, io::system_unix_ms(), "http.transport", {{"message", std::string(line)}});
  };
  auto server = service::HttpServer::start(
      config, [&api](const service::Request& r) { return api.handle(r); },
      [&api](const service::Request& r) { return api.admit(r); });
  if (!server) return report_error(ctx, server.error());
  workers.start();
  signals.on_signal([&] { (*server)->stop(); });
  std::string shown_host = a.host.find(':') != std::string::npos ? "[" + a.host + "]" : a.host;
  ctx.err << fmt::format("keet serve: listening on http://{}:{} (data {}, jobs {}, {} workers{})\n", shown_host,
                         (*server)->port(), opt->data_dir, backend->jobs->describe(), opt->workers,
                         opt->token.empty() ? "" : ", bearer token required")
          << std::flush;
  (*server)->run();
  workers.stop();
  ctx.err << "keet serve: stopped\n" << std::flush;
  return ExitCode::Ok;
}

ExitCode run_worker(Context& ctx, const ServeArgs& a) {
  StopSignal signals;
  auto opt = options_from(ctx, a);
  if (!opt) return report_error(ctx, opt.error());
  auto nsys = serve_nsys(ctx, a, "worker");
  if (!nsys) return report_error(ctx, nsys.error());
  opt->nsys = *nsys;
  auto backend = open_backend(*opt, a.store);
  if (!backend) return report_error(ctx, backend.error());
  service::Workers workers(*backend->jobs, *backend->blobs, *backend->runner, *opt);
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  signals.on_signal([&] {
    std::lock_guard lock(mu);
    stop = true;
    cv.notify_all();
  });
  workers.start();
  ctx.err << fmt::format("keet worker: {} workers on {} (data {})\n", opt->workers, backend->jobs->describe(),
                         opt->data_dir)
          << std::flush;
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return stop; });
  workers.stop();
  return ExitCode::Ok;
}

void add_queue_flags(CLI::App& sub, ServeArgs& a) {
  sub.add_option("--data-dir", a.data_dir, "uploaded reports and scratch space (default $XDG_DATA_HOME/keet/serve)");
  sub.add_option("--store", a.store, "job queue: sqlite:PATH (default DATA/jobs.sqlite) or postgresql://...");
  sub.add_option("--db", a.db,
                 "history database for record/history/gate (default: the --store URL if PostgreSQL, else keet's)");
  sub.add_option("--workers", a.workers, "jobs run at once")->capture_default_str()->check(CLI::Range(0, 256));
  sub.add_option("--job-timeout", a.job_timeout_s, "seconds a job may run")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  sub.add_option("--nsys", a.nsys,
                 "nsys executable that exports uploaded .nsys-rep/.qdrep reports (default: $NSYS, PATH, "
                 "/usr/local/cuda*/bin)");
  sub.add_option("--lease", a.lease_s, "seconds without a heartbeat after which a job is claimed again")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
}

}  // namespace

Command serve_command() {
  return {"serve", "HTTP API, web UI and job queue (docs/server.md)", [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<ServeArgs>();
            sub.add_option("--host", a->host, "address to listen on (beyond loopback needs --token)")
                ->capture_default_str();
            sub.add_option("--port", a->port, "TCP port (0: any free one)")
                ->capture_default_str()
                ->check(CLI::Range(0, 65535));
            sub.add_option("--token", a->token, "bearer token every request must carry (or $KEET_SERVE_TOKEN)");
            sub.add_option("--allow-origin", a->origins, "answer CORS requests from this origin (repeatable)");
            sub.add_option("--max-upload", a->max_upload, "largest report accepted (e.g. 64M)")->capture_default_str();
            sub.add_option("--max-queue", a->max_queue, "jobs waiting before uploads get 429")
                ->capture_default_str()
                ->check(CLI::Range(1, 1000000));
            sub.add_option("--max-connections", a->max_connections, "connections open at once, a thread each")
                ->capture_default_str()
                ->check(CLI::Range(2, 4096));
            sub.add_option("--max-connections-per-client", a->max_connections_per_client,
                           "connections open at once from one address")
                ->capture_default_str()
                ->check(CLI::Range(1, 4096));
            sub.add_option("--idle-timeout", a->idle_timeout_s, "seconds a silent connection is kept")
                ->capture_default_str()
                ->check(CLI::Range(1, 3600));
            sub.add_option("--request-timeout", a->request_timeout_s,
                           "seconds a client has to send a request's line and headers; after as long, its body "
                           "must average 16 KiB/s (a trickling client is closed)")
                ->capture_default_str()
                ->check(CLI::Range(1, 3600));
            sub.add_option("--mcp-root", a->mcp_roots,
                           "folder /mcp's tools may read reports from (repeatable; default DATA/reports)")
                ->check(CLI::ExistingDirectory);
            sub.add_option("--llm", a->llm,
                           "LLM for questions, PROVIDER:MODEL (else $KEET_LLM; none: no question box)");
            add_queue_flags(sub, *a);
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_serve(ctx, *a); }; });
          }};
}

Command worker_command() {
  return {"worker", "run queued keet serve jobs (same --store and --data-dir as the server)",
          [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<ServeArgs>();
            add_queue_flags(sub, *a);
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_worker(ctx, *a); }; });
          }};
}

}  // namespace keet::app
