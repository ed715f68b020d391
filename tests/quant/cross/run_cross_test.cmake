# CTest driver: cross-compiles coli_quant + the NEON test for aarch64 and runs it under qemu.
# cmake -DSRC=<repo> -DBIN=<build dir> -P run_cross_test.cmake
# Fails (never skips) when the cross tools are missing, naming the Debian packages to install.
find_program(CROSS_CXX aarch64-linux-gnu-g++)
find_program(QEMU qemu-aarch64)
if(NOT CROSS_CXX OR NOT QEMU)
    message(FATAL_ERROR "quant_cross_aarch64: needs aarch64-linux-gnu-g++ and qemu-aarch64; "
                        "install the Debian packages g++-aarch64-linux-gnu and qemu-user")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SRC}/tests/quant/cross -B ${BIN} -G Ninja
                        -DCMAKE_TOOLCHAIN_FILE=${SRC}/cmake/aarch64-linux-gnu.cmake
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "quant_cross_aarch64: configuring the cross build failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BIN} -j2 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "quant_cross_aarch64: cross build failed")
endif()
execute_process(COMMAND ${QEMU} -L /usr/aarch64-linux-gnu ${BIN}/quant_cross_test
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "quant_cross_aarch64: NEON test under qemu failed (exit ${rc})")
endif()
