# Links gRPC and what only it uses (abseil, upb, c-ares, re2, address_sorting) from their static
# archives instead of ~55 shared libraries. Why: every process start paid for loading and
# symbol-resolving them (issue 14: `fusetune query` in <= 50 ms; BENCHMARKS.md, "`query`
# start-up"). Debian's -dev packages ship both forms, but their CMake files name only the .so; this
# repoints the imported targets at the .a beside each one. protobuf stays shared: libonnx_proto.so
# links it, and two copies of protobuf in one process would register descriptors twice.
# Include after find_package(gRPC CONFIG), in the top-level directory so every folder sees the
# repointed targets.
get_directory_property(_fusetune_imported IMPORTED_TARGETS)
set(FUSETUNE_STATIC_ARCHIVES "")
foreach(_target IN LISTS _fusetune_imported)
  if(NOT _target MATCHES "^(absl::|gRPC::|c-ares::|re2::)")
    continue()
  endif()
  get_target_property(_type ${_target} TYPE)
  if(NOT _type MATCHES "^(SHARED|UNKNOWN)_LIBRARY$")
    continue()
  endif()
  get_target_property(_location ${_target} IMPORTED_LOCATION_NONE)
  if(NOT _location)
    get_target_property(_location ${_target} IMPORTED_LOCATION)
  endif()
  if(NOT _location MATCHES "\\.so(\\.[0-9]+)*$")
    continue()
  endif()
  string(REGEX REPLACE "\\.so(\\.[0-9]+)*$" ".a" _archive "${_location}")
  if(EXISTS "${_archive}")
    set_target_properties(${_target} PROPERTIES IMPORTED_LOCATION "${_archive}"
                                                IMPORTED_LOCATION_NONE "${_archive}")
    list(APPEND FUSETUNE_STATIC_ARCHIVES ${_target})
  endif()
endforeach()
# gRPC's Findre2.cmake makes re2::re2 an interface target naming `re2` (pkg-config's -lre2).
if(TARGET re2::re2)
  get_target_property(_type re2::re2 TYPE)
  find_library(FUSETUNE_RE2_ARCHIVE NAMES libre2.a)
  if(_type STREQUAL "INTERFACE_LIBRARY" AND FUSETUNE_RE2_ARCHIVE)
    set_target_properties(re2::re2 PROPERTIES INTERFACE_LINK_LIBRARIES "${FUSETUNE_RE2_ARCHIVE}")
    list(APPEND FUSETUNE_STATIC_ARCHIVES re2::re2)
  endif()
endif()
list(LENGTH FUSETUNE_STATIC_ARCHIVES _count)
message(STATUS "gRPC and its dependencies linked statically: ${_count} archives")
