# The NATS servers of a collector cluster (deploy/nats/): nats-server accepts
# the configuration as each of three servers, the systemd drop-in verifies
# with Debian's unit, and three servers started from the file form a
# JetStream cluster on loopback (~2 s). Label "deploy"; exit 77 (skipped)
# without nats-server. Included from tests/CMakeLists.txt.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME nats_config
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/nats_config_test.py
            ${PROJECT_SOURCE_DIR})
  set_tests_properties(nats_config PROPERTIES
    SKIP_RETURN_CODE 77 TIMEOUT 90 LABELS deploy)
endif()
