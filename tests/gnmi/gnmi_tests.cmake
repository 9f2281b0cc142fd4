# gNMI paths, values and their mapping to counter meanings (gnmi/).
if(TARGET fabricdiag_gnmi_core)
  fabricdiag_add_test(gnmi_core_test
    SOURCES
      ${CMAKE_CURRENT_LIST_DIR}/gnmi_path_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/typed_value_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/path_map_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/fixtures.cc
    LIBS fabricdiag_gnmi_core absl::strings)
endif()

if(TARGET fabricdiag_gnmi_session)
  fabricdiag_add_test(gnmi_switch_state_test
    SOURCES
      ${CMAKE_CURRENT_LIST_DIR}/switch_state_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/sample_phase_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/lldp_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/fixtures.cc
    LIBS fabricdiag_gnmi_session nlohmann_json::nlohmann_json absl::strings)
endif()

if(TARGET fabricdiag_gnmi_session)
  add_library(fabricdiag_gnmi_fake_target STATIC
    ${CMAKE_CURRENT_LIST_DIR}/fake_gnmi_target.cc)
  fabricdiag_target_defaults(fabricdiag_gnmi_fake_target)
  target_link_libraries(fabricdiag_gnmi_fake_target PUBLIC
    fabricdiag_gnmi_core gRPC::grpc++ absl::status absl::strings absl::time)
  fabricdiag_add_test(gnmi_switch_session_test
    SOURCES
      ${CMAKE_CURRENT_LIST_DIR}/switch_session_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/fixtures.cc
    LIBS fabricdiag_gnmi_session fabricdiag_gnmi_fake_target
         fabricdiag_test_util absl::cleanup absl::strings)
endif()

# The bridge process against a real collector process and a fake target.
if(TARGET fabricdiag-gnmi-bridge AND TARGET fabricdiag-collector)
  fabricdiag_add_test(gnmi_bridge_e2e_test
    SOURCES
      ${CMAKE_CURRENT_LIST_DIR}/bridge_e2e_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/fixtures.cc
    LABEL e2e
    LIBS fabricdiag_gnmi_fake_target fabricdiag_collector_proto
         fabricdiag_analysis_layout fabricdiag_test_util
         nlohmann_json::nlohmann_json absl::strings)
  target_compile_definitions(gnmi_bridge_e2e_test PRIVATE
    FABRICDIAG_GNMI_BRIDGE_BINARY="$<TARGET_FILE:fabricdiag-gnmi-bridge>"
    FABRICDIAG_COLLECTOR_BINARY="$<TARGET_FILE:fabricdiag-collector>")
  add_dependencies(gnmi_bridge_e2e_test fabricdiag-gnmi-bridge
    fabricdiag-collector)
endif()

if(TARGET fabricdiag_gnmi_bridge)
  fabricdiag_add_test(gnmi_bridge_test
    SOURCES
      ${CMAKE_CURRENT_LIST_DIR}/bridge_app_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/bridge_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/../client/fake_collector_client.cc
      ${CMAKE_CURRENT_LIST_DIR}/fixtures.cc
    LIBS fabricdiag_gnmi_bridge fabricdiag_gnmi_fake_target
         fabricdiag_test_util absl::strings)
endif()

# The bridge's LLDP against the simulator's gNMI targets.
if(TARGET fabricdiag_gnmi_bridge AND TARGET fabricdiag_sim)
  fabricdiag_add_test(gnmi_bridge_lldp_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/bridge_lldp_test.cc
    LIBS fabricdiag_gnmi_bridge fabricdiag_sim fabricdiag_test_ingest_server
         fabricdiag_test_util)
endif()

# The bridge's rates against the simulator's gNMI targets: overlapping
# subscriptions, PFC counters polled every 10 s.
if(TARGET fabricdiag_gnmi_session AND TARGET fabricdiag_sim)
  fabricdiag_add_test(gnmi_bridge_sim_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/bridge_sim_test.cc
    LIBS fabricdiag_gnmi_session fabricdiag_sim fabricdiag_grpc_status
         absl::strings)
endif()
