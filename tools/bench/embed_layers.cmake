# SPDX-License-Identifier: Apache-2.0
# Turns bench/layers.csv into C++ initialisers for the bench's layer table, so that the CSV is the
# one source of truth and the bench needs no file at run time.
#   cmake -DCSV=<layers.csv> -DOUT=<layers_table.inc> -P embed_layers.cmake
# Each data row becomes `{"network", "layer", "op", in_channels, ..., count, macs_batch1},`.
# The script only checks the shape of the file (header, field count, integer columns); what the
# numbers mean (the op name, the MAC counts) is checked by the bench itself, which can compute it.

set(expected_header
  "network,layer,op,in_channels,out_channels,in_height,in_width,groups,kernel_h,kernel_w,stride_h,stride_w,pad_top,pad_bottom,pad_left,pad_right,count,macs_batch1")
set(text_columns 3)  # network, layer, op; every later column is a non-negative integer

if(NOT DEFINED CSV OR NOT DEFINED OUT)
  message(FATAL_ERROR "embed_layers.cmake needs -DCSV=<layers.csv> -DOUT=<output .inc>")
endif()

file(STRINGS "${CSV}" lines)
list(LENGTH lines line_count)
if(line_count LESS 2)
  message(FATAL_ERROR "${CSV}: no data rows")
endif()

list(GET lines 0 header)
string(STRIP "${header}" header)
if(NOT header STREQUAL expected_header)
  message(FATAL_ERROR "${CSV}: header is\n  ${header}\nbut the bench reads the columns\n  ${expected_header}")
endif()
string(REPLACE "," ";" header_fields "${header}")
list(LENGTH header_fields column_count)

set(body "// Generated from layers.csv by embed_layers.cmake; do not edit.\n")
math(EXPR last "${line_count} - 1")
foreach(i RANGE 1 ${last})
  list(GET lines ${i} line)
  string(STRIP "${line}" line)
  if(line STREQUAL "")
    continue()
  endif()
  math(EXPR line_number "${i} + 1")
  # The layer names hold spaces, '(', '>', '@' and '/', but CSV quoting is not supported: refuse
  # anything that would need it, or that would break the generated C++ string literal.
  if(line MATCHES "[\"\\\\;]")
    message(FATAL_ERROR "${CSV}:${line_number}: quotes, backslashes and ';' are not supported: ${line}")
  endif()
  string(REPLACE "," ";" fields "${line}")
  list(LENGTH fields field_count)
  if(NOT field_count EQUAL column_count)
    message(FATAL_ERROR "${CSV}:${line_number}: ${field_count} fields, the header has ${column_count}: ${line}")
  endif()
  set(row "")
  set(column 0)
  foreach(field IN LISTS fields)
    list(GET header_fields ${column} name)
    if(column LESS text_columns)
      if(field STREQUAL "")
        message(FATAL_ERROR "${CSV}:${line_number}: column ${name} is empty")
      endif()
      string(APPEND row "\"${field}\", ")
    else()
      if(NOT field MATCHES "^[0-9]+$")
        message(FATAL_ERROR "${CSV}:${line_number}: column ${name} = '${field}' is not a non-negative integer")
      endif()
      string(APPEND row "${field}, ")
    endif()
    math(EXPR column "${column} + 1")
  endforeach()
  string(REGEX REPLACE ", $" "" row "${row}")
  string(APPEND body "{${row}},\n")
endforeach()

# Write only when the content changes, so an unchanged table does not rebuild the bench.
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
