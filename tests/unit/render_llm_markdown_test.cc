// The LLM narrative in Markdown: a model's text is escaped like any outside
// text and keeps its paragraphs, checked through a CommonMark renderer.
#include <gtest/gtest.h>

#include <fstream>

#include "render/llm_markdown.h"
#include "support/testing.h"

namespace keet::render {
namespace {

std::string to_html(const std::string& markdown) {
  std::string path = testing::temp_path("narrative.md");
  std::ofstream(path) << markdown;
  auto r = testing::run_command("cmark-gfm --unsafe " + testing::shell_quote(path));
  EXPECT_EQ(r.rc, 0) << "cmark-gfm (scripts/bootstrap): " << r.err;
  return r.out;
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (auto at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

llm::LlmResult hostile_answer() {
  llm::LlmResult r;
  r.status = llm::Status::Flagged;
  r.provider = "openai";
  r.model = "m";
  r.text = "# Not a heading\nDRAM is at *88%* <script>alert(1)</script>\n\n1. not a list\n\n> not a quote __x__";
  r.suggestions = {{"Use <b>float4</b> loads", std::string("memory.dram_bandwidth"), false},
                   {"Try _tiling_", std::nullopt, true}};
  r.questions = {"Is the grid | fixed?"};
  r.unsupported_claims = 1;
  return r;
}

TEST(NarrativeMarkdown, ModelTextIsTextInItsOwnParagraphs) {
  std::string html = to_html(narrative_markdown(hostile_answer()));
  EXPECT_EQ(html.find("<script"), std::string::npos) << html;
  EXPECT_EQ(html.find("<b>"), std::string::npos) << html;
  EXPECT_EQ(html.find("<em>"), std::string::npos) << html;
  EXPECT_EQ(html.find("<strong>"), std::string::npos) << html;
  EXPECT_EQ(html.find("<h1>"), std::string::npos) << html;
  EXPECT_EQ(html.find("<ol>"), std::string::npos) << html;
  EXPECT_EQ(html.find("<blockquote>"), std::string::npos) << html;
  EXPECT_NE(html.find("<p># Not a heading DRAM is at *88%* &lt;script&gt;alert(1)&lt;/script&gt;</p>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<p>1. not a list</p>"), std::string::npos) << html;
  EXPECT_NE(html.find("<p>&gt; not a quote __x__</p>"), std::string::npos) << html;
  // Two suggestions and one question: a list of two items, then a list of one.
  EXPECT_EQ(count(html, "<ul>"), 2u) << html;
  EXPECT_EQ(count(html, "<li>"), 3u) << html;
  EXPECT_NE(
      html.find("<p>Suggestions:</p>\n<ul>\n<li>Use &lt;b&gt;float4&lt;/b&gt; loads (memory.dram_bandwidth)</li>\n"
                "<li>Try _tiling_ (speculative)</li>\n</ul>\n<p>Questions:</p>\n<ul>\n<li>Is the grid | fixed?</li>"),
      std::string::npos)
      << html;
  EXPECT_NE(html.find("[unverified]"), std::string::npos) << html;
}

TEST(NarrativeMarkdown, UnavailableSaysWhy) {
  llm::LlmResult r;
  r.provider = "ollama";
  r.model = "llama3";
  r.error = "http://127.0.0.1:1: Connection";
  std::string html = to_html(narrative_markdown(r));
  EXPECT_NE(html.find("unavailable"), std::string::npos) << html;
  EXPECT_NE(html.find("<p>Unavailable: http://127.0.0.1:1: Connection</p>"), std::string::npos) << html;
}

}  // namespace
}  // namespace keet::render
