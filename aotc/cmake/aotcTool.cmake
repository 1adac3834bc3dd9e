# Finds the aotc command this package config belongs to; sets AOTC_EXECUTABLE (a cache entry:
# -DAOTC_EXECUTABLE=... picks another) and _aotc_version. Included by aotcConfig.cmake and
# aotcConfigVersion.cmake.
#
# This file is installed twice: inside the Python package (`aotc --cmake-dir`) and under
# <prefix>/share/cmake/aotc, where find_package() looks for it once <prefix>/bin is on PATH
# (an activated virtual environment). The hints are the `bin` folders of both places.
if(NOT AOTC_EXECUTABLE)
  find_program(AOTC_EXECUTABLE aotc
    HINTS "${CMAKE_CURRENT_LIST_DIR}/../../../bin"        # <prefix>/share/cmake/aotc
          "${CMAKE_CURRENT_LIST_DIR}/../../../../../bin"  # <prefix>/lib/pythonX.Y/site-packages/aotc/cmake
          "${CMAKE_CURRENT_LIST_DIR}/../../../../Scripts" # Windows: <prefix>/Lib/site-packages/aotc/cmake
    NO_DEFAULT_PATH)
  find_program(AOTC_EXECUTABLE aotc)  # an editable install: the aotc on PATH
endif()
set(_aotc_version "")
if(AOTC_EXECUTABLE)
  execute_process(COMMAND "${AOTC_EXECUTABLE}" --version
    OUTPUT_VARIABLE _aotc_version_output RESULT_VARIABLE _aotc_result ERROR_QUIET)
  if(_aotc_result EQUAL 0 AND _aotc_version_output MATCHES "version ([0-9][0-9A-Za-z.+-]*)")
    set(_aotc_version "${CMAKE_MATCH_1}")
  endif()
endif()
