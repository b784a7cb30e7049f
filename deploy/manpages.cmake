# Run by the build (deploy/CMakeLists.txt, target man): writes NAME.1 and NAME.1.gz for each
# built binary with help2man, from its --help and the version of the c960 tool (NAME.1 so that
# `man ./NAME.1` reads it where it was built; NAME.1.gz is the one installed). c960.1 also gets a
# COMMANDS section with every command's --help, the commands read from `c960 --help`: made at
# kCommandColumns, since man indents the section's text by 7 and its pages are read at 80.
# ${config} sets help2man, names ("binary=one-line description" each), binaries and mandir.
cmake_policy(VERSION 3.25)
include("${config}")
list(GET binaries 0 c960_tool)
execute_process(COMMAND "${c960_tool}" --version OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${c960_tool} --version failed: no version for the man pages")
endif()
string(REGEX REPLACE "^[^ ]+ " "" version "${version}")
set(kCommandColumns 73)
file(MAKE_DIRECTORY "${mandir}")

# Text as roff shows it verbatim: backslashes escaped, lines that would be requests guarded.
function(roff_verbatim text out)
  string(REPLACE "\\" "\\e" text "${text}")
  set(text "\n${text}")
  string(REPLACE "\n." "\n\\&." text "${text}")
  string(REPLACE "\n'" "\n\\&'" text "${text}")
  string(SUBSTRING "${text}" 1 -1 text)
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# The COMMANDS section of c960.1: one subsection per command of `c960 --help` ("  NAME  summary"
# lines; continuation lines are indented further).
execute_process(COMMAND ${CMAKE_COMMAND} -E env COLUMNS=80 "${c960_tool}" --help OUTPUT_VARIABLE list
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${c960_tool} --help failed")
endif()
string(REGEX MATCHALL "\n  [a-z]+ " lines "${list}")
set(include "${mandir}/c960.h2m")
file(WRITE "${include}" "[COMMANDS]\n")
set(count 0)
foreach(line IN LISTS lines)
  string(STRIP "${line}" command)
  if(command STREQUAL "version")
    continue()
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env COLUMNS=${kCommandColumns} "${c960_tool}" ${command} --help
                          OUTPUT_VARIABLE help
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "c960 ${command} --help failed")
  endif()
  roff_verbatim("${help}" help)
  file(APPEND "${include}" ".SS \"c960 ${command}\"\n.nf\n${help}.fi\n")
  math(EXPR count "${count} + 1")
endforeach()
if(count LESS 10)
  message(FATAL_ERROR "c960 --help listed ${count} commands: not the command list expected")
endif()

foreach(binary IN LISTS binaries)
  get_filename_component(name "${binary}" NAME)
  set(description "")
  foreach(entry IN LISTS names)
    if(entry MATCHES "^${name}=(.*)$")
      set(description "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(extra "")
  if(name STREQUAL "c960")
    set(extra "--include=${include}")
  endif()
  set(page "${mandir}/${name}.1")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env COLUMNS=80 "${help2man}" --no-info --no-discard-stderr
                          "--version-string=${version}" "--name=${description}" ${extra} "--output=${page}"
                          "${binary}"
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT EXISTS "${page}")
    message(FATAL_ERROR "help2man ${name}: ${err}")
  endif()
  execute_process(COMMAND gzip -9nkf "${page}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip ${page} failed")
  endif()
endforeach()
file(REMOVE "${include}")
