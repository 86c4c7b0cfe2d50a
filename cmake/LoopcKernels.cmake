# loopc_add_kernels(<target> SOURCES <file.loop>... [CPU <name>] [GPU <sm_XX>...]
#                   [KERNELS <name>...] [PREFIX <prefix>] [UNSAFE])
#
# Compiles each .loop file's kernels ahead of time into an object file linked
# into <target>, with a C header named after the file and the prefix
# (<prefix><file>.h) that <target> can include: one function per kernel
# (docs/embedding.md). The files a source imports are tracked, so editing
# them rebuilds it. CPU is the LLVM CPU the code is for (default "native":
# the building machine's); GPU embeds the kernels' GPU code for those
# architectures too, and each function then runs on the GPU when one is
# present (LOOPC_DEVICE, loopc_use_device); KERNELS limits the functions to those kernels:
# each source keeps the ones it defines, and a name no source defines is an
# error. PREFIX goes before each kernel's name to make its function's
# (`mylib_` gives mylib_matmul), against clashes with other C names.
# Every array index not proven in range is checked (an index out of range
# is LOOPC_ERROR_KERNEL_FAULT with a located message instead of a wild
# access); UNSAFE leaves them unchecked (BOUNDS_CHECK, the default, is
# accepted and changes nothing). Calls for one target may compile one source again with another
# PREFIX; a C function that two sources of a target define is an error at
# build time, naming both.

# Run as a script (cmake -P) by the check step of each call, after the
# headers are generated: reads the manifest the call wrote (the target's
# headers and their sources so far, the call's headers and KERNELS).
if(CMAKE_SCRIPT_MODE_FILE AND LOOPC_CHECK_MANIFEST)
  cmake_policy(VERSION 3.19) # IN_LIST
  include(${LOOPC_CHECK_MANIFEST})
  list(LENGTH loopc_headers header_count)
  math(EXPR last "${header_count} - 1")
  foreach(i RANGE ${last})
    list(GET loopc_headers ${i} header)
    list(GET loopc_sources ${i} source)
    file(STRINGS ${header} declarations REGEX "^loopc_status [A-Za-z0-9_]+\\(")
    foreach(declaration IN LISTS declarations)
      string(REGEX REPLACE "^loopc_status ([A-Za-z0-9_]+)\\(.*" "\\1" symbol "${declaration}")
      if(DEFINED defined_by_${symbol})
        message(FATAL_ERROR "loopc_add_kernels: the C function ${symbol} of ${loopc_target} is "
                            "defined by both ${defined_by_${symbol}} and ${source}: keep one with "
                            "KERNELS, or compile them with different PREFIXes")
      endif()
      set(defined_by_${symbol} ${source})
    endforeach()
    if(header IN_LIST loopc_call_headers)
      file(STRINGS ${header} comments REGEX "^/\\* kernel [A-Za-z0-9_]+ \\(")
      foreach(comment IN LISTS comments)
        string(REGEX REPLACE "^/\\* kernel ([A-Za-z0-9_]+) \\(.*" "\\1" kernel "${comment}")
        list(APPEND call_kernels ${kernel})
      endforeach()
    endif()
  endforeach()
  foreach(kernel IN LISTS loopc_call_kernels)
    if(NOT kernel IN_LIST call_kernels)
      list(JOIN loopc_call_sources " " sources)
      message(FATAL_ERROR "loopc_add_kernels: KERNELS names '${kernel}', which no source of "
                          "this call for ${loopc_target} defines (${sources})")
    endif()
  endforeach()
  file(TOUCH ${LOOPC_CHECK_STAMP})
  return()
endif()


