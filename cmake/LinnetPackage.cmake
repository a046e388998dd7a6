# The C++ package.
#
# liblinnet.so (target linnet_runtime, Linnet::runtime): linnet::nest::load
# and the Tensor as one shared library behind the public headers, what host
# programs link (examples/, and any program through find_package(Linnet)). It
# holds linnet_nest and what linnet_nest needs (the front end, the reference
# backend, the weights readers, the devices) so host code sees nothing but
# runtime/nest/nest.h; being a library of its own, it can find where it was
# installed, and so that prefix's standard library and linnetc
# (common/install.h). The `linnet` and `linnetc` executables link the static
# libraries as before.
#
# `cmake --install build --prefix P` puts under P:
#   bin/linnetc, bin/linnet
#   lib/liblinnet.so
#   include/linnet/{nest,common}/...    nest/nest.h and exactly what it includes
#   share/linnet/stdlib/std/...          the standard library
#   lib/cmake/Linnet/                    LinnetConfig.cmake, its version, the targets
# A prefix can be moved: nothing in it names the build or source tree.

if(NOT TARGET linnet_nest)
  return()
endif()

# The public headers: runtime/nest/nest.h and what it includes, transitively
# (no compiler/ or backend header; tests/install checks each compiles alone
# from the installed folder).
set(LINNET_PUBLIC_HEADERS
    runtime/nest/nest.h runtime/nest/tensor.h
    common/dtype.h common/storage.h common/storage_formats.def)
set(LINNET_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/linnet)

# A shared library's objects must be position-independent, and so must every
# static library it takes objects from: linnet_nest and its closure.
# -fno-semantic-interposition keeps GCC's code for them as the executables'
# was (no symbol of ours is meant to be interposed).
function(linnet_position_independent target)
  get_target_property(imported ${target} IMPORTED)
  get_target_property(type ${target} TYPE)
  get_target_property(done ${target} POSITION_INDEPENDENT_CODE)
  if(imported OR NOT type STREQUAL "STATIC_LIBRARY" OR done)
    return()
  endif()
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -fno-semantic-interposition)
  endif()
  get_target_property(libs ${target} LINK_LIBRARIES)
  foreach(lib IN LISTS libs)
    if(TARGET ${lib})
      linnet_position_independent(${lib})
    endif()
  endforeach()
endfunction()
linnet_position_independent(linnet_nest)

# linnet_nest's objects, all of them (from its archive a library would take
# only what it references, which is nothing); the rest of its closure from
# the archives as usual. --no-undefined: a missing piece fails the link here,
# not a host program's (not with the sanitizers, whose runtime the program
# brings).
add_library(linnet_runtime SHARED $<TARGET_OBJECTS:linnet_nest>)
add_library(Linnet::runtime ALIAS linnet_runtime)
target_link_libraries(linnet_runtime PRIVATE linnet_nest)
if(NOT LINNET_SANITIZE AND NOT LINNET_FUZZ)
  target_link_options(linnet_runtime PRIVATE -Wl,--no-undefined)
endif()
target_include_directories(linnet_runtime INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/runtime> $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
  $<INSTALL_INTERFACE:${LINNET_INSTALL_INCLUDEDIR}>)
target_compile_features(linnet_runtime INTERFACE cxx_std_20)
set_target_properties(linnet_runtime PROPERTIES
  OUTPUT_NAME linnet EXPORT_NAME runtime
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})

# --- cmake --install ----------------------------------------------------------

set(LINNET_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Linnet)
set(tools linnetc)
if(TARGET linnet)
  list(APPEND tools linnet)
endif()
foreach(tool ${tools})
  set_target_properties(${tool} PROPERTIES EXPORT_NAME ${tool})
endforeach()
# The installed tools keep the run paths of libraries outside the build
# (LLVM's, under LINNET_LLVM_ROOT) and drop the build tree's.
set_target_properties(${tools} linnet_runtime PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS ${tools} linnet_runtime EXPORT LinnetTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/stdlib/ DESTINATION ${LINNET_INSTALL_STDLIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/nest/families/ DESTINATION ${LINNET_INSTALL_FAMILIESDIR})
foreach(header ${LINNET_PUBLIC_HEADERS})
  get_filename_component(folder ${header} DIRECTORY)
  get_filename_component(folder ${folder} NAME)  # runtime/nest -> nest, common -> common
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${LINNET_INSTALL_INCLUDEDIR}/${folder})
endforeach()

include(CMakePackageConfigHelpers)
install(EXPORT LinnetTargets NAMESPACE Linnet:: DESTINATION ${LINNET_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/LinnetConfig.cmake.in
  ${PROJECT_BINARY_DIR}/LinnetConfig.cmake
  INSTALL_DESTINATION ${LINNET_INSTALL_CMAKEDIR}
  PATH_VARS LINNET_INSTALL_STDLIBDIR LINNET_INSTALL_INCLUDEDIR)
# 0.x: a new minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/LinnetConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/LinnetConfig.cmake ${PROJECT_BINARY_DIR}/LinnetConfigVersion.cmake
  DESTINATION ${LINNET_INSTALL_CMAKEDIR})
