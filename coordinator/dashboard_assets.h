// The dashboard's own script and styles (coordinator/dashboard/), compiled into the coordinator
// by report/embed_assets.cmake, so the pages need no file at run time and no network. The
// heatmap module and its styles come from report/assets.h.
#pragma once

#include <string_view>

namespace c960::cluster::dashboard_assets {

extern const std::string_view kDashboardJs;   // coordinator/dashboard/dashboard.js
extern const std::string_view kDashboardCss;  // coordinator/dashboard/dashboard.css

}  // namespace c960::cluster::dashboard_assets
