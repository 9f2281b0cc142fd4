# Prometheus rules and their unit tests (issue #6), included from
# tests/CMakeLists.txt. Label "deploy"; exit 77 (skipped) without promtool.
add_test(NAME prometheus_rules
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/prometheus_rules_test.sh
          ${PROJECT_SOURCE_DIR})
set_tests_properties(prometheus_rules PROPERTIES
  SKIP_RETURN_CODE 77
  TIMEOUT 120
  LABELS deploy)
