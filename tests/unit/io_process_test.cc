// io::spawn: the one process spawner of keet profile, tune and serve, driven
// against real programs (sh, sleep) rather than a stand-in.
#include "io/process.h"
#include "support/testing.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace keet::io {
namespace {

using keet::testing::read_file;
using namespace std::chrono_literals;

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(Process, PipeCarriesStdoutAndStderrAndExitCode) {
  auto child = spawn({.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"}, .output_pipe = true});
  ASSERT_TRUE(child) << child.error().message;
  std::string text = read_all(child->output_fd());
  EXPECT_NE(text.find("out\n"), std::string::npos);
  EXPECT_NE(text.find("err\n"), std::string::npos);
  EXPECT_EQ(child->wait(), 3);
}

TEST(Process, AMissingProgramIsAnErrorNotAChild) {
  auto child = spawn({.argv = {"keet-no-such-program-anywhere"}});
  ASSERT_FALSE(child);
  EXPECT_EQ(child.error().code, ExitCode::Dependency);
  EXPECT_FALSE(child.error().message.empty());
  EXPECT_FALSE(spawn({}));  // nothing to run
}

TEST(Process, FilesWorkingDirectoryAndNullInput) {
  auto dir = std::filesystem::temp_directory_path() / ("keet-process-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto child = spawn({.argv = {"sh", "-c", "pwd; cat; echo oops >&2"},
                      .cwd = dir.string(),
                      .stdin_null = true,
                      .stdout_file = (dir / "out").string(),
                      .stderr_file = (dir / "err").string()});
  ASSERT_TRUE(child) << child.error().message;
  EXPECT_EQ(child->wait(), 0);
  EXPECT_EQ(read_file((dir / "out").string()), std::filesystem::canonical(dir).string() + "\n");
  EXPECT_EQ(read_file((dir / "err").string()), "oops\n");
  std::filesystem::remove_all(dir);
}

TEST(Process, WaitForStopsAChildThatRunsTooLong) {
  auto child = spawn({.argv = {"sleep", "30"}});
  ASSERT_TRUE(child);
  bool timed_out = false;
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(child->wait_for(100ms, nullptr, timed_out, 10ms));
  EXPECT_TRUE(timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(Process, WaitForStopsWhenAskedAndReportsTheExitCodeOtherwise) {
  auto slow = spawn({.argv = {"sleep", "30"}});
  ASSERT_TRUE(slow);
  bool timed_out = true;
  int polls = 0;
  EXPECT_FALSE(slow->wait_for(
      0ms, [&] { return ++polls < 3; }, timed_out, 10ms));
  EXPECT_FALSE(timed_out);

  auto quick = spawn({.argv = {"sh", "-c", "exit 5"}});
  ASSERT_TRUE(quick);
  auto code = quick->wait_for(10s, nullptr, timed_out, 5ms);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 5);
  EXPECT_FALSE(timed_out);
}

TEST(Process, EndingTheChildEndsWhatItStarted) {
  // The grandchild keeps the pipe open; without the group kill, reading the
  // pipe to its end would wait for the grandchild's 30 s.
  auto child = spawn({.argv = {"sh", "-c", "sleep 30 & echo started"}, .output_pipe = true});
  ASSERT_TRUE(child);
  pollfd p{child->output_fd(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 10000), 1);
  char buf[64];
  ASSERT_GT(read(child->output_fd(), buf, sizeof buf), 0);
  while (!child->exited()) usleep(1000);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(child->wait(), 0);
  EXPECT_EQ(read_all(child->output_fd()), "");  // every writer is gone
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(Process, ASignalEndingTheChildReads128PlusTheSignal) {
  auto child = spawn({.argv = {"sh", "-c", "kill -TERM $$"}});
  ASSERT_TRUE(child);
  EXPECT_EQ(child->wait(), 128 + SIGTERM);
}

}  // namespace
}  // namespace keet::io
