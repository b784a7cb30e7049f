#pragma once

// Where tests and benchmarks find the source tree's test data and the build's programs. The
// paths are written into one generated source (tests/test_paths.cpp.in, configured into the build
// folder) and into no other object, so that every other object is the same in any clone and a
// compiler cache shared between clones (a CI run's fresh clone, a worktree) finds it.

namespace c960::test {

// tests/data of the source tree this build was configured from.
const char* data_dir();
// The build folder (CMAKE_BINARY_DIR): cli/c960, coordinator/c960-coordinator, ...
const char* binary_dir();

}  // namespace c960::test
