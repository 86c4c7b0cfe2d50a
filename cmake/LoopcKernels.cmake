# loopc_add_kernels(<target> SOURCES <file.loop>... [CPU <name>] [KERNELS <name>...]
#                   [PREFIX <prefix>] [BOUNDS_CHECK])
#
# Compiles each .loop file's kernels ahead of time into an object file linked
# into <target>, with a C header of the same name (<file>.h) that <target> can
# include: one function per kernel (docs/embedding.md). The files a source
# imports are tracked, so editing them rebuilds it. CPU is the LLVM CPU the
# code is for (default "native": the building machine's); KERNELS limits the
# functions to those kernels, which must all be in every source. PREFIX goes
# before each kernel's name to make its function's (`mylib_` gives
# mylib_matmul), against clashes with other C names. BOUNDS_CHECK
# checks every array index (an index out of range is LOOPC_ERROR_KERNEL_FAULT
# with a located message instead of a wild access; slower).
function(loopc_add_kernels target)
  cmake_parse_arguments(PARSE_ARGV 1 LOOPC "BOUNDS_CHECK" "CPU;PREFIX" "SOURCES;KERNELS")
  if(LOOPC_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "loopc_add_kernels: unexpected arguments ${LOOPC_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT LOOPC_SOURCES)
    message(FATAL_ERROR "loopc_add_kernels: no SOURCES given for ${target}")
  endif()
  if(NOT LOOPC_CPU)
    set(LOOPC_CPU native)
  endif()
  set(kernel_options)
  if(LOOPC_BOUNDS_CHECK)
    list(APPEND kernel_options --bounds-check)
  endif()
  if(LOOPC_PREFIX)
    list(APPEND kernel_options --prefix ${LOOPC_PREFIX})
  endif()
  foreach(kernel IN LISTS LOOPC_KERNELS)
    list(APPEND kernel_options --kernel ${kernel})
  endforeach()
  set(output_dir ${CMAKE_CURRENT_BINARY_DIR}/loopc_kernels/${target})
  file(MAKE_DIRECTORY ${output_dir})
  set(names_seen)
  foreach(source IN LISTS LOOPC_SOURCES)
    get_filename_component(source ${source} ABSOLUTE)
    # lin.f32.loop gives lin.f32.h: only the last extension goes.
    get_filename_component(name ${source} NAME_WLE)
    if(name IN_LIST names_seen)
      message(FATAL_ERROR "loopc_add_kernels: two SOURCES of ${target} are named ${name}.loop; "
                          "their headers would both be ${name}.h: give them different names or "
                          "call loopc_add_kernels for another target")
    endif()
    list(APPEND names_seen ${name})
    set(object ${output_dir}/${name}${CMAKE_C_OUTPUT_EXTENSION})
    if(NOT CMAKE_C_OUTPUT_EXTENSION)
      set(object ${output_dir}/${name}.o)
    endif()
    set(header ${output_dir}/${name}.h)
    add_custom_command(
      OUTPUT ${object} ${header}
      COMMAND loopc::loopc compile ${source} --emit header -o ${header} ${kernel_options}
      COMMAND loopc::loopc compile ${source} --emit object -o ${object} --cpu ${LOOPC_CPU}
              --depfile ${object}.d ${kernel_options}
      DEPENDS ${source} loopc::loopc
      DEPFILE ${object}.d
      COMMENT "loopc: compiling the kernels of ${name}.loop"
      VERBATIM)
    set_source_files_properties(${object} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
    target_sources(${target} PRIVATE ${object} ${header})
  endforeach()
  target_include_directories(${target} PRIVATE ${output_dir})
  target_link_libraries(${target} PRIVATE loopc::runtime m)
endfunction()
