# Writes the C++ source behind c960::version() (core/version.h): the CMake project version plus
# the git revision of the source tree. Run at every build by the c960_version target (see
# core/CMakeLists.txt); configure_file leaves the output untouched when the text is the same, so
# an unchanged revision rebuilds nothing. A source tree without its own .git (a tarball, or one
# unpacked inside another repository) gets the revision from the environment variable
# C960_REVISION at build time (the Dockerfile passes it so), else "unknown".
#   cmake -DSOURCE_DIR=... -DVERSION=... -DTEMPLATE=... -DOUTPUT=... -P version.cmake
set(revision "unknown")
if(NOT "$ENV{C960_REVISION}" STREQUAL "")
  # Given by whoever built the tree outside git: a short hash, or anything of [0-9A-Za-z.-].
  if(NOT "$ENV{C960_REVISION}" MATCHES "^[0-9A-Za-z.-]+$")
    message(FATAL_ERROR "C960_REVISION='$ENV{C960_REVISION}': only letters, digits, '.' and '-'")
  endif()
  set(revision "$ENV{C960_REVISION}")
  if(revision MATCHES "^[0-9a-f]+(\\.dirty)?$")
    set(revision "g${revision}")
  endif()
endif()
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" rev-parse --show-toplevel
                  OUTPUT_VARIABLE toplevel OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0)
    file(REAL_PATH "${toplevel}" toplevel)
    file(REAL_PATH "${SOURCE_DIR}" source_real)
  endif()
  if(rc EQUAL 0 AND toplevel STREQUAL source_real)
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                    OUTPUT_VARIABLE hash OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
    if(rc EQUAL 0 AND hash)
      set(revision "g${hash}")
      # Uncommitted changes to tracked files make a binary that no revision describes.
      execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                      OUTPUT_VARIABLE changes RESULT_VARIABLE rc ERROR_QUIET)
      if(rc EQUAL 0 AND changes)
        string(APPEND revision ".dirty")
      endif()
    endif()
  endif()
endif()
# Semantic-versioning build metadata: 0.1.0+g1a2b3c4d5e6f, 0.1.0+g1a2b3c4d5e6f.dirty, 0.1.0+unknown.
set(C960_VERSION_STRING "${VERSION}+${revision}")
configure_file("${TEMPLATE}" "${OUTPUT}" @ONLY)
