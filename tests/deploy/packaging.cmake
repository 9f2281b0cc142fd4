# Deployment tests, included from tests/CMakeLists.txt. All carry
# the "deploy" label (ctest -L deploy) and exit 77 (skipped) when a tool
# they need (systemd-analyze, cpack/dpkg-deb, python3-yaml) is missing.
# The agent's unit is verified by systemd_verify_agent in
# tests/CMakeLists.txt; the same script checks the collector's here.

# The collector's unit: `systemd-analyze verify` without a single warning,
# and its `systemd-analyze security --offline=yes` exposure printed.
if(TARGET fabricdiag-collector)
  add_test(NAME systemd_verify_collector
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/systemd_verify_test.sh
            ${PROJECT_SOURCE_DIR}/deploy/systemd $<TARGET_FILE:fabricdiag-collector>)
  set_tests_properties(systemd_verify_collector PROPERTIES
    SKIP_RETURN_CODE 77
    LABELS deploy)
endif()

# The gNMI bridge's unit (shipped in the collector's package).
if(TARGET fabricdiag-gnmi-bridge)
  add_test(NAME systemd_verify_gnmi_bridge
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/systemd_verify_test.sh
            ${PROJECT_SOURCE_DIR}/deploy/systemd $<TARGET_FILE:fabricdiag-gnmi-bridge>)
  set_tests_properties(systemd_verify_gnmi_bridge PROPERTIES
    SKIP_RETURN_CODE 77
    LABELS deploy)
endif()

# cpack on this build tree into a temporary directory, then the packages'
# contents, control data, maintainer scripts and an install/remove/purge
# cycle in a throwaway root. cpack builds nothing: the test relies on the
# packaged targets being built (a full build does it). Not registered in a
# sanitized build: packages are built from a release tree, and a skipped
# test would fail scripts/test.sh. ~6 s.
if(NOT FABRICDIAG_SANITIZE AND TARGET fabricdiag-agent
   AND TARGET fabricdiag-collector AND TARGET fabricdiag
   AND TARGET fabricdiag-gnmi-bridge)
  add_test(NAME packaging_deb
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/packaging_test.sh
            ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR} ${PROJECT_VERSION}
            ${FABRICDIAG_SANITIZE})
  set_tests_properties(packaging_deb PROPERTIES
    SKIP_RETURN_CODE 77
    TIMEOUT 120
    LABELS deploy)
endif()

# The agent's DaemonSet: valid YAML with the structure its header promises,
# and only flags the built agent knows.
if(TARGET fabricdiag-agent)
  add_test(NAME k8s_daemonset_agent
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/k8s_daemonset_test.sh
            ${PROJECT_SOURCE_DIR}/deploy/kubernetes/fabricdiag-agent-daemonset.yaml
            $<TARGET_FILE:fabricdiag-agent>)
  set_tests_properties(k8s_daemonset_agent PROPERTIES
    SKIP_RETURN_CODE 77
    LABELS deploy)
endif()
