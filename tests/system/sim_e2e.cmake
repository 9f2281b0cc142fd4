# Real loopback clusters (sim, agents, collector, CLI as processes) in real
# time, so timing matters: not repeated under the sanitizers, and never
# alongside each other or the demo test (RESOURCE_LOCK loopback_cluster).
# - sim_faults_e2e: every fault the simulator injects, found by the real
#   system within 3 intervals (strong faults) or 5, and resolved within 10
#   (the simulator ticking 5 times per interval); nothing raised in
#   healthy phases nor with every CPU busy; agent and collector killed -9
#   and restarted mid-run, a NIC disappearing; leaf-1 served over gNMI
#   (SONiC, 1 s counter polls) through the gNMI bridge, its wave B faults
#   held to the same budget (~90 s at 0.5 s intervals);
# - page_browser: the collector's live page in headless Chromium on a
#   cluster with a hot expert, behind a token file (the page's sign-in,
#   a refused token, a reload, log out); screenshots land in the test's
#   working directory.
if(NOT FABRICDIAG_SANITIZE AND TARGET fabricdiag-sim AND TARGET fabricdiag
   AND TARGET fabricdiag-collector AND TARGET fabricdiag-gnmi-bridge)
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_Interpreter_FOUND)
    foreach(test_name sim_faults_e2e page_browser)
      if(test_name STREQUAL "sim_faults_e2e")
        set(script sim_faults_e2e_test.py)
        set(timeout 300)
        set(cost 90)
        set(more $<TARGET_FILE:fabricdiag-gnmi-bridge>)
      else()
        set(script page_browser_test.py)
        set(timeout 240)
        set(cost 15)
        set(more)
      endif()
      add_test(NAME ${test_name}
        COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/${script}
                $<TARGET_FILE:fabricdiag-sim> $<TARGET_FILE:fabricdiag-agent>
                $<TARGET_FILE:fabricdiag-collector> $<TARGET_FILE:fabricdiag>
                ${more})
      set_tests_properties(${test_name} PROPERTIES
        TIMEOUT ${timeout} LABELS e2e COST ${cost}
        RESOURCE_LOCK loopback_cluster)
    endforeach()
  endif()
endif()

# gnmi_e2e_*: the leaves reached only over gNMI (fabricdiag-sim's targets,
# polling their counters every second, and fabricdiag-gnmi-bridge): an ECMP
# polarization and a PFC storm's switch-side victims found within the
# detection budget with steady rates, a switch's gNMI server away for 3 s and
# back; OpenConfig in plaintext with targets that answer overlapping
# subscriptions, SONiC over TLS with a user name and password (~50 s each).
if(NOT FABRICDIAG_SANITIZE AND TARGET fabricdiag-sim AND TARGET fabricdiag
   AND TARGET fabricdiag-collector AND TARGET fabricdiag-gnmi-bridge)
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_Interpreter_FOUND)
    foreach(dialect openconfig+overlap sonic+tls)
      string(REPLACE "+" "_" name "gnmi_e2e_${dialect}")
      add_test(NAME ${name}
        COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/gnmi_e2e_test.py
                $<TARGET_FILE:fabricdiag-sim> $<TARGET_FILE:fabricdiag-agent>
                $<TARGET_FILE:fabricdiag-collector> $<TARGET_FILE:fabricdiag>
                $<TARGET_FILE:fabricdiag-gnmi-bridge> ${dialect})
      set_tests_properties(${name} PROPERTIES
        TIMEOUT 120 LABELS e2e COST 50 RESOURCE_LOCK loopback_cluster)
    endforeach()
  endif()
endif()
