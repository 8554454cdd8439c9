# NvidiaFind.cmake: the search that FindCUDNN.cmake and FindNCCL.cmake share (sk_find_nvidia),
# and its helpers.
#
# sk_nvidia_wheel_dir(NAME HEADER OUT): the folder of a Python interpreter's
# pip wheel nvidia-NAME-cu* (site-packages/nvidia/NAME, holding include/HEADER and lib/), or
# OUT-NOTFOUND. The interpreter is SK_NVIDIA_WHEEL_PYTHON (a cache variable; default python3
# on PATH). nvidia.NAME may be a namespace package without __file__: its __path__ is taken,
# then every sys.path entry's nvidia/NAME. (PyTorch installs these wheels; they hold only the
# versioned library, e.g. lib/libcudnn.so.9, no libcudnn.so.)
include_guard(GLOBAL)
include(FindPackageHandleStandardArgs)

function(sk_nvidia_wheel_dir name header out)
  set(${out} "${out}-NOTFOUND" PARENT_SCOPE)
  if(NOT SK_NVIDIA_WHEEL_PYTHON)
    find_program(SK_NVIDIA_WHEEL_PYTHON NAMES python3 DOC "Python whose pip wheels nvidia-cudnn/nccl-cu* are searched")
  endif()
  if(NOT SK_NVIDIA_WHEEL_PYTHON)
    return()
  endif()
  set(script [=[
import importlib, os, sys
name, header = sys.argv[1], sys.argv[2]
cands = []
try:
    m = importlib.import_module("nvidia." + name)
    cands += list(getattr(m, "__path__", [])) + ([os.path.dirname(m.__file__)] if getattr(m, "__file__", None) else [])
except Exception:
    pass
cands += [os.path.join(p, "nvidia", name) for p in sys.path if p]
for c in cands:
    if os.path.isfile(os.path.join(c, "include", header)) and os.path.isdir(os.path.join(c, "lib")):
        print(os.path.realpath(c))
        break
]=])
  execute_process(COMMAND ${SK_NVIDIA_WHEEL_PYTHON} -c "${script}" ${name} ${header}
                  OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND dir)
    set(${out} "${dir}" PARENT_SCOPE)
  endif()
endfunction()

# sk_header_version(FILE OUT MACRO...): "A.B.C" from the #define MACRO N lines of FILE, in the
# order given; empty when the file or a macro is missing.
function(sk_header_version file out)
  set(parts "")
  if(EXISTS "${file}")
    file(STRINGS "${file}" lines REGEX "^#define[ \t]+[A-Z_]+[ \t]+[0-9]+")
    foreach(macro ${ARGN})
      set(value "")
      foreach(line ${lines})
        if(line MATCHES "^#define[ \t]+${macro}[ \t]+([0-9]+)")
          set(value ${CMAKE_MATCH_1})
        endif()
      endforeach()
      if(value STREQUAL "")
        set(${out} "" PARENT_SCOPE)
        return()
      endif()
      list(APPEND parts ${value})
    endforeach()
  endif()
  list(JOIN parts "." v)
  set(${out} "${v}" PARENT_SCOPE)
endfunction()

# sk_find_nvidia(PKG NAME HEADER HINTS dir... NAMES lib... VERSION_HEADERS h... VERSION_MACROS m...)
# finds HEADER and a library of NAMES, first in the HINTS prefixes (include/, lib64/, lib/...),
# then the system's default prefixes, then the pip wheel nvidia-NAME-cu*; PKG_WHEEL_ONLY=ON
# searches the wheel alone. The library names are tried folder by folder (NAMES_PER_DIR), so
# a hint's libcudnn.so.9 comes before a later folder's libcudnn.so. Sets PKG_FOUND,
# PKG_VERSION (the first VERSION_HEADERS file stating every VERSION_MACROS), PKG_INCLUDE_DIR,
# PKG_LIBRARY, PKG_LIBRARY_DIR, PKG_SOURCE (in words: where it was found) and the imported
# target PKG::NAME.
macro(sk_find_nvidia pkg name header)
  cmake_parse_arguments(_skf "" "" "HINTS;NAMES;VERSION_HEADERS;VERSION_MACROS" ${ARGN})
  set(${pkg}_SOURCE "")
  if(NOT ${pkg}_WHEEL_ONLY)
    find_path(${pkg}_INCLUDE_DIR ${header} HINTS ${_skf_HINTS} PATH_SUFFIXES include include/x86_64-linux-gnu)
    find_library(${pkg}_LIBRARY NAMES ${_skf_NAMES} NAMES_PER_DIR HINTS ${_skf_HINTS}
                 PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu)
  endif()
  if(NOT ${pkg}_INCLUDE_DIR OR NOT ${pkg}_LIBRARY)
    sk_nvidia_wheel_dir(${name} ${header} _skf_wheel)
    if(_skf_wheel)
      unset(${pkg}_INCLUDE_DIR CACHE)
      unset(${pkg}_LIBRARY CACHE)
      find_path(${pkg}_INCLUDE_DIR ${header} PATHS ${_skf_wheel}/include NO_DEFAULT_PATH)
      find_library(${pkg}_LIBRARY NAMES ${_skf_NAMES} NAMES_PER_DIR PATHS ${_skf_wheel}/lib NO_DEFAULT_PATH)
      set(${pkg}_SOURCE "pip wheel of ${SK_NVIDIA_WHEEL_PYTHON} (${_skf_wheel})")
    endif()
  endif()
  if(${pkg}_INCLUDE_DIR AND NOT ${pkg}_SOURCE)
    set(${pkg}_SOURCE "${${pkg}_INCLUDE_DIR}")
  endif()
  set(${pkg}_VERSION "")
  foreach(_skf_h ${_skf_VERSION_HEADERS})
    if(NOT ${pkg}_VERSION AND ${pkg}_INCLUDE_DIR)
      sk_header_version(${${pkg}_INCLUDE_DIR}/${_skf_h} ${pkg}_VERSION ${_skf_VERSION_MACROS})
    endif()
  endforeach()
  find_package_handle_standard_args(${pkg} REQUIRED_VARS ${pkg}_LIBRARY ${pkg}_INCLUDE_DIR VERSION_VAR ${pkg}_VERSION)
  if(${pkg}_FOUND)
    get_filename_component(${pkg}_LIBRARY_DIR "${${pkg}_LIBRARY}" DIRECTORY)
    if(NOT TARGET ${pkg}::${name})
      add_library(${pkg}::${name} UNKNOWN IMPORTED)
      set_target_properties(${pkg}::${name} PROPERTIES IMPORTED_LOCATION "${${pkg}_LIBRARY}"
                                                       INTERFACE_INCLUDE_DIRECTORIES "${${pkg}_INCLUDE_DIR}")
    endif()
  endif()
  mark_as_advanced(${pkg}_INCLUDE_DIR ${pkg}_LIBRARY)
endmacro()
