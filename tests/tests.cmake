# Every tests/test_*.c is one test program; tests/gpu/test_*.c are GPU tests (label gpu,
# exit 77 = skipped where no GPU is usable); tests/cli/test_*.sh run the real binaries.
# Tests find the source tree through SK_SOURCE_DIR and write under their own temp dirs.
set(SK_TEST_ENV "SK_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
                "SK_TRAIN=$<TARGET_FILE:shakespeare-train>"
                "SK_SAMPLE=$<TARGET_FILE:shakespeare-sample>"
                "OPENBLAS_NUM_THREADS=1")

file(GLOB SK_UNIT_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/test_*.c)
foreach(src ${SK_UNIT_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(${name} PRIVATE shakespeare_core)
  add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${SK_TEST_ENV}" LABELS unit TIMEOUT 600)
endforeach()

file(GLOB SK_GPU_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/gpu/test_*.c)
foreach(src ${SK_GPU_TESTS})
  get_filename_component(name ${src} NAME_WE)
  set(name gpu_${name})
  add_executable(${name} ${src})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(${name} PRIVATE shakespeare_core)
  add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${SK_TEST_ENV}" LABELS gpu
                       SKIP_RETURN_CODE 77 TIMEOUT 900)
endforeach()

file(GLOB SK_CLI_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/cli/test_*.sh)
foreach(src ${SK_CLI_TESTS})
  get_filename_component(name ${src} NAME_WE)
  set(name cli_${name})
  add_test(NAME ${name} COMMAND bash ${src} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${SK_TEST_ENV}" LABELS cli
                       SKIP_RETURN_CODE 77 TIMEOUT 900)
endforeach()

file(GLOB SK_GPU_CLI_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/gpu/test_*.sh)
foreach(src ${SK_GPU_CLI_TESTS})
  get_filename_component(name ${src} NAME_WE)
  set(name gpu_${name})
  add_test(NAME ${name} COMMAND bash ${src} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${SK_TEST_ENV}" LABELS gpu
                       SKIP_RETURN_CODE 77 TIMEOUT 900)
endforeach()

if(SHAKESPEARE_FUZZ)
  file(GLOB SK_FUZZ_TARGETS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
  foreach(src ${SK_FUZZ_TARGETS})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(${name} PRIVATE shakespeare_core)
  endforeach()
endif()
