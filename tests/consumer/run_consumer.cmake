# ctest driver for the consumer test (cmake -P):
#   1. install the gpusched build tree into a fresh prefix,
#   2. configure and build tests/consumer against it with find_package(gpusched CONFIG REQUIRED),
#   3. run the consumer, which exits 0 only when binpack placed the job where it must.
# Inputs: GPUSCHED_BUILD_DIR, CONSUMER_SOURCE_DIR, WORK_DIR, GENERATOR, CXX_COMPILER, BUILD_TYPE.
foreach(var GPUSCHED_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_consumer.cmake: ${var} is not set")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer test: ${name} failed (${rc})\n${out}\n${err}")
  endif()
  message(STATUS "consumer test: ${name}: ok\n${out}")
endfunction()

step("install into ${prefix}" ${CMAKE_COMMAND} --install ${GPUSCHED_BUILD_DIR} --prefix ${prefix})
if(NOT EXISTS ${prefix}/lib/cmake/gpusched/gpuschedConfig.cmake AND
   NOT EXISTS ${prefix}/lib64/cmake/gpusched/gpuschedConfig.cmake)
  file(GLOB_RECURSE configs ${prefix}/*gpuschedConfig.cmake)
  if(NOT configs)
    message(FATAL_ERROR "consumer test: the install has no gpuschedConfig.cmake")
  endif()
endif()

set(configure_args -S ${CONSUMER_SOURCE_DIR} -B ${build} -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix})
if(CXX_COMPILER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
if(BUILD_TYPE)
  list(APPEND configure_args -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
endif()
step("configure" ${CMAKE_COMMAND} ${configure_args})
step("build" ${CMAKE_COMMAND} --build ${build})

find_program(consumer gpusched_consumer PATHS ${build} NO_DEFAULT_PATH)
if(NOT consumer)
  message(FATAL_ERROR "consumer test: no gpusched_consumer in ${build}")
endif()
step("run" ${consumer})
