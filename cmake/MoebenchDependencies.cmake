# Third-party dependencies, all from Debian packages (see scripts/install-deps.sh).
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(tomlplusplus 3 REQUIRED)
# moebench_toml: Debian's shared libtomlplusplus, or, with MOEBENCH_TOML_HEADER_ONLY (the fuzz
# preset), toml++ compiled from its headers into moebench so that its parser is instrumented for
# coverage and the sanitizers like the rest. Its internal debug assertions stay off as in Debian's
# release build of the library, the one moebench runs with: some fire on malformed input that
# the library otherwise rejects with a parse error (toml++ 3.3.0: `[` followed by a control
# character), which would stop every fuzzing run at the first such input.
option(MOEBENCH_TOML_HEADER_ONLY "Compile toml++ from its headers instead of linking libtomlplusplus" OFF)
add_library(moebench_toml INTERFACE)
if(MOEBENCH_TOML_HEADER_ONLY)
  get_target_property(MOEBENCH_TOML_INCLUDE tomlplusplus::tomlplusplus INTERFACE_INCLUDE_DIRECTORIES)
  target_include_directories(moebench_toml SYSTEM INTERFACE ${MOEBENCH_TOML_INCLUDE})
  target_compile_definitions(moebench_toml INTERFACE TOML_HEADER_ONLY=1)
  target_compile_options(moebench_toml INTERFACE "-DTOML_ASSERT(expr)=static_assert(true)")
else()
  target_link_libraries(moebench_toml INTERFACE tomlplusplus::tomlplusplus)
endif()
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 2 REQUIRED)
find_package(MPI REQUIRED COMPONENTS C)
find_package(SQLite3 REQUIRED)

# OpenBLAS through its CBLAS interface. Debian ships the pthread build under an
# include sub-folder; prefer it so cblas.h and openblas_set_num_threads match.
find_path(OPENBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/aarch64-linux-gnu/openblas-pthread
        /usr/include/openblas /usr/include
  NO_DEFAULT_PATH)
find_library(OPENBLAS_LIBRARY NAMES openblas)
if(NOT OPENBLAS_INCLUDE_DIR OR NOT OPENBLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS not found: install libopenblas-dev (scripts/install-deps.sh)")
endif()
add_library(moebench_blas INTERFACE)
target_include_directories(moebench_blas SYSTEM INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_link_libraries(moebench_blas INTERFACE ${OPENBLAS_LIBRARY})

if(MOEBENCH_BUILD_TESTS)
  find_package(Qt6 6.2 REQUIRED COMPONENTS Core Test)
endif()
