# CTest fixture setup (test tokenizer_npm_setup, FIXTURES_SETUP coli_npm):
#   1. copies package.json + package-lock.json from SRC_DIR to NPM_DIR;
#   2. runs `npm ci --no-audit --no-fund` there when node_modules is missing or the lock changed;
#   3. runs make_reference.mjs, which writes NPM_DIR/tokenizer_reference.json.
# Fails (never skips) with a clear message when node or npm is missing.
# Usage: cmake -DSRC_DIR=... -DNPM_DIR=... -DCORPUS=... -P npm_setup.cmake
foreach(var SRC_DIR NPM_DIR CORPUS)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "npm_setup.cmake: -D${var}=... is required")
    endif()
endforeach()

find_program(NODE_EXE node)
find_program(NPM_EXE npm)
if(NOT NODE_EXE OR NOT NPM_EXE)
    message(FATAL_ERROR "node and npm are required for the tokenizer reference tests (label npm) "
                        "but were not found on PATH. Install them with: "
                        "apt-get install -y nodejs npm (the project's setup script does this).")
endif()

file(MAKE_DIRECTORY ${NPM_DIR})
file(COPY_FILE ${SRC_DIR}/package.json ${NPM_DIR}/package.json ONLY_IF_DIFFERENT)
file(COPY_FILE ${SRC_DIR}/package-lock.json ${NPM_DIR}/package-lock.json ONLY_IF_DIFFERENT)

file(SHA256 ${NPM_DIR}/package-lock.json lock_hash)
set(stamp ${NPM_DIR}/.lock.sha256)
set(installed_hash "")
if(EXISTS ${stamp})
    file(READ ${stamp} installed_hash)
endif()
if(NOT EXISTS ${NPM_DIR}/node_modules OR NOT installed_hash STREQUAL lock_hash)
    message(STATUS "npm ci in ${NPM_DIR}")
    execute_process(COMMAND ${NPM_EXE} ci --no-audit --no-fund
                    WORKING_DIRECTORY ${NPM_DIR} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "npm ci failed (exit ${rc}) in ${NPM_DIR}: the pinned packages of "
                            "${SRC_DIR}/package-lock.json could not be installed (network or "
                            "npm cache needed)")
    endif()
    file(WRITE ${stamp} "${lock_hash}")
endif()

execute_process(COMMAND ${NODE_EXE} ${SRC_DIR}/make_reference.mjs ${NPM_DIR} ${CORPUS}
                        ${NPM_DIR}/tokenizer_reference.json
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "make_reference.mjs failed (exit ${rc})")
endif()
