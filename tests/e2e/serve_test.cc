// keet serve end to end: the real binary on a loopback port, driven over HTTP
// by cpp-httplib's client. Reports come from tests/support/report_writer, so
// nothing here needs ../shared.
#include <httplib.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/fake_llm_server.h"
#include "support/load_fault.h"
#include "support/report_writer.h"
#include "support/serve_process.h"
#include "support/testing.h"
#include "support/timeline_writer.h"

namespace keet::testing {
namespace {

using nlohmann::json;

std::string scenario_report(double duration_ns, const std::string& kernel = "strided_copy") {
  return one_kernel_report(kernel, 8192, 256, scenario_metrics(duration_ns));
}

std::string fresh_dir(const std::string& name) {
  auto dir = temp_path("serve_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

class Serve : public ::testing::Test {
 protected:
  void start(std::vector<std::string> extra = {}, std::vector<std::string> env = {}) {
    dir_ = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::vector<std::string> args{"--port", "0", "--data-dir", dir_ + "/data", "--db", dir_ + "/history.sqlite"};
    if (std::find(extra.begin(), extra.end(), "--workers") == extra.end()) args.insert(args.end(), {"--workers", "2"});
    args.insert(args.end(), extra.begin(), extra.end());
    server_ = std::make_unique<KeetProcess>("serve", args, env);
    ASSERT_TRUE(server_->ok()) << server_->log();
    client_ = std::make_unique<httplib::Client>(server_->url());
    client_->set_read_timeout(60, 0);
  }
  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->stop(), 0) << server_->log();
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  json upload(const std::string& bytes, const std::string& query = "name=kernel.ncu-rep") {
    auto res = client_->Post(("/api/v1/jobs?" + query).c_str(), bytes, "application/octet-stream");
    EXPECT_TRUE(res);
    if (!res) return {};
    EXPECT_EQ(res->status, 202) << res->body;
    return json::parse(res->body, nullptr, false);
  }

  json wait_for(const std::string& id) {
    json job;
    for (int i = 0; i < 600; ++i) {
      auto res = client_->Get(("/api/v1/jobs/" + id).c_str());
      if (res && res->status == 200) {
        job = json::parse(res->body);
        if (job["state"] != "queued" && job["state"] != "running") return job;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "job " << id << " did not end: " << job.dump();
    return job;
  }

  httplib::Result result(const std::string& id, const std::string& format) {
    return client_->Get(("/api/v1/jobs/" + id + "/result?format=" + format).c_str());
  }

  std::string dir_;
  std::unique_ptr<KeetProcess> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(Serve, AnUploadedReportIsAnalysedIntoEveryFormat) {
  ASSERT_NO_FATAL_FAILURE(start());
  auto job = upload(scenario_report(120000));
  ASSERT_EQ(job["state"], "queued");
  std::string id = job["id"];
  auto done = wait_for(id);
  ASSERT_EQ(done["state"], "done") << done.dump();
  EXPECT_EQ(done["progress"], 1.0);
  EXPECT_EQ(done["attempts"], 1);
  EXPECT_EQ(done["results"], json::array({"html", "json", "markdown"}));
  auto analysis = result(id, "json");
  ASSERT_TRUE(analysis);
  ASSERT_EQ(analysis->status, 200);
  EXPECT_EQ(analysis->get_header_value("Content-Type"), "application/json");
  auto doc = json::parse(analysis->body);
  EXPECT_EQ(doc["schema"], "keet.analysis/1");
  ASSERT_EQ(doc["kernels"].size(), 1u);
  EXPECT_NE(doc["kernels"][0]["demangled"].get<std::string>().find("strided_copy"), std::string::npos)
      << doc["kernels"][0].dump();
  EXPECT_EQ(doc["kernels"][0]["bottleneck"]["class"], "memory");
  EXPECT_EQ(done["kind"], "analyze");
  EXPECT_EQ(doc["report"]["path"], "kernel.ncu-rep") << "the upload's name, never a server path";
  EXPECT_EQ(analysis->body.find(dir_), std::string::npos);
  auto html = result(id, "html");
  ASSERT_TRUE(html);
  EXPECT_NE(html->body.find("<svg"), std::string::npos) << "the HTML report's charts";
  EXPECT_NE(html->get_header_value("Content-Security-Policy").find("sandbox"), std::string::npos);
  auto md = result(id, "markdown");
  ASSERT_TRUE(md);
  EXPECT_NE(md->body.find("strided_copy"), std::string::npos);
  EXPECT_EQ(result(id, "sarif")->status, 404) << "SARIF needs a baseline";
  // The same bytes give the same answer as the command line.
  std::string cli_dir = dir_ + "/cli";
  std::filesystem::create_directories(cli_dir);
  { std::ofstream(cli_dir + "/report", std::ios::binary) << scenario_report(120000); }
  auto cli = run_command("cd " + shell_quote(cli_dir) + " && " + keet_binary() +
                         " analyze report --report-name=kernel.ncu-rep --format markdown");
  EXPECT_EQ(cli.rc, 0);
  EXPECT_EQ(cli.out, md->body);
}

// The upload's name is text in the results, whatever it holds: a name that
// looks like a flag stays a value, markup is escaped.
TEST_F(Serve, AHostileUploadNameIsOnlyText) {
  ASSERT_NO_FATAL_FAILURE(start());
  auto job = upload(scenario_report(120000), "name=--help%20%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E.ncu-rep");
  auto done = wait_for(job["id"]);
  ASSERT_EQ(done["state"], "done") << done.dump();
  const std::string name = "--help <img src=x onerror=alert(1)>.ncu-rep";
  EXPECT_EQ(done["name"], name);
  EXPECT_EQ(json::parse(result(job["id"], "json")->body)["report"]["path"], name);
  auto html = result(job["id"], "html")->body;
  EXPECT_NE(html.find("--help &lt;img src=x onerror=alert(1)&gt;.ncu-rep"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
}

// An Nsight Systems export is a whole run: its job runs keet timeline, and
// the HTML result draws the run (the web UI shows it in its report frame).
TEST_F(Serve, AnUploadedTimelineIsDiagnosedAsARun) {
  ASSERT_NO_FATAL_FAILURE(start());
  constexpr int64_t kMs = 1'000'000;
  TimelineWriter w;
  w.kernel({"a(float *)", "a", 1 * kMs, 31 * kMs});
  w.kernel({"b(float *)", "b", 631 * kMs, 661 * kMs});
  std::string path = dir_ + "/run.sqlite";
  w.write(path);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto job = upload(bytes, "name=run.sqlite");
  auto done = wait_for(job["id"]);
  ASSERT_EQ(done["state"], "done") << done.dump();
  EXPECT_EQ(done["results"], json::array({"html", "json"}));
  auto doc = json::parse(result(job["id"], "json")->body);
  EXPECT_EQ(doc["schema"], "keet.timeline/1");
  EXPECT_EQ(done["kind"], "timeline") << "told from the upload's first bytes";
  EXPECT_EQ(doc["timeline"], "run.sqlite") << "the upload's name, never a server path";
  ASSERT_FALSE(doc["verdicts"].empty());
  EXPECT_EQ(doc["verdicts"][0]["id"], "gpu-gaps");
  auto html = result(job["id"], "html")->body;
  EXPECT_NE(html.find(">device 0 kernels<"), std::string::npos) << "the picture of the run";
  EXPECT_NE(html.find("Verdicts for the run"), std::string::npos);
}

// The first bytes of an .nsys-rep written by nsys 2023.4.4 (as in
// ../shared/fixtures/nsys), then bytes only nsys would read: the tests'
// stand-in nsys never reads them, and the server must not either.
std::string nsys_report_bytes(const std::string& tail = std::string(64, 'x')) {
  return "NVIDIA Tegra Profiler Report 2023@4@4@54-3332\n\x0b" + tail;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  return names;
}

// A stand-in nsys: `nsys export --type sqlite --force-overwrite true -o OUT
// REPORT` copies an export the test wrote to OUT and notes each call in
// `calls`; a report holding "refuse" is refused as an nsys older than the
// report would (a message, status 4, no export).
std::string write_stand_in_nsys(const std::string& dir) {
  constexpr int64_t kMs = 1'000'000;
  TimelineWriter w;
  w.kernel({"a(float *)", "a", 1 * kMs, 31 * kMs});
  w.kernel({"b(float *)", "b", 631 * kMs, 661 * kMs});
  w.write(dir + "/made.sqlite");
  std::string nsys = dir + "/nsys";
  write_script(nsys, "#!/bin/sh\necho \"$*\" >> " + shell_quote(dir + "/calls") +
                         "\nif grep -q refuse \"$8\"; then echo 'nsys: cannot export this report' >&2; exit 4; fi\n"
                         "cp " +
                         shell_quote(dir + "/made.sqlite") + " \"$7\"\n");
  return nsys;
}

size_t lines_in(const std::string& path) {
  auto text = read_file(path);
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// An uploaded .nsys-rep is exported by the nsys given with --nsys, once: the
// html result and a second upload of the same bytes read the export kept by
// the upload's address, which goes when the last job using the upload does.
TEST_F(Serve, AnUploadedNsysReportIsExportedByTheServersNsys) {
  std::string tools = fresh_dir("stand_in_nsys");
  std::string nsys = write_stand_in_nsys(tools);
  ASSERT_NO_FATAL_FAILURE(start({"--nsys", nsys}));
  EXPECT_NE(server_->log().find("keet serve: nsys " + nsys + " exports uploaded .nsys-rep/.qdrep reports"),
            std::string::npos)
      << server_->log();
  auto job = upload(nsys_report_bytes(), "name=run.nsys-rep");
  auto done = wait_for(job["id"]);
  ASSERT_EQ(done["state"], "done") << done.dump() << server_->log();
  EXPECT_EQ(done["results"], json::array({"html", "json"}));
  auto body = result(job["id"], "json")->body;
  auto doc = json::parse(body);
  EXPECT_EQ(doc["schema"], "keet.timeline/1");
  EXPECT_EQ(doc["timeline"], "run.nsys-rep") << "the upload's name, never a server path";
  ASSERT_EQ(doc["kernels"].size(), 2u) << body;
  EXPECT_EQ(doc["verdicts"][0]["id"], "gpu-gaps");
  EXPECT_EQ(body.find(dir_), std::string::npos);
  EXPECT_NE(result(job["id"], "html")->body.find(">device 0 kernels<"), std::string::npos);
  EXPECT_EQ(lines_in(tools + "/calls"), 1u) << "the html step read the json step's export";
  std::string exports = dir_ + "/data/nsys-exports";
  ASSERT_EQ(files_in(exports).size(), 1u);
  EXPECT_TRUE(files_in(exports)[0].ends_with(".sqlite"));

  auto again = upload(nsys_report_bytes(), "name=again.nsys-rep");
  EXPECT_EQ(wait_for(again["id"])["state"], "done");
  EXPECT_EQ(lines_in(tools + "/calls"), 1u) << "the same bytes again: the kept export";
  EXPECT_EQ(client_->Delete(("/api/v1/jobs/" + job["id"].get<std::string>()).c_str())->status, 204);
  EXPECT_EQ(files_in(exports).size(), 1u) << "the second job still uses the upload";
  EXPECT_EQ(client_->Delete(("/api/v1/jobs/" + again["id"].get<std::string>()).c_str())->status, 204);
  EXPECT_TRUE(files_in(exports).empty()) << "the export goes with the upload";

  // nsys refusing the report fails the job in words for the browser; nsys's
  // own reason is in the server's log, without the server's paths.
  auto refused = wait_for(upload(nsys_report_bytes("refuse"), "name=old.nsys-rep")["id"]);
  ASSERT_EQ(refused["state"], "failed") << refused.dump();
  std::string error = refused["error"];
  EXPECT_NE(error.find("this server's nsys could not export this Nsight Systems report written by Nsight Systems "
                       "2023.4.4.54"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("upload its SQLite export instead, made where Nsight Systems 2023.4.4.54 or later is "
                       "installed with `nsys export --type sqlite --output old.sqlite old.nsys-rep`"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find("report:"), std::string::npos) << "not the job's file name: " << error;
  EXPECT_EQ(error.find(tools), std::string::npos) << error;
  auto log = server_->log();
  auto line = log.find("event=job.export_failed");
  ASSERT_NE(line, std::string::npos) << log;
  line = log.rfind('\n', line) + 1;
  std::string logged = log.substr(line, log.find('\n', line) - line);
  EXPECT_NE(logged.find("exited with status 4"), std::string::npos) << logged;
  EXPECT_NE(logged.find("nsys: cannot export this report"), std::string::npos) << logged;
  EXPECT_EQ(logged.find(tools), std::string::npos) << "no server path in the log: " << logged;
  std::filesystem::remove_all(tools);
}

// With no nsys the job fails at once, in words a browser user can act on:
// what to upload instead and how to make it, or how to start the server.
// The error is on the job and on its row in the job list (the web UI shows
// it under the report's name).
TEST_F(Serve, WithoutNsysAnUploadedNsysReportAsksForItsExport) {
  ASSERT_NO_FATAL_FAILURE(start({}, {"NSYS=", "PATH=/nonexistent"}));
  if (server_->log().find("keet serve: no nsys found") == std::string::npos)
    GTEST_SKIP() << "this machine has an nsys in /usr/local/cuda*/bin or /opt/nvidia, which keet serve finds "
                    "whatever its environment: "
                 << server_->log();
  auto job = upload(nsys_report_bytes(), "name=run.nsys-rep");
  auto failed = wait_for(job["id"]);
  ASSERT_EQ(failed["state"], "failed") << failed.dump();
  std::string error = failed["error"];
  EXPECT_EQ(error,
            "this upload is an Nsight Systems report written by Nsight Systems 2023.4.4.54, and this server has no "
            "nsys to read it with: upload its SQLite export instead, made where Nsight Systems is installed with "
            "`nsys export --type sqlite --output run.sqlite run.nsys-rep`, or restart keet serve with --nsys PATH");
  auto list = json::parse(client_->Get("/api/v1/jobs")->body);
  ASSERT_EQ(list["jobs"].size(), 1u);
  EXPECT_EQ(list["jobs"][0]["error"], error) << "the row the web UI draws";
  // A name a shell would need quoted is not copied into the command.
  auto odd = wait_for(upload(nsys_report_bytes(), "name=my%20run%3B.qdrep")["id"]);
  EXPECT_NE(odd["error"].get<std::string>().find("--output run.sqlite run.nsys-rep`"), std::string::npos) << odd.dump();
  // An .nsys-rep is told by its bytes, not its name; an SQLite export still reads.
  auto renamed = wait_for(upload(nsys_report_bytes(), "name=trace.bin")["id"]);
  EXPECT_EQ(renamed["error"], error);
  TimelineWriter w;
  w.kernel({"k(int)", "k", 0, 50});
  w.write(dir_ + "/run.sqlite");
  EXPECT_EQ(wait_for(upload(read_file(dir_ + "/run.sqlite"), "name=run.sqlite")["id"])["state"], "done");
}

// An --nsys that is not an executable stops the start (exit 3): the operator
// asked for that nsys, and a server that silently lacks it would fail every
// .nsys-rep upload.
TEST(ServeNsys, AnNsysFlagThatIsNoExecutableStopsTheStart) {
  std::string dir = fresh_dir("bad_nsys");
  auto r = run_keet("serve --port 0 --workers 0 --data-dir " + shell_quote(dir) + " --nsys /nonexistent/nsys");
  EXPECT_EQ(r.rc, 3) << r.err;
  EXPECT_EQ(r.err, "keet: --nsys /nonexistent/nsys: not an executable nsys\n");
  auto w = run_keet("worker --workers 0 --data-dir " + shell_quote(dir) + " --nsys /nonexistent/nsys");
  EXPECT_EQ(w.rc, 3) << w.err;
  std::filesystem::remove_all(dir);
}

TEST_F(Serve, MultipartUploadAndServerSentEvents) {
  ASSERT_NO_FATAL_FAILURE(start());
  httplib::MultipartFormDataItems items = {
      {"report", scenario_report(80000), "my kernel.ncu-rep", "application/octet-stream"}};
  auto res = client_->Post("/api/v1/jobs", items);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 202) << res->body;
  auto job = json::parse(res->body);
  EXPECT_EQ(job["name"], "my kernel.ncu-rep");
  std::string stream;
  auto events = client_->Get(("/api/v1/jobs/" + job["id"].get<std::string>() + "/events").c_str(),
                             [&](const char* data, size_t n) {
                               stream.append(data, n);
                               return true;
                             });
  ASSERT_TRUE(events);
  EXPECT_EQ(events->get_header_value("Content-Type"), "text/event-stream");
  auto last = stream.rfind("data: ");
  ASSERT_NE(last, std::string::npos) << stream;
  auto final_state = json::parse(stream.substr(last + 6, stream.find('\n', last) - last - 6));
  EXPECT_EQ(final_state["state"], "done") << "the stream ends when the job does: " << stream;
  EXPECT_NE(stream.find("event: status"), std::string::npos);
}

TEST_F(Serve, AMalformedReportFailsItsJobWithTheReadersErrorAndTheServerGoesOn) {
  ASSERT_NO_FATAL_FAILURE(start());
  auto job = upload(std::string(4096, 'x'));
  auto failed = wait_for(job["id"]);
  ASSERT_EQ(failed["state"], "failed");
  std::string error = failed["error"];
  EXPECT_FALSE(error.empty());
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_EQ(error.rfind("report", 0), 0u) << "names the report, not a server path: " << error;
  std::filesystem::create_directories(dir_ + "/cli");
  { std::ofstream(dir_ + "/cli/report", std::ios::binary) << std::string(4096, 'x'); }
  auto cli = run_command("cd " + shell_quote(dir_ + "/cli") + " && " + keet_binary() + " analyze report");
  EXPECT_EQ(cli.rc, 2);
  EXPECT_EQ(cli.err, "keet: " + error + "\n") << "the reader's one-line error";
  EXPECT_EQ(result(job["id"], "json")->status, 409);
  auto info = client_->Get("/api/v1/info");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->status, 200);
  EXPECT_EQ(wait_for(upload(scenario_report(1000))["id"])["state"], "done");
}

// A truncated report is read as far as it goes and fails its job with the
// reader's own words (where the file ends, how much was read), the line the
// command line prints for the same bytes.
TEST_F(Serve, ATruncatedReportFailsWithWhereItEnds) {
  ASSERT_NO_FATAL_FAILURE(start());
  std::string cut = cut_short_report({"first", "second", "third"}, 40);
  auto failed = wait_for(upload(cut)["id"]);
  ASSERT_EQ(failed["state"], "failed");
  std::string error = failed["error"];
  EXPECT_NE(error, "keet exited without a message");
  std::filesystem::create_directories(dir_ + "/cli");
  { std::ofstream(dir_ + "/cli/report", std::ios::binary) << cut; }
  auto cli = run_command("cd " + shell_quote(dir_ + "/cli") + " && " + keet_binary() + " analyze report --format json");
  EXPECT_EQ(cli.rc, 2);
  EXPECT_EQ(cli.err, "keet: warning: " + error + "\n");
}

// Nowhere to spool an upload (its disk full, its folder gone) is the server
// failing, not the client: 503 once the body has been read, and the server
// takes the next upload when there is room again.
TEST_F(Serve, AnUploadWithNoRoomOnDiskIsAnswered503) {
  ASSERT_NO_FATAL_FAILURE(start());
  std::string spool = dir_ + "/data/reports/spool";
  std::filesystem::remove_all(spool);
  auto res = client_->Post("/api/v1/jobs", std::string(1 << 20, 'z'), "application/octet-stream");
  ASSERT_TRUE(res) << "answered, not a closed connection: " << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 503);
  EXPECT_NE(res->body.find("no room"), std::string::npos) << res->body;
  EXPECT_EQ(res->body.find(dir_), std::string::npos) << "no server path: " << res->body;
  std::filesystem::create_directories(spool);
  EXPECT_EQ(wait_for(upload(scenario_report(1000))["id"])["state"], "done");
}

TEST_F(Serve, AnOversizedUploadIsRefusedAndTheServerGoesOn) {
  ASSERT_NO_FATAL_FAILURE(start({"--max-upload", "2k"}));
  auto res = client_->Post("/api/v1/jobs", std::string(64 * 1024, 'y'), "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_EQ(client_->Get("/api/v1/jobs")->status, 200);
}

TEST_F(Serve, CancelAndDelete) {
  ASSERT_NO_FATAL_FAILURE(start({"--workers", "0"}));
  auto job = upload(scenario_report(1000));
  std::string id = job["id"];
  auto cancel = client_->Post(("/api/v1/jobs/" + id + "/cancel").c_str(), "", "application/json");
  ASSERT_TRUE(cancel);
  EXPECT_EQ(json::parse(cancel->body)["state"], "cancelled");
  EXPECT_EQ(client_->Delete(("/api/v1/jobs/" + id).c_str())->status, 204);
  EXPECT_EQ(client_->Get(("/api/v1/jobs/" + id).c_str())->status, 404);
}

TEST_F(Serve, TwoUploadsAreCompared) {
  ASSERT_NO_FATAL_FAILURE(start());
  std::string before = upload(scenario_report(120000))["id"], after = upload(scenario_report(60000))["id"];
  auto res = client_->Post("/api/v1/diff", json{{"before", before}, {"after", after}}.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 202) << res->body;
  auto diff = json::parse(res->body);
  EXPECT_EQ(diff["kind"], "diff");
  auto done = wait_for(diff["id"]);
  ASSERT_EQ(done["state"], "done") << done.dump();
  auto doc = json::parse(result(diff["id"], "json")->body);
  EXPECT_EQ(doc["schema"], "keet.diff/1");
  ASSERT_EQ(doc["pairs"].size(), 1u);
  EXPECT_EQ(doc["pairs"][0]["verdict"], "faster");
  // Asked again (the web UI's link to the comparison), the same job answers.
  auto again = client_->Post("/api/v1/diff", json{{"before", before}, {"after", after}}.dump(), "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200) << again->body;
  EXPECT_EQ(json::parse(again->body)["id"], diff["id"]);
}

// Two kernels each: "same" keeps its name; "oldName" became "newName" with another grid.
std::string two_kernel_report(const std::string& renamed, uint64_t grid, bool renamed_first) {
  ReportWriter w;
  ReportWriter::Block b;
  auto same = w.kernel("same", 8, 256, scenario_metrics(50000)).SerializeAsString();
  auto other = w.kernel(renamed, grid, 256, scenario_metrics(80000)).SerializeAsString();
  b.results = renamed_first ? std::vector<std::string>{other, same} : std::vector<std::string>{same, other};
  w.flush_strings(b);
  w.add(b);
  return w.bytes();
}

TEST_F(Serve, ADiffWithPairsSaysHowEachPairWasMade) {
  ASSERT_NO_FATAL_FAILURE(start());
  std::string before = upload(two_kernel_report("oldName", 64, false))["id"];
  std::string after = upload(two_kernel_report("newName", 128, true))["id"];
  auto diff = [&](const json& body) {
    auto res = client_->Post("/api/v1/diff", body.dump(), "application/json");
    EXPECT_TRUE(res);
    EXPECT_EQ(res->status, 202) << res->body;
    auto done = wait_for(json::parse(res->body)["id"]);
    EXPECT_EQ(done["state"], "done") << done.dump();
    return done;
  };
  // By name: "same" pairs; the renamed kernel has another grid, so it is suggested, not paired.
  auto plain = diff({{"before", before}, {"after", after}});
  auto doc = json::parse(result(plain["id"], "json")->body);
  ASSERT_EQ(doc["pairs"].size(), 1u);
  EXPECT_EQ(doc["pairs"][0]["paired_by"], "name");
  EXPECT_EQ(doc["suggested_pairs"], json::parse("[[1, 0]]"));
  EXPECT_NE(result(plain["id"], "markdown")->body.find("e.g. --pair 1:0"), std::string::npos);

  // The suggestion sent back: the job keeps its pairs, and every result says the pair was forced.
  auto forced = diff({{"before", before}, {"after", after}, {"pairs", doc["suggested_pairs"]}});
  EXPECT_EQ(forced["pairs"], json::parse("[[1, 0]]"));
  auto j = json::parse(result(forced["id"], "json")->body);
  ASSERT_EQ(j["pairs"].size(), 2u);
  EXPECT_EQ(j["pairs"][0]["paired_by"], "forced");
  EXPECT_EQ(j["pairs"][0]["before"]["name"], "oldName()");
  EXPECT_EQ(j["pairs"][0]["after"]["name"], "newName()");
  EXPECT_TRUE(j["unmatched_before"].empty() && j["unmatched_after"].empty());
  auto md = result(forced["id"], "markdown")->body;
  EXPECT_NE(md.find("- **paired by**: --pair 1:0: the kernel names differ (oldName -\\> newName)"), std::string::npos)
      << md;
  EXPECT_NE(result(forced["id"], "html")->body.find("<th>paired by</th><td>--pair 1:0: the kernel names differ"),
            std::string::npos);

  // A pair naming no kernel fails the job with keet diff's line; a malformed one is refused at once.
  auto res = client_->Post("/api/v1/diff", json{{"before", before}, {"after", after}, {"pairs", {{7, 0}}}}.dump(),
                           "application/json");
  ASSERT_TRUE(res);
  auto failed = wait_for(json::parse(res->body)["id"]);
  EXPECT_EQ(failed["state"], "failed");
  EXPECT_NE(failed["error"].get<std::string>().find("--pair 7:0: the first report has no kernel 7"), std::string::npos)
      << failed.dump();
  auto bad = client_->Post("/api/v1/diff", json{{"before", before}, {"after", after}, {"pairs", "1:0"}}.dump(),
                           "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;

  // Multipart: the reports and the pairs as fields.
  httplib::MultipartFormDataItems items = {{"before", two_kernel_report("oldName", 64, false), "b.ncu-rep", ""},
                                           {"after", two_kernel_report("newName", 128, true), "a.ncu-rep", ""},
                                           {"pairs", "[[1, 0]]", "", ""}};
  auto m = client_->Post("/api/v1/diff", items);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 202) << m->body;
  auto mdone = wait_for(json::parse(m->body)["id"]);
  ASSERT_EQ(mdone["state"], "done") << mdone.dump();
  EXPECT_EQ(json::parse(result(mdone["id"], "json")->body)["pairs"][0]["paired_by"], "forced");
}

TEST_F(Serve, RecordHistoryGateAndSarif) {
  ASSERT_NO_FATAL_FAILURE(start());
  std::string base = upload(scenario_report(60000))["id"];
  ASSERT_EQ(wait_for(base)["state"], "done");
  auto rec = client_->Post(("/api/v1/jobs/" + base + "/record?tag=main").c_str(), "", "application/json");
  ASSERT_TRUE(rec);
  ASSERT_EQ(rec->status, 201) << rec->body;
  auto hist = client_->Get("/api/v1/history?tag=main");
  ASSERT_TRUE(hist);
  ASSERT_EQ(hist->status, 200) << hist->body;
  auto h = json::parse(hist->body);
  EXPECT_EQ(h["schema"], "keet.history/1");
  ASSERT_EQ(h["kernels"].size(), 1u);
  EXPECT_EQ(h["kernels"][0]["points"][0]["tag"], "main");
  // Twice as slow, gated against main: a regression, in SARIF too.
  std::string slow = upload(scenario_report(120000), "name=slow.ncu-rep&baseline=main")["id"];
  auto done = wait_for(slow);
  ASSERT_EQ(done["state"], "done") << done.dump();
  auto sarif = result(slow, "sarif");
  ASSERT_EQ(sarif->status, 200) << sarif->body;
  EXPECT_EQ(json::parse(sarif->body)["version"], "2.1.0");
  EXPECT_EQ(sarif->get_header_value("Content-Type"), "application/sarif+json");
  auto junit_result = result(slow, "junit");  // a gate format, not a stored result
  ASSERT_EQ(junit_result->status, 400);
  EXPECT_EQ(json::parse(junit_result->body)["error"], "format must be one of json, html, markdown, sarif, gate");
  auto gate = client_->Post(("/api/v1/jobs/" + slow + "/gate?baseline=main").c_str(), "", "application/json");
  ASSERT_TRUE(gate);
  EXPECT_EQ(gate->status, 200) << gate->body;
  EXPECT_EQ(gate->get_header_value("X-Keet-Gate"), "failed");
  EXPECT_EQ(gate->get_header_value("Content-Type"), "application/json");
  auto junit =
      client_->Post(("/api/v1/jobs/" + slow + "/gate?baseline=main&format=junit").c_str(), "", "application/json");
  ASSERT_TRUE(junit);
  EXPECT_EQ(junit->status, 200) << junit->body;
  EXPECT_EQ(junit->get_header_value("Content-Type"), "application/xml");
  EXPECT_NE(junit->body.find("<testsuites"), std::string::npos) << junit->body;
  auto html =
      client_->Post(("/api/v1/jobs/" + slow + "/gate?baseline=main&format=html").c_str(), "", "application/json");
  ASSERT_TRUE(html);
  EXPECT_EQ(html->status, 400);
  EXPECT_EQ(json::parse(html->body)["error"], "format must be one of json, sarif, markdown, junit");
  auto missing = client_->Post(("/api/v1/jobs/" + slow + "/gate?baseline=nope").c_str(), "", "application/json");
  EXPECT_EQ(missing->status, 400);
}

TEST_F(Serve, AQuestionIsAnsweredThroughTheLlmAndTheKeyNeverShows) {
  FakeLlmServer llm;
  llm.script({200, openai_text_reply("The kernel is memory-bound: its loads are not coalesced.")});
  ASSERT_NO_FATAL_FAILURE(
      start({"--llm", "openai:gpt-4o-mini"},
            {"OPENAI_API_KEY=sk-serve-secret-key", "OPENAI_BASE_URL=" + llm.url() + "/v1",
             "XDG_CACHE_HOME=" + temp_path("serve-llm-cache"), "XDG_CONFIG_HOME=/nonexistent",
             "HTTP_PROXY=", "HTTPS_PROXY=", "http_proxy=", "https_proxy=", "ALL_PROXY=", "all_proxy="}));
  auto info = json::parse(client_->Get("/api/v1/info")->body);
  EXPECT_EQ(info["llm"], true);
  std::string id = upload(scenario_report(120000))["id"];
  ASSERT_EQ(wait_for(id)["state"], "done");
  auto res = client_->Post(("/api/v1/jobs/" + id + "/ask").c_str(), R"({"question":"why is it slow?","kernel":"0"})",
                           "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto doc = json::parse(res->body);
  EXPECT_EQ(doc["schema"], "keet.ask/1");
  EXPECT_NE(doc["llm"]["text"].get<std::string>().find("memory-bound"), std::string::npos);
  ASSERT_FALSE(llm.received().empty());
  EXPECT_EQ(llm.received()[0].headers.at("authorization"), "Bearer sk-serve-secret-key");
  EXPECT_EQ(res->body.find("sk-serve-secret-key"), std::string::npos);
  EXPECT_EQ(server_->log().find("sk-serve-secret-key"), std::string::npos);
  EXPECT_EQ(client_->Get("/api/v1/info")->body.find("sk-serve"), std::string::npos);
}

TEST(ServeSecurity, BeyondLoopbackATokenIsRequired) {
  std::string dir = fresh_dir("token");
  auto refused = run_keet("serve --host 0.0.0.0 --port 0 --data-dir " + shell_quote(dir));
  EXPECT_EQ(refused.rc, 2);
  EXPECT_NE(refused.err.find("without --token"), std::string::npos) << refused.err;
  KeetProcess server("serve", {"--host", "0.0.0.0", "--port", "0", "--data-dir", dir, "--token", "tok-123"});
  ASSERT_TRUE(server.ok()) << server.log();
  httplib::Client c(server.url());
  EXPECT_EQ(c.Get("/api/v1/jobs")->status, 401);
  EXPECT_EQ(c.Get("/api/v1/jobs", {{"Authorization", "Bearer tok-12"}})->status, 401);
  EXPECT_EQ(c.Get("/api/v1/jobs", {{"Authorization", "Bearer tok-123"}})->status, 200);
  EXPECT_EQ(c.Get("/")->status, 200);
  EXPECT_EQ(server.log().find("tok-123"), std::string::npos) << "the token is never logged";
  EXPECT_EQ(server.stop(), 0);
  std::filesystem::remove_all(dir);
}

// Clients that send their whole body before they read (Python's http.client,
// requests) read a refused upload's status: the body is read and dropped
// before the 401 or 413 goes out, instead of a connection closed under them.
TEST(ServeSecurity, PythonReadsTheStatusOfARefusedUpload) {
  if (run_command("python3 -c 'import http.client'").rc != 0) GTEST_SKIP() << "python3 is not installed";
  std::string dir = fresh_dir("refused_python");
  KeetProcess server(
      "serve", {"--host", "127.0.0.1", "--port", "0", "--data-dir", dir, "--token", "tok-123", "--max-upload", "1m"});
  ASSERT_TRUE(server.ok()) << server.log();
  auto port = server.url().substr(server.url().rfind(':') + 1);
  auto post = [&](const std::string& token, size_t bytes) {
    std::string script =
        "import http.client, sys\n"
        "c = http.client.HTTPConnection('127.0.0.1', " +
        port +
        ", timeout=30)\n"
        "h = {'Content-Type': 'application/octet-stream'}\n"
        "if sys.argv[1]: h['Authorization'] = 'Bearer ' + sys.argv[1]\n"
        "c.request('POST', '/api/v1/jobs', body=b'x' * int(sys.argv[2]), headers=h)\n"
        "print(c.getresponse().status)\n";
    return run_command("python3 -c " + shell_quote(script) + " " + shell_quote(token) + " " + std::to_string(bytes) +
                       " 2>&1");
  };
  EXPECT_EQ(post("", 1200 * 1000).out, "401\n") << "no token, 1.2 MB";
  EXPECT_EQ(post("tok-12", 1200 * 1000).out, "401\n") << "a wrong token, 1.2 MB";
  EXPECT_EQ(post("tok-123", 2 << 20).out, "413\n") << "the right token, over --max-upload";
  EXPECT_EQ(server.stop(), 0);
  std::filesystem::remove_all(dir);
}

// Whether the server has closed `fd` within `ms` (a read meets its end).
bool closed_within(int fd, int ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[256];
    if (recv(fd, buf, sizeof buf, 0) <= 0) return true;
  }
  return false;
}

// A connection the server keeps, its request begun with `start`: the server
// closes one past the per-address limit at once, and a connection closed a
// moment ago may still count, so it is tried until one stays open.
int kept_connection(int port, const std::string& start) {
  for (int i = 0; i < 30; ++i) {
    int fd = connect_loopback(port);
    if (fd >= 0 && send_all(fd, start) && !closed_within(fd, 200)) return fd;
    if (fd >= 0) close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return -1;
}

// Clients that trickle a byte a second of their headers or of their body
// hold all of their address's connections only until the request timeout:
// then they are closed and a prompt client is served again. An event
// stream, a request already received, is never timed.
TEST(ServeSecurity, TricklingClientsAreClosedAtTheRequestTimeout) {
  std::string dir = fresh_dir("request_timeout");
  KeetProcess server("serve", {"--port", "0", "--data-dir", dir, "--request-timeout", "2",
                               "--max-connections-per-client", "3", "--workers", "0"});
  ASSERT_TRUE(server.ok()) << server.log();
  httplib::Client client(server.url());
  auto queued = client.Post("/api/v1/jobs?name=k.ncu-rep", "bytes", "application/octet-stream");
  ASSERT_TRUE(queued && queued->status == 202);
  std::string job = nlohmann::json::parse(queued->body)["id"];
  int stream =
      kept_connection(server.port(), "GET /api/v1/jobs/" + job + "/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  int headers = kept_connection(server.port(), "GET /api/v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
  int body =
      kept_connection(server.port(),
                      "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
                      "Content-Length: 100000\r\n\r\n");
  ASSERT_TRUE(stream >= 0 && headers >= 0 && body >= 0) << server.log();
  auto full = client.Get("/api/v1/info");
  EXPECT_FALSE(full && full->status == 200) << "the address's 3 connections are all open";
  auto started = std::chrono::steady_clock::now();
  bool headers_closed = false, body_closed = false;
  while (std::chrono::steady_clock::now() - started < std::chrono::seconds(8) && !(headers_closed && body_closed)) {
    if (!headers_closed) headers_closed = !send_all(headers, "a") || closed_within(headers, 1000);
    if (!body_closed) body_closed = !send_all(body, "a") || closed_within(body, 100);
  }
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_TRUE(headers_closed && body_closed) << "after " << waited << " s";
  EXPECT_LT(waited, 6.0);
  // libmicrohttpd frees a closed connection's place within moments.
  auto served = client.Get("/api/v1/info");
  for (int i = 0; i < 30 && !(served && served->status == 200); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    served = client.Get("/api/v1/info");
  }
  ASSERT_TRUE(served);
  EXPECT_EQ(served->status, 200);
  EXPECT_FALSE(closed_within(stream, 200)) << "an event stream is an answer, not a request";
  for (int fd : {stream, headers, body}) close(fd);
  EXPECT_EQ(server.stop(), 0);
  EXPECT_NE(server.log().find("had not sent its line and headers within the request timeout"), std::string::npos)
      << server.log();
  EXPECT_NE(server.log().find("sent its body slower than"), std::string::npos) << server.log();
  std::filesystem::remove_all(dir);
}

// A second server on a port in use exits 2 and says so; it does not share
// the port (and half the first one's traffic) with it.
TEST(ServeSecurity, ASecondServerOnAUsedPortExitsTwo) {
  std::string dir = fresh_dir("used_port");
  KeetProcess first("serve", {"--port", "0", "--data-dir", dir + "/a", "--workers", "0"});
  ASSERT_TRUE(first.ok()) << first.log();
  auto second =
      run_keet("serve --workers 0 --port " + std::to_string(first.port()) + " --data-dir " + shell_quote(dir + "/b"));
  EXPECT_EQ(second.rc, 2) << second.err;
  EXPECT_NE(second.err.find("cannot listen on 127.0.0.1:" + std::to_string(first.port())), std::string::npos)
      << second.err;
  EXPECT_EQ(first.stop(), 0) << first.log();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace keet::testing
