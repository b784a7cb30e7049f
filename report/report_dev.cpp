// Development tool, not installed: writes the HTML report of a self-play or perft CSV, the way
// `c960 report --from FILE` will (the browser tests and docs/ use it).
//   c960-report-dev --from FILE --out FILE [--reference FILE] [--title T] [--meta KEY=VALUE]...
#include <fstream>
#include <iostream>
#include <sstream>

#include "report/report.h"

namespace {

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return bool(in) || in.eof();
}

int usage(const std::string& problem) {
  std::cerr << "c960-report-dev: " << problem
            << "\nusage: c960-report-dev --from FILE --out FILE [--reference FILE] [--title T] [--meta KEY=VALUE]...\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string from, out, reference;
  c960::report::ReportOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage(a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--from")
      from = v;
    else if (a == "--out")
      out = v;
    else if (a == "--reference")
      reference = v;
    else if (a == "--title")
      options.title = v;
    else if (a == "--meta") {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) return usage("--meta: expected KEY=VALUE, got '" + v + "'");
      options.metadata.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else {
      return usage("unknown option " + a);
    }
  }
  if (from.empty() || out.empty()) return usage("--from and --out are required");
  std::string csv;
  if (!read_file(from, &csv)) return usage("--from: cannot read '" + from + "'");
  if (!reference.empty()) {
    if (!read_file(reference, &options.reference_csv)) return usage("--reference: cannot read '" + reference + "'");
    options.reference_name = reference.substr(reference.rfind('/') + 1);
  }
  absl::StatusOr<std::string> html = c960::report::report_from_csv(csv, options);
  if (!html.ok()) {
    std::cerr << "c960-report-dev: " << from << ": " << html.status().message() << "\n";
    return 2;
  }
  std::ofstream o(out, std::ios::binary | std::ios::trunc);
  o << *html;
  if (!o.flush()) {
    std::cerr << "c960-report-dev: cannot write '" << out << "'\n";
    return 1;
  }
  return 0;
}
