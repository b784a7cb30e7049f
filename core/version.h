// The version of every c960 binary, from one place: the CMake project version plus the git
// revision of the tree it was built from, e.g. "0.1.0+g1a2b3c4d5e6f" (".dirty" when tracked files
// had uncommitted changes, "+unknown" when built outside git). Generated at build time by
// cmake/version.cmake.
#pragma once

#include <string_view>

namespace c960 {

std::string_view version();

}  // namespace c960
