# Runs cmake/version.cmake on this source tree (a git revision), on a folder without its own
# .git that lies inside the work tree (revision "unknown", as for an unpacked tarball), and on
# that folder with the revision given in C960_REVISION (as the Dockerfile does).
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -P version_script_test.cmake
set(template "${WORK_DIR}/version.in")
file(MAKE_DIRECTORY "${WORK_DIR}/tarball")
file(WRITE "${template}" "@C960_VERSION_STRING@")
foreach(case IN ITEMS git tarball given)
  unset(ENV{C960_REVISION})
  if(case STREQUAL given)
    set(ENV{C960_REVISION} 0123456789ab)
    set(dir "${WORK_DIR}/tarball")
    set(expect "^1\\.2\\.3\\+g0123456789ab$")
  elseif(case STREQUAL git)
    set(dir "${SOURCE_DIR}")
    set(expect "^1\\.2\\.3\\+g[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f](\\.dirty)?$")
  else()
    set(dir "${WORK_DIR}/tarball")
    set(expect "^1\\.2\\.3\\+unknown$")
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" -DSOURCE_DIR=${dir} -DVERSION=1.2.3 -DTEMPLATE=${template}
                          -DOUTPUT=${WORK_DIR}/${case}.txt -P "${SOURCE_DIR}/cmake/version.cmake"
                  RESULT_VARIABLE rc)
  file(READ "${WORK_DIR}/${case}.txt" got)
  string(STRIP "${got}" got)
  if(NOT rc EQUAL 0 OR NOT got MATCHES "${expect}")
    message(FATAL_ERROR "${case}: got '${got}' (exit ${rc}), want ${expect}")
  endif()
  message(STATUS "${case}: ${got}")
endforeach()
