# Fails when a binary lists libcuda among its NEEDED libraries: every binary must start on a
# machine without the GPU driver (gpu/device.c and cudart open it on first use).
# Run by CTest: cmake -DFILES=a:b -P no_libcuda.cmake
string(REPLACE ":" ";" FILES "${FILES}")
foreach(f IN LISTS FILES)
  execute_process(COMMAND readelf -d "${f}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "readelf -d ${f} failed")
  endif()
  if(out MATCHES "NEEDED[^\n]*libcuda\\.so")
    message(FATAL_ERROR "${f} needs libcuda at load time:\n${out}")
  endif()
  message(STATUS "ok: ${f} does not need libcuda")
endforeach()
