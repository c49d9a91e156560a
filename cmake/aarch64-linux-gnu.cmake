# Cross build for ARM64 Linux with Debian's cross compiler (gcc-aarch64-linux-gnu, the zstd and
# xxhash headers and libraries under /usr/aarch64-linux-gnu), as `make arm64` does:
#   cmake -B build-cmake-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#   cmake --build build-cmake-arm64 -j2 && ctest --test-dir build-cmake-arm64
# CTest runs the suite under qemu-user (the emulator below); the tests reach the ARM CLI through a
# wrapper script CMakeLists.txt writes next to it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(PF_ARM64_ROOT /usr/aarch64-linux-gnu CACHE PATH "the cross sysroot")
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_FIND_ROOT_PATH ${PF_ARM64_ROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L ${PF_ARM64_ROOT})
# Programs linked statically: qemu-user 7.2 never returns from the first pthread_create of a
# dynamically linked aarch64 program (mk/arm64.mk).
set(CMAKE_EXE_LINKER_FLAGS_INIT -static)
# The sysroot has no libmicrohttpd: the CLI is built without `serve`.
set(PF_SERVE OFF CACHE BOOL "")
