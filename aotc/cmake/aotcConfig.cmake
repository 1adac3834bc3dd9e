# CMake package config of aotc, the ahead-of-time compiler for TensorFlow graphs.
#
#   find_package(aotc 0.1 REQUIRED)     # -Daotc_DIR="$(aotc --cmake-dir)" if it is not found
#   aotc_add_model(mlp GRAPH models/mlp.pb CONFIG models/mlp.yaml)
#   target_link_libraries(app PRIVATE mlp)   # app's sources can #include "mlp.h"
#
# aotc_add_model(<target> GRAPH <graph> [CONFIG <yaml>] [NAME <c name>] [CPP_CLASS <ns::Name>]
#                [TARGET_TRIPLE <triple>] [TARGET_CPU <cpu>] [TARGET_FEATURES <features>]
#                [AOTC_ARGS <extra aotc compile arguments>...])
#   compiles the model at build time into a static library <target> (created unless it
#   exists: several calls put several models into one library) whose include directory holds
#   the header <NAME or graph stem>.h, and with CPP_CLASS the header-only C++ class
#   <NAME or graph stem>.hpp (shaped like tfcompile's, see aotc's docs). aotc writes a depfile, so editing the graph, its config,
#   a SavedModel's variables or upgrading aotc recompiles the model, and nothing else does.
#   Relative paths are relative to CMAKE_CURRENT_SOURCE_DIR. When cross-compiling, give
#   TARGET_TRIPLE (or set CMAKE_C_COMPILER_TARGET): aotc's default target is the build machine.
if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "aotc's CMake functions need CMake 3.20 or newer (DEPFILE with every generator)")
endif()
include("${CMAKE_CURRENT_LIST_DIR}/aotcTool.cmake")
if(NOT _aotc_version)
  set(aotc_FOUND FALSE)
  set(aotc_NOT_FOUND_MESSAGE "no working aotc command (AOTC_EXECUTABLE=${AOTC_EXECUTABLE}); install aotc or pass -DAOTC_EXECUTABLE=/path/to/aotc")
  return()
endif()

function(aotc_add_model target)
  cmake_parse_arguments(PARSE_ARGV 1 _aotc ""
    "GRAPH;CONFIG;NAME;CPP_CLASS;TARGET_TRIPLE;TARGET_CPU;TARGET_FEATURES" "AOTC_ARGS")
  if(_aotc_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "aotc_add_model(${target}): unknown arguments: ${_aotc_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT _aotc_GRAPH)
    message(FATAL_ERROR "aotc_add_model(${target}): GRAPH <file> is required")
  endif()
  cmake_path(ABSOLUTE_PATH _aotc_GRAPH NORMALIZE OUTPUT_VARIABLE graph)
  if(graph MATCHES "/$")  # a SavedModel folder given with a trailing slash
    string(REGEX REPLACE "/+$" "" graph "${graph}")
  endif()
  set(args compile "${graph}")
  set(depends "")
  if(NOT IS_DIRECTORY "${graph}")
    set(depends "${graph}")  # before the first build there is no depfile yet
  endif()
  if(_aotc_CONFIG)
    cmake_path(ABSOLUTE_PATH _aotc_CONFIG NORMALIZE OUTPUT_VARIABLE config)
    list(APPEND args -c "${config}")
    list(APPEND depends "${config}")
  endif()
  cmake_path(GET graph STEM LAST_ONLY stem)  # as aotc names it: mlp.v2.pb -> mlp.v2
  if(_aotc_NAME)
    list(APPEND args --name "${_aotc_NAME}")
    set(stem "${_aotc_NAME}")
  endif()
  set(headers "")  # written besides <stem>.h
  if(_aotc_CPP_CLASS)
    list(APPEND args --cpp-class "${_aotc_CPP_CLASS}")
    set(headers ".hpp")
  endif()
  if(NOT _aotc_TARGET_TRIPLE AND CMAKE_C_COMPILER_TARGET)
    set(_aotc_TARGET_TRIPLE "${CMAKE_C_COMPILER_TARGET}")
  endif()
  if(CMAKE_CROSSCOMPILING AND NOT _aotc_TARGET_TRIPLE)
    message(FATAL_ERROR "aotc_add_model(${target}): cross-compiling for ${CMAKE_SYSTEM_NAME}/${CMAKE_SYSTEM_PROCESSOR}: give TARGET_TRIPLE (aotc's default target is the build machine)")
  endif()
  foreach(option TRIPLE CPU FEATURES)
    if(DEFINED _aotc_TARGET_${option})
      string(TOLOWER "${option}" flag)
      list(APPEND args "--target-${flag}" "${_aotc_TARGET_${option}}")
    endif()
  endforeach()
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/aotc/${target}")
  set(prefix "${dir}/${stem}")
  list(TRANSFORM headers PREPEND "${prefix}")
  add_custom_command(
    OUTPUT "${prefix}.o" "${prefix}.h" ${headers}
    COMMAND "${AOTC_EXECUTABLE}" ${args} -o "${prefix}" --depfile "${prefix}.d" -q ${_aotc_AOTC_ARGS}
    DEPENDS ${depends}
    DEPFILE "${prefix}.d"
    COMMENT "aotc: compiling ${stem} for ${target}"
    VERBATIM)
  set_source_files_properties("${prefix}.o" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  if(NOT TARGET ${target})
    add_library(${target} STATIC)
    get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    if("C" IN_LIST languages)
      set_target_properties(${target} PROPERTIES LINKER_LANGUAGE C)
    else()
      set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
    endif()
  endif()
  target_sources(${target} PRIVATE "${prefix}.o" "${prefix}.h" ${headers})
  target_include_directories(${target} PUBLIC "${dir}")
endfunction()
