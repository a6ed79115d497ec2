// Tool: replicate the kernel results of a real report until it holds N kernels
// (the benchmark's large report). Usage: keet_make_big_report IN OUT N
#include <fstream>
#include <iostream>
#include <sstream>

#include "support/report_writer.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: keet_make_big_report IN.ncu-rep OUT.ncu-rep N\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  auto raw = keet::testing::RawReport::parse(ss.str());
  // Collect every result item; a block is "result-only" when its header has results.
  std::vector<keet::testing::RawReport::Block> result_blocks, other;
  for (auto& b : raw.blocks) {
    keet::pb::BlockHeader h;
    h.ParsePartialFromString(b.header);
    (h.num_results() > 0 && h.num_sources() == 0 ? result_blocks : other).push_back(b);
  }
  if (result_blocks.empty()) {
    std::cerr << "no result-only blocks in " << argv[1] << "\n";
    return 2;
  }
  long n = std::stol(argv[3]);
  keet::testing::RawReport out;
  out.file_header = raw.file_header;
  out.blocks = raw.blocks;  // the original, with its string table and sources
  long have = 0;
  for (auto& b : raw.blocks) {
    keet::pb::BlockHeader h;
    h.ParsePartialFromString(b.header);
    have += h.num_results();
  }
  // Extra blocks repeat the result items with a header that has no new strings.
  for (size_t i = 0; have < n; ++i) {
    const auto& src = result_blocks[i % result_blocks.size()];
    keet::pb::BlockHeader h;
    h.ParsePartialFromString(src.header);
    h.clear_string_table();
    h.clear_session_details();
    uint64_t size = 0;
    for (const auto& item : src.items) size += 4 + item.size();
    h.set_payload_size(size);
    out.blocks.push_back({h.SerializeAsString(), src.items});
    have += h.num_results();
  }
  std::ofstream(argv[2], std::ios::binary) << out.bytes();
  std::cout << have << " kernels written to " << argv[2] << "\n";
  return 0;
}
