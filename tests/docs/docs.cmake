# The user documentation in docs/ against the code: every flag, metric
# family, finding kind and analysis setting the code defines must be
# documented, and every relative link must resolve. Included from
# tests/CMakeLists.txt. Needs only python3; reads the source tree, builds
# nothing.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME docs_consistency
    COMMAND ${Python3_EXECUTABLE}
            ${CMAKE_CURRENT_LIST_DIR}/docs_consistency_test.py
            --source_dir=${PROJECT_SOURCE_DIR})
  set_tests_properties(docs_consistency PROPERTIES TIMEOUT 60 LABELS unit)
else()
  message(WARNING "fabricdiag: python3 not found; docs_consistency is not registered")
endif()