function(loopc_add_kernels target)
  cmake_parse_arguments(PARSE_ARGV 1 LOOPC "BOUNDS_CHECK;UNSAFE" "CPU;PREFIX" "SOURCES;KERNELS;GPU")
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
  if(LOOPC_UNSAFE AND LOOPC_BOUNDS_CHECK)
    message(FATAL_ERROR "loopc_add_kernels: UNSAFE and BOUNDS_CHECK contradict each other")
  endif()
  if(LOOPC_UNSAFE)
    list(APPEND kernel_options --unsafe)
  endif()
  if(LOOPC_PREFIX)
    list(APPEND kernel_options --prefix ${LOOPC_PREFIX})
  endif()
  foreach(kernel IN LISTS LOOPC_KERNELS)
    list(APPEND kernel_options --kernel ${kernel})
  endforeach()
  if(LOOPC_KERNELS)
    list(APPEND kernel_options --skip-missing-kernels)
  endif()
  set(object_options)
  if(LOOPC_GPU)
    list(JOIN LOOPC_GPU "," gpus)
    list(APPEND object_options --gpu ${gpus})
  endif()
  set(output_dir ${CMAKE_CURRENT_BINARY_DIR}/loopc_kernels/${target})
  file(MAKE_DIRECTORY ${output_dir})
  # The target's headers and their sources over all its calls, for the check
  # that no C function is defined twice.
  get_target_property(target_headers ${target} LOOPC_KERNEL_HEADERS)
  get_target_property(target_sources ${target} LOOPC_KERNEL_SOURCES)
  if(NOT target_headers)
    set(target_headers)
    set(target_sources)
  endif()
  set(call_headers)
  set(call_sources)
  foreach(source IN LISTS LOOPC_SOURCES)
    get_filename_component(source ${source} ABSOLUTE)
    # lin.f32.loop gives lin.f32.h: only the last extension goes. The prefix
    # makes the names of one source's calls with different PREFIXes differ.
    get_filename_component(name ${source} NAME_WLE)
    set(name ${LOOPC_PREFIX}${name})
    set(header ${output_dir}/${name}.h)
    if(header IN_LIST target_headers)
      message(FATAL_ERROR "loopc_add_kernels: ${target} already compiles a source named "
                          "${source} with PREFIX '${LOOPC_PREFIX}': both would give ${name}.h "
                          "(and the same functions): give the sources different names or "
                          "this call another PREFIX")
    endif()
    list(APPEND target_headers ${header})
    list(APPEND target_sources ${source})
    list(APPEND call_headers ${header})
    list(APPEND call_sources ${source})
    set(object ${output_dir}/${name}${CMAKE_C_OUTPUT_EXTENSION})
    if(NOT CMAKE_C_OUTPUT_EXTENSION)
      set(object ${output_dir}/${name}.o)
    endif()
    add_custom_command(
      OUTPUT ${object} ${header}
      COMMAND loopc::loopc compile ${source} --emit header -o ${header} ${kernel_options}
      COMMAND loopc::loopc compile ${source} --emit object -o ${object} --cpu ${LOOPC_CPU}
              --depfile ${object}.d ${kernel_options} ${object_options}
      DEPENDS ${source} loopc::loopc
      DEPFILE ${object}.d
      COMMENT "loopc: compiling the kernels of ${source} for ${target}"
      VERBATIM)
    set_source_files_properties(${object} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
    target_sources(${target} PRIVATE ${object} ${header})
  endforeach()
  set_target_properties(${target} PROPERTIES LOOPC_KERNEL_HEADERS "${target_headers}"
                                             LOOPC_KERNEL_SOURCES "${target_sources}")

  # The check runs once the headers exist and before anything of the target
  # links (its stamp is one of the target's sources).
  list(LENGTH target_headers call_number)
  set(manifest ${output_dir}/check_${call_number}.cmake)
  set(stamp ${output_dir}/check_${call_number}.stamp)
  file(CONFIGURE OUTPUT ${manifest} CONTENT "set(loopc_target [==[${target}]==])
set(loopc_headers [==[${target_headers}]==])
set(loopc_sources [==[${target_sources}]==])
set(loopc_call_headers [==[${call_headers}]==])
set(loopc_call_sources [==[${call_sources}]==])
set(loopc_call_kernels [==[${LOOPC_KERNELS}]==])
" @ONLY)
  add_custom_command(
    OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DLOOPC_CHECK_MANIFEST=${manifest} -DLOOPC_CHECK_STAMP=${stamp}
            -P ${CMAKE_CURRENT_FUNCTION_LIST_FILE}
    DEPENDS ${target_headers} ${manifest} ${CMAKE_CURRENT_FUNCTION_LIST_FILE}
    COMMENT "loopc: checking the kernel functions of ${target}"
    VERBATIM)
  target_sources(${target} PRIVATE ${stamp})
  target_include_directories(${target} PRIVATE ${output_dir})
  target_link_libraries(${target} PRIVATE loopc::runtime m)
endfunction()
