#include "render/html_parts.h"

#include "analysis/derived.h"
#include "model/units.h"

#include "util/strings.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace keet::render::html {
namespace {

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
header{background:#1d2330;color:#fff;padding:16px 28px}header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;color:#b8c0d0;font-size:13px}main{padding:18px 28px;max-width:1200px}
section.card,nav.card{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.12);padding:16px 20px;margin:0 0 18px;display:block}
details>summary{cursor:pointer;list-style-position:outside}details>summary h2{display:inline}
ol.toc{margin:0;padding-left:20px;columns:2;font-size:13px}ol.toc a{color:#1d4ed8;text-decoration:none}
h2{font-size:17px;margin:0 0 8px;word-break:break-all}h3{font-size:14px;margin:14px 0 6px;color:#445}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #e4e6eb;vertical-align:top}
th{background:#f0f2f5;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.meta{color:#556;font-size:13px}.grid2{display:grid;grid-template-columns:1fr 1fr;gap:16px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;color:#fff}
.memory{background:#c2410c}.compute{background:#1d4ed8}.latency{background:#7e22ce}.launch{background:#0f766e}
.high{background:#b91c1c}.medium{background:#d97706}.low{background:#2563eb}.info{background:#6b7280}
.faster{background:#15803d}.slower{background:#b91c1c}.unchanged{background:#6b7280}.unknown{background:#9ca3af}
.finding{border-left:4px solid #d0d4dc;padding:6px 12px;margin:10px 0}.finding p{margin:4px 0}
.share{background:#e4e6eb;border-radius:3px;height:10px;width:120px;display:inline-block;vertical-align:middle}
.share>span{display:block;height:10px;border-radius:3px;background:#2563eb}
code,pre{font:12px ui-monospace,Menlo,Consolas,monospace}pre{background:#f6f8fa;padding:6px;margin:0;white-space:pre-wrap}
svg text{font:11px system-ui,sans-serif;fill:#1d2330}.empty{color:#889;font-style:italic}
)css";

struct Axis {
  double lo, hi;  // log10 range
  double px0, px1;
  double at(double v) const { return px0 + (std::log10(v) - lo) / (hi - lo) * (px1 - px0); }
};

// A quantity of the catalogue (data/metrics/quantities.json) by name.
std::optional<double> quantity(const model::Kernel& k, std::string_view name) {
  auto id = analysis::quantity_id(name);
  return id ? analysis::metric_quantity(k, *id) : std::nullopt;
}

std::optional<double> product(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *a <= 0 || *b <= 0) return std::nullopt;
  return *a * *b;
}

// Sum of FLOP-producing instruction rates (an FMA counts twice), per cycle;
// `p` is "f" (FP32) or "d" (FP64), as the quantity names spell it.
std::optional<double> flops_per_cycle(const model::Kernel& k, const std::string& p) {
  auto add = quantity(k, p + "add_per_cycle");
  auto mul = quantity(k, p + "mul_per_cycle");
  auto fma = quantity(k, p + "fma_per_cycle");
  if (!add && !mul && !fma) return std::nullopt;
  return add.value_or(0) + mul.value_or(0) + 2 * fma.value_or(0);
}

std::optional<double> peak_flops(const model::Kernel& k, const std::string& p, std::optional<double> clock) {
  auto x2 = quantity(k, p == "f" ? "fp32_peak_per_cycle" : "fp64_peak_per_cycle");
  if (!x2) {
    auto fma = quantity(k, p + "fma_peak_per_cycle");
    if (fma) x2 = 2 * *fma;
  }
  return product(x2, clock);
}

std::string roof_path(const Axis& x, const Axis& y, double bw, double peak) {
  double ridge = peak / bw;
  double x0 = std::pow(10, x.lo), x1 = std::pow(10, x.hi);
  auto pt = [&](double ai) { return fmt::format("{:.1f},{:.1f}", x.at(ai), y.at(std::min(bw * ai, peak))); };
  std::string d = "M" + pt(x0);
  if (ridge > x0 && ridge < x1) d += " L" + pt(ridge);
  return d + " L" + pt(x1);
}

std::string axis_ticks(const Axis& x, const Axis& y) {
  std::string out;
  for (int e = static_cast<int>(std::ceil(x.lo)); e <= x.hi; ++e)
    out += fmt::format(
        "<line x1='{0:.1f}' y1='{1}' x2='{0:.1f}' y2='{2}' stroke='#e4e6eb'/>"
        "<text x='{0:.1f}' y='{3}' text-anchor='middle'>1e{4}</text>",
        x.at(std::pow(10, e)), y.px1, y.px0, y.px0 + 14, e);
  for (int e = static_cast<int>(std::ceil(y.lo)); e <= y.hi; ++e)
    out += fmt::format(
        "<line x1='{0}' y1='{1:.1f}' x2='{2}' y2='{1:.1f}' stroke='#e4e6eb'/>"
        "<text x='{3}' y='{1:.1f}' text-anchor='end' dominant-baseline='middle'>1e{4}</text>",
        x.px0, y.at(std::pow(10, e)), x.px1, x.px0 - 4, e);
  return out;
}

struct RoofSeries {
  std::string name, color;
  std::optional<double> peak, achieved;
};

}  // namespace

// The markup sanitiser (HTML and JUnit XML): besides the five markup
// characters, control characters XML 1.0 forbids are shown in caret notation
// ("^[" for ESC) and invalid UTF-8 becomes U+FFFD, so one odd byte in a kernel
// name cannot make the file unreadable.
std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : valid_utf8(s)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f) {
          out += '^';
          out += c == 0x7f ? '?' : static_cast<char>(c + 0x40);
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string page_head(const std::string& title) {
  return fmt::format(
      "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
      "<meta name='viewport' content='width=device-width,initial-scale=1'>"
      "<title>{}</title><style>{}</style></head>\n<body>\n",
      esc(title), kStyle);
}

std::string page_tail() { return "\n</body></html>\n"; }

std::string page(const std::string& title, const std::string& body) { return page_head(title) + body + page_tail(); }

std::string bar_chart(const std::vector<Bar>& bars, double max, const std::string& css_class) {
  constexpr int kRow = 22, kLabel = 190, kWidth = 470, kBar = 200;
  if (bars.empty() || max <= 0) return "<p class='empty'>no data in the report</p>";
  std::string out =
      fmt::format("<svg class='{}' width='{}' height='{}' role='img'>", esc(css_class), kWidth, bars.size() * kRow + 4);
  for (size_t i = 0; i < bars.size(); ++i) {
    double w = std::clamp(bars[i].value / max, 0.0, 1.0) * kBar;
    int y = static_cast<int>(i) * kRow + 2;
    out += fmt::format("<text x='{}' y='{}' text-anchor='end'>{}</text>", kLabel - 6, y + 14, esc(bars[i].label));
    out += fmt::format("<rect x='{}' y='{}' width='{}' height='16' fill='#e4e6eb'/>", kLabel, y + 2, kBar);
    out += fmt::format("<rect x='{}' y='{}' width='{:.1f}' height='16' fill='#2563eb'/>", kLabel, y + 2, w);
    out += fmt::format("<text x='{}' y='{}'>{}</text>", kLabel + kBar + 6, y + 14, esc(bars[i].text));
  }
  return out + "</svg>";
}

Roofline roofline_of(const model::Kernel& k) {
  Roofline r;
  auto sm_clock = quantity(k, "smsp_cycles_per_s");
  if (!sm_clock) sm_clock = quantity(k, "sm_cycles_per_s");
  r.peak_bandwidth = product(quantity(k, "dram_peak_bytes_per_cycle"), quantity(k, "dram_cycles_per_s"));
  r.dram_rate = quantity(k, "dram_bytes_per_s");
  r.peak_fp32 = peak_flops(k, "f", sm_clock);
  r.peak_fp64 = peak_flops(k, "d", sm_clock);
  r.fp32 = product(flops_per_cycle(k, "f"), sm_clock);
  r.fp64 = product(flops_per_cycle(k, "d"), sm_clock);
  return r;
}

std::string roofline_svg(const Roofline& r) {
  if (!r.drawable()) return "<p class='empty'>roofline: the report lacks the peak/throughput metrics</p>";
  std::vector<RoofSeries> series = {{"FP32", "#1d4ed8", r.peak_fp32, r.fp32}, {"FP64", "#c2410c", r.peak_fp64, r.fp64}};
  double top = std::max(r.peak_fp32.value_or(0), r.peak_fp64.value_or(0));
  double low = top / 1e5, ai_lo = 1e-2, ai_hi = 1e3;
  for (const auto& s : series)
    if (s.achieved && *r.dram_rate > 0) {
      low = std::min(low, *s.achieved / 2);
      ai_lo = std::min(ai_lo, *s.achieved / *r.dram_rate / 2);
      ai_hi = std::max(ai_hi, *s.achieved / *r.dram_rate * 2);
    }
  Axis x{std::floor(std::log10(ai_lo)), std::ceil(std::log10(ai_hi)), 60, 440};
  Axis y{std::floor(std::log10(low)), std::ceil(std::log10(top * 1.5)), 250, 14};
  std::string out = "<svg class='roofline' width='470' height='290' role='img'>" + axis_ticks(x, y);
  out += fmt::format(
      "<text x='250' y='284' text-anchor='middle'>arithmetic intensity (FLOP/byte, DRAM)</text>"
      "<text x='12' y='132' transform='rotate(-90 12 132)' text-anchor='middle'>FLOP/s</text>");
  int legend = 0;
  for (const auto& s : series) {
    if (!s.peak) continue;
    out += fmt::format("<path d='{}' fill='none' stroke='{}' stroke-width='2'/>",
                       roof_path(x, y, *r.peak_bandwidth, *s.peak), s.color);
    out += fmt::format("<text x='{}' y='{}' fill='{}'>{} peak {} GFLOP/s</text>", 300, 28 + 14 * legend++, s.color,
                       s.name, model::readable(*s.peak / 1e9, ""));
    if (!s.achieved || *s.achieved <= 0) continue;
    double ai = *s.achieved / *r.dram_rate;
    out += fmt::format(
        "<circle cx='{:.1f}' cy='{:.1f}' r='5' fill='{}' stroke='#fff'><title>{} achieved {} GFLOP/s at "
        "{} FLOP/byte</title></circle>",
        x.at(ai), y.at(*s.achieved), s.color, s.name, model::readable(*s.achieved / 1e9, ""), model::readable(ai, ""));
    out += fmt::format("<text x='{:.1f}' y='{:.1f}'>{} {} GFLOP/s</text>", x.at(ai) + 8, y.at(*s.achieved) + 4, s.name,
                       model::readable(*s.achieved / 1e9, ""));
  }
  return out + "</svg>";
}

}  // namespace keet::render::html
