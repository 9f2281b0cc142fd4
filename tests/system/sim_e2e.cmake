# Issue #5's end-to-end test: every fault the simulator injects, found and
# resolved by the real system (sim, agents, collector, CLI) within 10
# intervals, nothing raised in healthy phases, agent and collector killed
# -9 and restarted mid-run, a NIC disappearing. ~80 s of real time at 0.5 s
# intervals, so timing matters: not repeated under the sanitizers, and never
# alongside the demo test (both run a loopback cluster).
if(NOT FABRICDIAG_SANITIZE AND TARGET fabricdiag-sim AND TARGET fabricdiag
   AND TARGET fabricdiag-collector)
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_Interpreter_FOUND)
    add_test(NAME sim_faults_e2e
      COMMAND ${Python3_EXECUTABLE}
              ${CMAKE_CURRENT_LIST_DIR}/sim_faults_e2e_test.py
              $<TARGET_FILE:fabricdiag-sim> $<TARGET_FILE:fabricdiag-agent>
              $<TARGET_FILE:fabricdiag-collector> $<TARGET_FILE:fabricdiag>)
    set_tests_properties(sim_faults_e2e PROPERTIES
      TIMEOUT 300 LABELS e2e RESOURCE_LOCK loopback_cluster)
  endif()
endif()
