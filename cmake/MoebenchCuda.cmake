# CUDA is optional: kernels/ is configured only when a CUDA compiler is found, and then
# moebench_core links it (MOEBENCH_HAVE_CUDA=1) so that run.device = "cuda" can use it.
# Without nvcc everything else builds and every non-GPU test runs (CI has no GPU).
include(CheckLanguage)
set(MOEBENCH_HAVE_CUDA OFF)
set(MOEBENCH_CUDA_ARCHITECTURES "80;90" CACHE STRING
    "GPU architectures kernels/ is built for (Ampere sm_80, Hopper sm_90)")
if(MOEBENCH_ENABLE_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES ${MOEBENCH_CUDA_ARCHITECTURES})
    enable_language(CUDA)
    set(MOEBENCH_HAVE_CUDA ON)
    add_subdirectory(kernels)
  else()
    message(STATUS "moebench: no CUDA compiler found, building the CPU path only")
  endif()
endif()
