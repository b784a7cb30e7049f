// Files compiled into the library by report/embed_assets.cmake (generated assets.cpp), so a
// report needs no file at run time and no network when opened. The coordinator's dashboard may
// serve the same heatmap module and styles.
#pragma once

#include <string_view>

namespace c960::report::assets {

extern const std::string_view kChartJs;     // Chart.js 3.9.1 (MIT), Debian's libjs-chart.js
extern const std::string_view kHeatmapJs;   // report/assets/heatmap.js: C960Heatmap.render(...)
extern const std::string_view kHeatmapCss;  // report/assets/heatmap.css
extern const std::string_view kReportJs;    // report/assets/report.js: charts of the report page
extern const std::string_view kReportCss;   // report/assets/report.css

}  // namespace c960::report::assets
