# Run by the build (deploy/CMakeLists.txt, target completion): writes the c960 tool's bash and
# zsh completion scripts into ${dir} as c960 and _c960. Expects c960 (the built tool) and dir.
file(MAKE_DIRECTORY "${dir}")
foreach(pair "bash;c960" "zsh;_c960")
  list(GET pair 0 shell)
  list(GET pair 1 name)
  execute_process(COMMAND "${c960}" completion ${shell} OUTPUT_FILE "${dir}/${name}.tmp" RESULT_VARIABLE rc
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "c960 completion ${shell}: ${err}")
  endif()
  file(RENAME "${dir}/${name}.tmp" "${dir}/${name}")
endforeach()
