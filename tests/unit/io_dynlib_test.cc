// io/dynlib: libraries opened on first use, with a clear error when missing.
#include <gtest/gtest.h>

#include <filesystem>

#include "io/dynlib.h"

namespace keet {
namespace {

TEST(DynLib, OpensASystemLibraryAndBindsASymbol) {
  auto lib = io::open_library("libm.so.6");
  ASSERT_TRUE(lib) << lib.error().message;
  double (*cosine)(double) = nullptr;
  ASSERT_TRUE(io::bind_symbol(*lib, "cos", cosine));
  EXPECT_DOUBLE_EQ(cosine(0.0), 1.0);
  int (*missing)() = nullptr;
  EXPECT_FALSE(io::bind_symbol(*lib, "keet_no_such_symbol", missing));
  EXPECT_EQ(missing, nullptr);
}

TEST(DynLib, MissingLibraryIsADependencyError) {
  auto lib = io::open_library("/nonexistent/libkeet_nothing.so");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().code, ExitCode::Dependency);
  EXPECT_NE(lib.error().message.find("libkeet_nothing.so"), std::string::npos) << lib.error().message;
}

TEST(DynLib, ExecutableDirHoldsThisTest) {
  auto dir = io::executable_dir();
  ASSERT_FALSE(dir.empty());
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir) / "keet_unit_tests"));
}

}  // namespace
}  // namespace keet
