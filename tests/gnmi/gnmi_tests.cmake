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
