# scripts/clang-tidy-cached.py (scripts/test.sh's lint) on a tree of its
# own: what it remembers, what it lints again, its errors. Included from
# tests/CMakeLists.txt; needs python3 and clang-tidy, builds nothing.
find_package(Python3 COMPONENTS Interpreter)
find_program(FABRICDIAG_CLANG_TIDY clang-tidy)
if(Python3_Interpreter_FOUND AND FABRICDIAG_CLANG_TIDY)
  add_test(NAME clang_tidy_cached
    COMMAND ${Python3_EXECUTABLE}
            ${CMAKE_CURRENT_LIST_DIR}/clang_tidy_cached_test.py
            --source_dir=${PROJECT_SOURCE_DIR})
  set_tests_properties(clang_tidy_cached PROPERTIES TIMEOUT 120 LABELS unit)
else()
  message(WARNING "fabricdiag: python3 or clang-tidy not found; clang_tidy_cached is not registered")
endif()

# scripts/check_includes.py: the include rules between folders hold, and a
# forbidden include fails. Needs python3 only.
if(Python3_Interpreter_FOUND)
  add_test(NAME check_includes
    COMMAND ${Python3_EXECUTABLE}
            ${CMAKE_CURRENT_LIST_DIR}/check_includes_test.py
            --source_dir=${PROJECT_SOURCE_DIR})
  set_tests_properties(check_includes PROPERTIES TIMEOUT 60 LABELS unit)
endif()
