# Runs colibri with no display in the environment: expects the clear message and exit code 3
# (kExitNoDisplay), before any Qt platform plugin is touched.
execute_process(
    COMMAND ${CMAKE_COMMAND} -E env --unset=DISPLAY --unset=WAYLAND_DISPLAY --unset=QT_QPA_PLATFORM
            ${COLIBRI} --model /nonexistent
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 3)
    message(FATAL_ERROR "expected exit code 3, got ${rc}; stderr: ${err}")
endif()
string(FIND "${err}" "no display found: run under a desktop session or `xvfb-run -a colibri`" pos)
if(pos EQUAL -1)
    message(FATAL_ERROR "message missing from stderr: ${err}")
endif()
message(STATUS "ok: ${err}")
