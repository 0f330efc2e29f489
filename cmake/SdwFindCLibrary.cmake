# sdw_find_c_library(TARGET PKG <pkg-config name> HEADER <header> NAMES <lib names...>
#                    INSTALL <Debian package>)
# Finds a C library and makes an imported target for it. pkg-config's answer is
# used as a hint only: the .pc files of Debian packages unpacked into a private
# prefix (tools/gpu/env.sh) still name /usr, so the header and the library are
# searched for on CMAKE_PREFIX_PATH first, then where pkg-config says, then in
# the system's directories.
function(sdw_find_c_library target)
  cmake_parse_arguments(L "" "PKG;HEADER;INSTALL" "NAMES" ${ARGN})
  string(MAKE_C_IDENTIFIER "${L_PKG}" id)
  string(TOUPPER "${id}" id)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(SDW_PC_${id} QUIET ${L_PKG})
  endif()
  find_path(SDW_${id}_INCLUDE_DIR ${L_HEADER} HINTS ${SDW_PC_${id}_INCLUDE_DIRS} ${SDW_PC_${id}_INCLUDEDIR})
  find_library(SDW_${id}_LIBRARY NAMES ${L_NAMES} HINTS ${SDW_PC_${id}_LIBRARY_DIRS} ${SDW_PC_${id}_LIBDIR})
  if(NOT SDW_${id}_INCLUDE_DIR OR NOT SDW_${id}_LIBRARY)
    message(FATAL_ERROR "${L_PKG} not found (header ${L_HEADER}: ${SDW_${id}_INCLUDE_DIR}, "
                        "library ${L_NAMES}: ${SDW_${id}_LIBRARY}); on Debian: apt-get install ${L_INSTALL}")
  endif()
  add_library(${target} UNKNOWN IMPORTED)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION "${SDW_${id}_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${SDW_${id}_INCLUDE_DIR}")
  message(STATUS "SDW: ${L_PKG}: ${SDW_${id}_LIBRARY}")
endfunction()
