# Prometheus rules, their unit tests and the Grafana dashboards,
# included from tests/CMakeLists.txt. Label "deploy"; exit 77 (skipped)
# without promtool.
add_test(NAME prometheus_rules
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/prometheus_rules_test.sh
          ${PROJECT_SOURCE_DIR})
set_tests_properties(prometheus_rules PROPERTIES
  SKIP_RETURN_CODE 77
  TIMEOUT 120
  LABELS deploy)

# The Alertmanager routing example: amtool check-config and a route test
# per owner. Under a second; exit 77 (skipped) without amtool.
add_test(NAME alertmanager_config
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/alertmanager_config_test.sh
          ${PROJECT_SOURCE_DIR})
set_tests_properties(alertmanager_config PROPERTIES
  SKIP_RETURN_CODE 77
  TIMEOUT 60
  LABELS deploy)

# Grafana dashboards: JSON and datasource uids, every PromQL expression
# parses, and every metric named by a dashboard or a rule is exported by a
# live agent or collector (or recorded). Starts real processes for ~5 s.
if(NOT FABRICDIAG_SANITIZE AND TARGET fabricdiag-sim AND TARGET fabricdiag
   AND TARGET fabricdiag-collector)
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_Interpreter_FOUND)
    add_test(NAME grafana_dashboards
      COMMAND ${Python3_EXECUTABLE}
              ${CMAKE_CURRENT_LIST_DIR}/grafana_dashboards_test.py
              ${PROJECT_SOURCE_DIR} $<TARGET_FILE:fabricdiag-sim>
              $<TARGET_FILE:fabricdiag-agent>
              $<TARGET_FILE:fabricdiag-collector> $<TARGET_FILE:fabricdiag>)
    set_tests_properties(grafana_dashboards PROPERTIES
      SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS deploy)
  endif()
endif()

# Grafana-managed alert rules: the provisioning format, the same alerts as
# the Prometheus rules, runbook anchors, and every query through promtool.
# Reads the source tree only, so sanitized builds run it too.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME grafana_alerting
    COMMAND ${Python3_EXECUTABLE}
            ${CMAKE_CURRENT_LIST_DIR}/grafana_alerting_test.py
            ${PROJECT_SOURCE_DIR})
  set_tests_properties(grafana_alerting PROPERTIES
    SKIP_RETURN_CODE 77 TIMEOUT 60 LABELS deploy)
endif()

# Our rules in a real Prometheus scraping a simulated fabric's agents and
# collectors, not under the sanitizers, not alongside the other loopback
# clusters; exit 77 without prometheus (or nats-server):
# - prometheus_e2e: one collector; a PFC storm and a hot expert fire their
#   alerts and resolve; the storm, silenced once its alert fired, stops
#   firing within seconds while the hot expert's alert goes on (~60 s);
# - prometheus_cluster_e2e: 3 NATS servers from deploy/nats/, 3 collectors,
#   agents spread over them; a PFC storm is one alert, not one per
#   collector, and stays the same alert through kill -9 of the analysis
#   leader; then every NATS server killed: each collector says its findings
#   are stale on every surface and the stale alert fires, and all clear once
#   NATS is back (~105 s).
if(NOT FABRICDIAG_SANITIZE AND TARGET fabricdiag-sim AND TARGET fabricdiag
   AND TARGET fabricdiag-collector AND Python3_Interpreter_FOUND)
  foreach(e2e prometheus_e2e prometheus_cluster_e2e)
    add_test(NAME ${e2e}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/${e2e}_test.py
              ${PROJECT_SOURCE_DIR} $<TARGET_FILE:fabricdiag-sim>
              $<TARGET_FILE:fabricdiag-agent>
              $<TARGET_FILE:fabricdiag-collector> $<TARGET_FILE:fabricdiag>)
    if(e2e STREQUAL "prometheus_e2e")
      set(cost 60)
    else()
      set(cost 110)
    endif()
    set_tests_properties(${e2e} PROPERTIES
      SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "deploy;e2e" COST ${cost}
      RESOURCE_LOCK loopback_cluster)
  endforeach()
endif()
