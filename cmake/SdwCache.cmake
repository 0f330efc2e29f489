# Use ccache where it is installed: rebuilds on small machines are dominated by
# the few translation units that include LibTorch.
find_program(SDW_CCACHE ccache)
if(SDW_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_C_COMPILER_LAUNCHER ${SDW_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${SDW_CCACHE})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${SDW_CCACHE})
endif()
