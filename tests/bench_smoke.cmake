# SPDX-License-Identifier: Apache-2.0
# qconv-bench runs end to end on one small layer (verified against the reference engine, JSON
# written), also with NCHW tensors, and a bad option is refused with exit status 2.
if(TARGET qconv-bench)
  set(expect_exit ${CMAKE_CURRENT_LIST_DIR}/bench/expect_exit.cmake)
  set(smoke_json ${CMAKE_CURRENT_BINARY_DIR}/bench_smoke.json)
  # On x86-64 the peak share's clock is measured (its loop's value is not refused as implausible,
  # as an add-immediate chain's was on a core that folds those adds), not read from /proc/cpuinfo.
  set(smoke_regex "\"layer\": \"l1.1x1a\".*\"verified\": \"exact\"")
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
    set(smoke_regex "\"clock_source\": \"measured by a dependent-add loop\".*${smoke_regex}")
  endif()
  add_test(NAME bench_smoke
    COMMAND ${CMAKE_COMMAND} -DEXPECT=0 -DEXPECT_FILE=${smoke_json}
            "-DEXPECT_FILE_REGEX=${smoke_regex}"
            -P ${expect_exit} --
            $<TARGET_FILE:qconv-bench> --network resnet50 --layers l1.1x1a --repeat 1
            --json ${smoke_json})
  # The NCHW timing: qconv on NCHW tensors, verified, with the layout in its record.
  set(nchw_json ${CMAKE_CURRENT_BINARY_DIR}/bench_smoke_nchw.json)
  add_test(NAME bench_smoke_nchw
    COMMAND ${CMAKE_COMMAND} -DEXPECT=0 -DEXPECT_FILE=${nchw_json}
            "-DEXPECT_FILE_REGEX=\"layout\": \"nchw\".*\"verified\": \"exact\""
            -P ${expect_exit} --
            $<TARGET_FILE:qconv-bench> --network mobilenet_v2 "--layers=b2.dw 96@112 s2" --layout nchw
            --repeat 1 --json ${nchw_json})
  add_test(NAME bench_bad_option
    COMMAND ${CMAKE_COMMAND} -DEXPECT=2 -P ${expect_exit} -- $<TARGET_FILE:qconv-bench> --bogus)
  # A table of one's own (--table): the small layers' table, one layer on two threads, verified;
  # a table with a column that is not a number is refused with exit status 2.
  set(table_json ${CMAKE_CURRENT_BINARY_DIR}/bench_smoke_table.json)
  add_test(NAME bench_table
    COMMAND ${CMAKE_COMMAND} -DEXPECT=0 -DEXPECT_FILE=${table_json}
            "-DEXPECT_FILE_REGEX=\"layer\": \"3x3 64->64 @7\".*\"verified\": \"exact\""
            -P ${expect_exit} --
            $<TARGET_FILE:qconv-bench> --table ${PROJECT_SOURCE_DIR}/tools/bench/small_layers.csv
            "--layers=3x3 64->64 @7" --network late --threads 2 --repeat 1 --json ${table_json})
  # The depthwise blocks' table (tools/bench/depthwise_blocks.csv): every layer verified against
  # the reference engine (exit status 1 where one differs).
  set(blocks_json ${CMAKE_CURRENT_BINARY_DIR}/bench_depthwise_blocks.json)
  add_test(NAME bench_depthwise_blocks
    COMMAND ${CMAKE_COMMAND} -DEXPECT=0 -DEXPECT_FILE=${blocks_json}
            "-DEXPECT_FILE_REGEX=\"layer\": \"96 @80\".*\"verified\": \"exact\""
            -P ${expect_exit} --
            $<TARGET_FILE:qconv-bench> --table
            ${PROJECT_SOURCE_DIR}/tools/bench/depthwise_blocks.csv --peer none --repeat 1
            --json ${blocks_json})
  add_test(NAME bench_bad_table
    COMMAND ${CMAKE_COMMAND} -DEXPECT=2 -P ${expect_exit} -- $<TARGET_FILE:qconv-bench>
            --table ${CMAKE_CURRENT_LIST_DIR}/bench/bad_table.csv --repeat 1)
  set_tests_properties(bench_smoke bench_smoke_nchw bench_bad_option bench_table bench_bad_table
                       bench_depthwise_blocks
                       PROPERTIES LABELS bench TIMEOUT 60)
endif()
