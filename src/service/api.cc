#include "service/api.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/json.h"
#include "util/strings.h"

namespace keet::service {

using nlohmann::json;
using Params = std::map<std::string, std::string>;

bool same_secret(std::string_view a, std::string_view b) {
  size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

bool loopback_address(const std::string& host) {
  if (host == "::1" || host == "localhost") return true;
  // 127.0.0.0/8 as an IPv4 literal only: "127.0.0.1.evil.example" is a name anyone can point anywhere.
  return host.rfind("127.", 0) == 0 && host.find_first_not_of("0123456789.") == std::string::npos;
}

bool loopback_host(const std::string& host_header) {
  std::string h = host_header;
  if (!h.empty() && h[0] == '[') {  // [::1]:8080
    auto close = h.find(']');
    h = close == std::string::npos ? h : h.substr(1, close - 1);
  } else if (auto colon = h.rfind(':'); colon != std::string::npos) {
    h = h.substr(0, colon);
  }
  return loopback_address(to_lower(h));
}

namespace {

Response json_reply(int status, const json& body) { return {status, "application/json", {}, json_text(body), {}}; }
Response error_reply(int status, const std::string& message) {
  return json_reply(status, {{"error", valid_utf8(message)}});
}

json job_json(const Job& j, const std::vector<std::string>& formats) {
  json out = {{"id", j.id},
              {"kind", kind_name(j.kind)},
              {"state", state_name(j.state)},
              {"name", valid_utf8(j.name)},
              {"progress", j.progress},
              {"stage", j.stage},
              {"attempts", j.attempts},
              {"created_ms", j.created_at},
              {"started_ms", j.started_at},
              {"finished_ms", j.finished_at},
              {"size_bytes", j.size},
              {"cancel_requested", j.cancel_requested}};
  if (!j.baseline.empty()) out["baseline"] = valid_utf8(j.baseline);
  if (!j.pairs.empty()) {
    json pairs = json::array();
    for (auto [i, k] : j.pairs) pairs.push_back({i, k});
    out["pairs"] = pairs;
  }
  if (!j.error.empty()) out["error"] = valid_utf8(j.error);
  json results = json::array();
  for (const auto& f : formats)
    if (f.find('.') == std::string::npos) results.push_back(f);
  if (j.state == JobState::Done) out["results"] = results;
  return out;
}

// Pattern segments "{name}" match one non-empty segment.
bool match(std::string_view pattern, std::string_view path, Params& params) {
  auto ps = split(pattern, '/'), xs = split(path, '/');
  if (ps.size() != xs.size()) return false;
  for (size_t i = 0; i < ps.size(); ++i) {
    if (!ps[i].empty() && ps[i].front() == '{') {
      if (xs[i].empty()) return false;
      params[std::string(ps[i].substr(1, ps[i].size() - 2))] = std::string(xs[i]);
    } else if (ps[i] != xs[i]) {
      return false;
    }
  }
  return true;
}

// A diff's "pairs": [[before_index, after_index], ...] as keet diff --pair
// takes them (indices of at most 9 digits), or why not.
constexpr size_t kMaxPairs = 1000;
constexpr int64_t kMaxKernelIndex = 999'999'999;

std::optional<std::string> read_pairs(const json& v, std::vector<std::pair<int, int>>& out) {
  const char* shape = "pairs must be a list of [before_index, after_index], e.g. [[0, 1]]";
  if (!v.is_array()) return shape;
  if (v.size() > kMaxPairs) return fmt::format("at most {} pairs", kMaxPairs);
  for (const auto& p : v) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number_integer()) return shape;
    int64_t i = p[0].get<int64_t>(), j = p[1].get<int64_t>();
    if (i < 0 || j < 0 || i > kMaxKernelIndex || j > kMaxKernelIndex)
      return fmt::format("a kernel index is between 0 and {}", kMaxKernelIndex);
    out.emplace_back(static_cast<int>(i), static_cast<int>(j));
  }
  return std::nullopt;
}

// A display name: printable, bounded; never a path.
std::string display_name(std::string_view name, std::string_view fallback) {
  std::string out;
  for (char c : valid_utf8(name))
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) out += c;
  auto slash = out.find_last_of("/\\");
  if (slash != std::string::npos) out = out.substr(slash + 1);
  if (out.size() > 200) out = valid_utf8(out.substr(0, 200));
  return out.empty() ? std::string(fallback) : out;
}

