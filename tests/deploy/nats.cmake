# The NATS servers of a collector cluster (deploy/nats/): nats-server accepts
# the configuration as each of three servers, the systemd drop-in verifies
# with Debian's unit, three servers started from the file form a JetStream
# cluster over TLS routes on loopback, and a collector joined with the
# file's user, password and CA works (its permissions suffice) while one
# without credentials is refused (~10 s). Label "deploy"; exit 77 (skipped)
# without nats-server or openssl. Included from tests/CMakeLists.txt.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  set(nats_config_collector "")
  if(TARGET fabricdiag-collector)
    set(nats_config_collector "$<TARGET_FILE:fabricdiag-collector>")
  endif()
  add_test(NAME nats_config
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/nats_config_test.py
            ${PROJECT_SOURCE_DIR} ${nats_config_collector})
  set_tests_properties(nats_config PROPERTIES
    SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS deploy
    RESOURCE_LOCK loopback_cluster)
endif()