std::string_view content_type_of(std::string_view path) {
  auto ends = [&](std::string_view ext) {
    return path.size() >= ext.size() && path.substr(path.size() - ext.size()) == ext;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

constexpr const char* kUiPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
// keet's HTML report draws with inline SVG and CSS: no script may run in it.
constexpr const char* kReportPolicy =
    "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'";

// The media type of each format the API serves ("gate": the stored gate
// check, JSON), written once.
struct ResultFormat {
  std::string_view name, content_type;
};
constexpr ResultFormat kMediaTypes[] = {{"json", "application/json"},
                                        {"html", "text/html; charset=utf-8"},
                                        {"markdown", "text/markdown; charset=utf-8"},
                                        {"sarif", "application/sarif+json"},
                                        {"gate", "application/json"},
                                        {"junit", "application/xml"}};
// What GET /jobs/{id}/result/{format} serves: the results a job stores.
constexpr std::string_view kResultFormats[] = {"json", "html", "markdown", "sarif", "gate"};
// What POST /jobs/{id}/gate serves: `keet gate --format` names, the first the default.
constexpr std::string_view kGateFormats[] = {"json", "sarif", "markdown", "junit"};

// The format of `list` named `format`, with its media type; null if `list` lacks it.
template <size_t N>
const ResultFormat* served_format(const std::string_view (&list)[N], std::string_view format) {
  if (std::ranges::find(list, format) == std::end(list)) return nullptr;
  auto it = std::ranges::find(kMediaTypes, format, &ResultFormat::name);
  return it == std::end(kMediaTypes) ? nullptr : &*it;
}

template <size_t N>
std::string formats_error(const std::string_view (&list)[N]) {
  std::string names;
  for (auto f : list) names += (names.empty() ? "" : ", ") + std::string(f);
  return "format must be one of " + names;
}

}  // namespace

struct Handlers {
  Api& api;

  int64_t now() const { return api.clock_(); }

  Result<std::optional<Job>> find(const Params& p) { return api.jobs_.get(p.at("id")); }

  // The client is told what failed, not where: the store's URL or file and
  // the data folder are the server's business (the log has them).
  Response store_failed(const Error& e) {
    log("store.error", {{"error", e.message}});
    return error_reply(503, api.without_server_paths(e.message));
  }

  void log(std::string_view event, std::initializer_list<LogField> fields) const {
    log_event(api.opt_.log, now(), event, fields);
  }

  // The store is asked, not assumed: a database that is down makes this 503,
  // with the reason, so a load balancer's health check sees it.
  Response info(const Request&, const Params&) {
    auto reachable = api.jobs_.ping();
    json health = {{"reachable", reachable.has_value()}};
    if (!reachable) health["error"] = valid_utf8(api.without_server_paths(reachable.error().message));
    return json_reply(reachable ? 200 : 503, {{"service", "keet"},
                                              {"version", KEET_VERSION},
                                              {"api", "keet.serve/1"},
                                              {"llm", !api.opt_.llm.empty()},
                                              {"auth", !api.opt_.token.empty()},
                                              {"store", api.jobs_.shared() ? "postgresql" : "sqlite"},
                                              {"store_health", health},
                                              {"max_upload_bytes", api.opt_.max_upload},
                                              {"max_queue", api.opt_.max_queue},
                                              {"workers", api.opt_.workers},
                                              {"job_timeout_s", api.opt_.job_timeout.count() / 1000}});
  }

  // The bytes of an upload: one multipart part (by field name, else the
  // first), or the raw body.
  static std::optional<UploadPart> upload(const Request& req, const std::string& field) {
    for (const auto& p : req.parts)
      if (p.field == field) return p;
    if (field == "report" && !req.parts.empty()) return req.parts.front();
    if (req.parts.empty() && field == "report" && req.body_length() > 0)
      return UploadPart{"report", req.param("name"), req.body, req.body_file, req.body_size};
    return std::nullopt;
  }

  // An upload's bytes into the store: a spooled one is renamed in, never read into memory.
  Result<std::string> keep(const UploadPart& part) {
    return part.file.empty() ? api.blobs_.put(part.data) : api.blobs_.adopt(part.file);
  }

  // A JSON request body; null when it is not JSON, or was too long to be kept in memory.
  static json json_body(const Request& req) {
    if (!req.body_file.empty()) return nullptr;
    return json::parse(req.body, nullptr, false);
  }

  std::optional<Response> queue_full() {
    auto waiting = api.jobs_.waiting();
    if (!waiting) return store_failed(waiting.error());
    if (*waiting < api.opt_.max_queue) return std::nullopt;
    auto r = error_reply(429, fmt::format("the queue is full ({} jobs waiting); retry later", *waiting));
    r.headers.emplace_back("Retry-After", std::to_string(api.opt_.retry_after_s));
    return r;
  }

  // Called with api.uploads_ held when the job's upload was just stored.
  Response accepted(const Job& job) {
    if (auto r = api.jobs_.add(job); !r) return store_failed(r.error());
    if (api.workers_) api.workers_->wake();
    log("job.accepted", {{"job", job.id},
                         {"kind", std::string(kind_name(job.kind))},
                         {"bytes", std::to_string(job.size)},
                         {"name", job.name}});
    auto r = json_reply(202, job_json(job, {}));
    r.headers.emplace_back("Location", "/api/v1/jobs/" + job.id);
    return r;
  }

  Job new_job(JobKind kind, std::string name) {
    Job j;
    j.id = random_id();
    j.kind = kind;
    j.name = std::move(name);
    j.created_at = now();
    return j;
  }

  Response submit(const Request& req, const Params&) {
    auto part = upload(req, "report");
    if (!part || part->length() == 0)
      return error_reply(400, "no report in the request (send it as the body or a multipart field 'report')");
    if (part->length() > api.opt_.max_upload)
      return error_reply(413, fmt::format("the report is larger than the limit of {} bytes", api.opt_.max_upload));
    std::lock_guard lock(api.uploads_);  // the queue's length is read and grown in one step
    if (auto full = queue_full()) return *full;
    auto address = keep(*part);
    if (!address) return store_failed(address.error());
    Job job = new_job(upload_kind(api.blobs_.path(*address)), display_name(part->filename, "report"));
    job.report = *address;
    job.size = static_cast<int64_t>(part->length());
    job.baseline = display_name(req.param("baseline"), "");
    return accepted(job);
  }

  Response list(const Request& req, const Params&) {
    size_t limit = 100;
    if (auto n = parse_number(req.param("limit")); n && *n >= 1 && *n <= 1000) limit = static_cast<size_t>(*n);
    auto jobs = api.jobs_.list(limit);
    if (!jobs) return store_failed(jobs.error());
    json items = json::array();
    for (const auto& j : *jobs) {
      auto formats = j.state == JobState::Done ? api.jobs_.formats(j.id) : Result<std::vector<std::string>>{};
      items.push_back(job_json(j, formats ? *formats : std::vector<std::string>{}));
    }
    return json_reply(200, {{"jobs", items}});
  }

  Response status(const Request&, const Params& p) {
    auto job = find(p);
    if (!job) return store_failed(job.error());
    if (!*job) return error_reply(404, "no such job");
    auto formats = api.jobs_.formats((*job)->id);
    return json_reply(200, job_json(**job, formats ? *formats : std::vector<std::string>{}));
  }

  Response result(const Request& req, const Params& p) {
    std::string format = req.param("format").empty() ? "json" : req.param("format");
    const ResultFormat* kind = served_format(kResultFormats, format);
    if (!kind) return error_reply(400, formats_error(kResultFormats));
    auto job = find(p);
    if (!job) return store_failed(job.error());
    if (!*job) return error_reply(404, "no such job");
    if ((*job)->state != JobState::Done)
      return error_reply(409, fmt::format("the job is {}{}", state_name((*job)->state),
                                          (*job)->error.empty() ? "" : ": " + (*job)->error));
    auto body = api.jobs_.result((*job)->id, format);
    if (!body) return store_failed(body.error());
    if (!*body) {
      auto why = api.jobs_.result((*job)->id, format + ".error");
      if (why && *why) return error_reply(404, "no " + format + " result: " + **why);
      return error_reply(404, "no " + format + " result for this job (sarif and gate need ?baseline=TAG at upload)");
    }
    Response r{200, std::string(kind->content_type), {}, std::move(**body), {}};
    if (format == "html") r.headers.emplace_back("Content-Security-Policy", kReportPolicy);
    return r;
  }

  Response cancel(const Request&, const Params& p) {
    auto ok = api.jobs_.cancel(p.at("id"), now());
    if (!ok) return store_failed(ok.error());
    if (!*ok) return error_reply(409, "no such job, or it has already ended");
    return status({}, p);
  }

  // A deleted job's upload goes too once no other job (a diff, the same bytes
  // uploaded again) uses it.
  Response remove(const Request&, const Params& p) {
    std::lock_guard lock(api.uploads_);
    auto job = find(p);
    if (!job) return store_failed(job.error());
    if (!*job) return error_reply(404, "no such job");
    (void)api.jobs_.cancel(p.at("id"), now());  // a running job's worker stops
    auto ok = api.jobs_.remove(p.at("id"));
    if (!ok) return store_failed(ok.error());
    if (!*ok) return error_reply(404, "no such job");
    int freed = 0;
    for (const auto& address : {(*job)->report, (*job)->report2}) {
      if (address.empty()) continue;
      if (auto n = api.jobs_.uses(address); n && *n == 0 && api.blobs_.has(address)) {
        api.blobs_.remove(address);
        std::error_code ec;  // an Nsight Systems report's export goes with it
        std::filesystem::remove(nsys_export_path(api.opt_.data_dir, address), ec);
        ++freed;
      }
    }
    log("job.deleted", {{"job", p.at("id")}, {"uploads_removed", std::to_string(freed)}});
    return {204, "application/json", {}, "", {}};
  }

  // Server-sent events: the job's status whenever it changes, until it ends.
  Response events(const Request&, const Params& p) {
    auto job = find(p);
    if (!job) return store_failed(job.error());
    if (!*job) return error_reply(404, "no such job");
    struct State {
      std::string last;
      bool over = false;
      std::chrono::steady_clock::time_point quiet = std::chrono::steady_clock::now();
    };
    auto st = std::make_shared<State>();
    std::string id = p.at("id");
    Response r{200, "text/event-stream", {{"X-Accel-Buffering", "no"}}, "", {}};
    JobStore* jobs = &api.jobs_;  // the stream outlives this handler; the store outlives the server
    r.stream = [jobs, st, id](const StreamWrite& write) {
      if (st->over) return false;
      // Up to 2 s per call, then a keep-alive comment: the server checks
      // between calls whether it is stopping or the client has gone.
      for (int i = 0; i < 8; ++i) {
        auto j = jobs->get(id);
        if (!j || !*j) {
          st->over = true;
          return write("event: gone\ndata: {}\n\n") && false;
        }
        auto formats = jobs->formats(id);
        std::string text = json_text(job_json(**j, formats ? *formats : std::vector<std::string>{}));
        if (text != st->last) {
          st->last = text;
          st->over = terminal((*j)->state);
          return write("event: status\ndata: " + text + "\n\n");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
      return write(": still running\n\n");
    };
    return r;
  }

  std::optional<Job> finished_job(const Params& p, Response& error) {
    auto job = find(p);
    if (!job) return error = store_failed(job.error()), std::nullopt;
    if (!*job) return error = error_reply(404, "no such job"), std::nullopt;
    if ((*job)->kind != JobKind::Analyze) return error = error_reply(400, "not an analysis job"), std::nullopt;
    if (!api.blobs_.has((*job)->report))
      return error = error_reply(410, "the job's report is no longer in the data folder"), std::nullopt;
    return std::move(**job);
  }

  // Runs a quick keet command on a job's report (in a scratch folder where it
  // is called "report"); exit codes become statuses.
  Response run_on(const Job& job, std::vector<std::string> args, std::string_view content_type,
                  std::chrono::seconds limit, bool exit1_ok = false) {
    std::string work = api.opt_.data_dir + "/work/q-" + random_id();
    std::error_code ec;
    std::filesystem::create_directories(work, ec);
    std::filesystem::create_symlink(api.blobs_.path(job.report), work + "/report", ec);
    auto o = api.runner_.run(args, work, limit, {});
    std::filesystem::remove_all(work, ec);
    if (!o) return error_reply(503, o.error().message);
    if (o->timed_out) return error_reply(504, fmt::format("no answer within {} s", limit.count()));
    if (o->exit_code == 0 || (exit1_ok && o->exit_code == 1)) {
      Response r{200, std::string(content_type), {}, valid_utf8(o->out), {}};
      if (exit1_ok) r.headers.emplace_back("X-Keet-Gate", o->exit_code == 0 ? "passed" : "failed");
      return r;
    }
    int status = o->exit_code == 2 ? 400 : o->exit_code == 1 ? 422 : 502;
    return error_reply(status, first_error_line(o->err));
  }

  void add_db(std::vector<std::string>& args) {
    if (!api.opt_.history_db.empty()) args.insert(args.end(), {"--db", api.opt_.history_db});
  }

  Response ask(const Request& req, const Params& p) {
    if (api.opt_.llm.empty())
      return error_reply(409, "no LLM is configured (start keet serve with --llm PROVIDER:MODEL)");
    auto body = json_body(req);
    if (!body.is_object() || !body.contains("question") || !body["question"].is_string())
      return error_reply(400, "send {\"question\": \"...\"}");
    std::string question = body["question"];
    if (question.empty() || question.size() > 4000) return error_reply(400, "the question must be 1 to 4000 bytes");
    Response error;
    auto job = finished_job(p, error);
    if (!job) return error;
    std::vector<std::string> args{"ask", "report", question, "--format", "json", "--llm", api.opt_.llm};
    if (body.contains("kernel") && body["kernel"].is_string())
      args.insert(args.end(), {"-k", body["kernel"].get<std::string>()});
    return run_on(*job, args, "application/json", std::chrono::seconds(300));
  }

  Response gate(const Request& req, const Params& p) {
    std::string format = req.param("format").empty() ? std::string(kGateFormats[0]) : req.param("format");
    const ResultFormat* served = served_format(kGateFormats, format);
    if (!served) return error_reply(400, formats_error(kGateFormats));
    Response error;
    auto job = finished_job(p, error);
    if (!job) return error;
    std::string baseline = req.param("baseline").empty() ? "latest" : req.param("baseline");
    std::vector<std::string> args{"gate", "report", "--baseline", baseline, "--format", format};
    if (!req.param("max_slowdown").empty()) args.insert(args.end(), {"--max-slowdown", req.param("max_slowdown")});
    add_db(args);
    return run_on(*job, args, served->content_type, std::chrono::seconds(120), true);
  }

  Response record(const Request& req, const Params& p) {
    Response error;
    auto job = finished_job(p, error);
    if (!job) return error;
    std::vector<std::string> args{"record", "report"};
    if (!req.param("tag").empty()) args.insert(args.end(), {"--tag", req.param("tag")});
    if (!req.param("commit").empty()) args.insert(args.end(), {"--commit", req.param("commit")});
    add_db(args);
    auto r = run_on(*job, args, "text/plain", std::chrono::seconds(120));
    if (r.status != 200) return r;
    // "recorded run #3: ... into sqlite:/srv/...": the store's location stays on the server.
    std::string message(trim(r.body));
    message = message.substr(0, message.find(" into "));
    return json_reply(201, {{"recorded", true}, {"message", message}});
  }

  Response history(const Request& req, const Params&) {
    std::vector<std::string> args{"history", "--format", "json"};
    if (!req.param("tag").empty()) args.insert(args.end(), {"--tag", req.param("tag")});
    if (!req.param("kernel").empty()) args.insert(args.end(), {"-k", req.param("kernel")});
    args.insert(args.end(), {"--limit", req.param("limit").empty() ? "50" : req.param("limit")});
    add_db(args);
    auto o = api.runner_.run(args, "", std::chrono::seconds(60), {});
    if (!o) return error_reply(503, o.error().message);
    if (o->exit_code != 0) return error_reply(o->exit_code == 2 ? 400 : 502, first_error_line(o->err));
    return {200, "application/json", {}, valid_utf8(o->out), {}};
  }

  // Two reports, by the jobs they were uploaded with or as parts before/after;
  // optional pairs (keet diff --pair) as a JSON member or a multipart field.
  Response diff(const Request& req, const Params&) {
    Job job = new_job(JobKind::Diff, "");
    if (!req.parts.empty()) {
      auto before = upload(req, "before"), after = upload(req, "after");
      if (!before || !after || before->length() == 0 || after->length() == 0)
        return error_reply(400, "send multipart fields 'before' and 'after'");
      if (auto pairs = upload(req, "pairs"))
        if (auto bad = read_pairs(json::parse(pairs->data, nullptr, false), job.pairs)) return error_reply(400, *bad);
      if (before->length() + after->length() > api.opt_.max_upload)
        return error_reply(413, "the reports are larger than the upload limit");
      std::lock_guard lock(api.uploads_);
      if (auto full = queue_full()) return *full;
      auto a = keep(*before), b = keep(*after);
      if (!a || !b) return store_failed(!a ? a.error() : b.error());
      job.report = *a, job.report2 = *b;
      job.name = display_name(before->filename, "before") + " vs " + display_name(after->filename, "after");
      job.size = static_cast<int64_t>(before->length() + after->length());
      return accepted(job);
    }
    auto body = json_body(req);
    if (!body.is_object() || !body.contains("before") || !body.contains("after") || !body["before"].is_string() ||
        !body["after"].is_string())
      return error_reply(400, "send {\"before\": JOB_ID, \"after\": JOB_ID} or multipart fields 'before' and 'after'");
    if (body.contains("pairs"))
      if (auto bad = read_pairs(body["pairs"], job.pairs)) return error_reply(400, *bad);
    auto a = api.jobs_.get(body["before"].get<std::string>()), b = api.jobs_.get(body["after"].get<std::string>());
    if (!a || !b) return store_failed(!a ? a.error() : b.error());
    if (!*a || !*b) return error_reply(404, "no such job: " + std::string(!*a ? "before" : "after"));
    if ((*a)->kind != JobKind::Analyze || (*b)->kind != JobKind::Analyze)
      return error_reply(400, "before and after must be analysis jobs");
    std::lock_guard lock(api.uploads_);
    job.report = (*a)->report, job.report2 = (*b)->report;
    if (auto same = same_comparison(job)) return *same;
    if (auto full = queue_full()) return *full;
    job.name = (*a)->name + " vs " + (*b)->name;
    job.size = (*a)->size + (*b)->size;
    return accepted(job);
  }

  // A comparison is its two reports and its pairs: asked again (the web UI's
  // #/compare link opened anew, Back and Forward), the diff job that is
  // queued, running or done answers (200), so a link queues it at most once.
  // Only the newest jobs are looked at: past them a new job is made, which
  // costs a diff, never a wrong answer.
  std::optional<Response> same_comparison(const Job& wanted) {
    auto recent = api.jobs_.list(200);
    if (!recent) return std::nullopt;
    for (const auto& j : *recent) {
      bool alive = j.state == JobState::Queued || j.state == JobState::Running || j.state == JobState::Done;
      if (j.kind != JobKind::Diff || !alive || j.report != wanted.report || j.report2 != wanted.report2 ||
          j.pairs != wanted.pairs)
        continue;
      auto formats = api.jobs_.formats(j.id);
      return json_reply(200, job_json(j, formats ? *formats : std::vector<std::string>{}));
    }
    return std::nullopt;
  }
};

namespace {

using Method = Response (Handlers::*)(const Request&, const Params&);
struct RouteEntry {
  RouteInfo info;
  Method method;
};

const std::vector<RouteEntry>& route_table() {
  static const std::vector<RouteEntry> table = {
      {{"GET", "/api/v1/info"}, &Handlers::info},
      {{"GET", "/api/v1/jobs"}, &Handlers::list},
      {{"POST", "/api/v1/jobs"}, &Handlers::submit},
      {{"GET", "/api/v1/jobs/{id}"}, &Handlers::status},
      {{"DELETE", "/api/v1/jobs/{id}"}, &Handlers::remove},
      {{"POST", "/api/v1/jobs/{id}/cancel"}, &Handlers::cancel},
      {{"GET", "/api/v1/jobs/{id}/result"}, &Handlers::result},
      {{"GET", "/api/v1/jobs/{id}/events"}, &Handlers::events},
      {{"POST", "/api/v1/jobs/{id}/ask"}, &Handlers::ask},
      {{"POST", "/api/v1/jobs/{id}/gate"}, &Handlers::gate},
      {{"POST", "/api/v1/jobs/{id}/record"}, &Handlers::record},
      {{"POST", "/api/v1/diff"}, &Handlers::diff},
      {{"GET", "/api/v1/history"}, &Handlers::history},
  };
  return table;
}

}  // namespace

const std::vector<RouteInfo>& routes() {
  static const std::vector<RouteInfo> out = [] {
    std::vector<RouteInfo> v;
    for (const auto& e : route_table()) v.push_back(e.info);
    return v;
  }();
  return out;
}

Api::Api(JobStore& jobs, BlobStore& blobs, KeetRunner& runner, Workers* workers, ServiceOptions options, Clock clock)
    : jobs_(jobs),
      blobs_(blobs),
      runner_(runner),
      workers_(workers),
      opt_(std::move(options)),
      clock_(std::move(clock)) {}

namespace {

bool is_ui_path(const std::string& path) { return path == "/" || path.rfind("/ui/", 0) == 0; }

std::optional<Response> static_file(const Request& req) {
  if (req.method != "GET" || !is_ui_path(req.path)) return std::nullopt;
  std::string_view want = req.path == "/" ? "index.html" : std::string_view(req.path).substr(4);
  for (const auto& f : web_files())
    if (f.path == want) {
      Response r{200,
                 std::string(content_type_of(want)),
                 {{"Content-Security-Policy", kUiPolicy}},
                 std::string(f.content),
                 {}};
      return r;
    }
  return error_reply(404, "no such file");
}

}  // namespace

// Requests are refused before any route runs: a foreign Origin (unless
// configured for CORS), a Host that is not loopback while listening on
// loopback only (DNS rebinding), a missing or wrong bearer token.
std::optional<Response> Api::refuse(const Request& req) const {
  std::string origin = req.header("origin");
  bool allowed_origin =
      std::find(opt_.allowed_origins.begin(), opt_.allowed_origins.end(), origin) != opt_.allowed_origins.end();
  if (opt_.loopback && !loopback_host(req.header("host")))
    return error_reply(403, "this server answers to its loopback address only");
  if (!origin.empty() && !allowed_origin && origin != "http://" + req.header("host"))
    return error_reply(403, "cross-origin requests are not allowed (see keet serve --allow-origin)");
  if (opt_.token.empty() || (req.method == "GET" && is_ui_path(req.path))) return std::nullopt;
  std::string auth = req.header("authorization");
  std::string given = starts_with_ci(auth, "bearer ") ? auth.substr(7) : "";
  if (same_secret(given, opt_.token)) return std::nullopt;
  auto r = error_reply(401, "a bearer token is required (Authorization: Bearer TOKEN)");
  r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

void Api::add_common_headers(const Request& req, Response& res) const {
  res.headers.emplace_back("X-Content-Type-Options", "nosniff");
  res.headers.emplace_back("Referrer-Policy", "no-referrer");
  res.headers.emplace_back("Cache-Control", "no-store");
  std::string origin = req.header("origin");
  if (!origin.empty() &&
      std::find(opt_.allowed_origins.begin(), opt_.allowed_origins.end(), origin) != opt_.allowed_origins.end()) {
    res.headers.emplace_back("Access-Control-Allow-Origin", origin);
    res.headers.emplace_back("Vary", "Origin");
  }
}

Response Api::route(const Request& req) {
  if (auto refused = refuse(req)) return *refused;
  if (req.method == "OPTIONS" && !opt_.allowed_origins.empty())
    return {204,
            "text/plain",
            {{"Access-Control-Allow-Methods", "GET, POST, DELETE"},
             {"Access-Control-Allow-Headers", "Authorization, Content-Type, Mcp-Session-Id, MCP-Protocol-Version"}},
            "",
            {}};
  if (req.path == "/mcp") {
    if (!mcp_) return error_reply(404, "MCP is not available on this server");
    return mcp_(req);
  }
  if (auto file = static_file(req)) return *file;
  Handlers h{*this};
  bool path_known = false;
  for (const auto& e : route_table()) {
    Params params;
    if (!match(e.info.pattern, req.path, params)) continue;
    path_known = true;
    if (e.info.method == req.method) return (h.*e.method)(req, params);
  }
  return path_known ? error_reply(405, "method not allowed") : error_reply(404, "no such endpoint");
}

std::string Api::without_server_paths(std::string message) const {
  // libpq names the server's host and port in its own words ("connection to
  // server at \"db\" (10.0.0.5), port 5432 failed: ..."), which no pattern of
  // ours can be trusted to catch: a PostgreSQL store's failures reach clients
  // as one sentence, and the log keeps libpq's.
  if (jobs_.shared()) return "the job store (PostgreSQL) failed; the server's log has the reason";
  for (const std::string& where : {jobs_.describe(), opt_.data_dir})
    if (!where.empty())
      for (size_t at = message.find(where); at != std::string::npos; at = message.find(where, at))
        message.replace(at, where.size(), where == opt_.data_dir ? "the data folder" : "the job store");
  return message;
}

std::optional<Response> Api::admit(const Request& headers_only) const {
  auto refused = refuse(headers_only);
  if (refused) add_common_headers(headers_only, *refused);
  return refused;
}

Response Api::handle(const Request& req) {
  Response res = route(req);
  add_common_headers(req, res);
  return res;
}

}  // namespace keet::service
