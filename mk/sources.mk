# The source rule, the one list both build systems read: the Makefile includes this file and
# CMakeLists.txt parses its `NAME := VALUE` lines (a $(NAME) in a value is expanded; nothing else
# of make's syntax may appear here).
#   library:  every *.c directly in the LIB_DIRS folders, plus the target architecture's kernel
#             folder (x86-64: LIB_DIRS_X86, aarch64: LIB_DIRS_ARM, other: none, the scalar reference)
#   CLI:      every cli/*.c;  test runner: every tests/*.c and tests/api/*.c (the latter see include/ only)
#   flags:    a file whose name ends in _avx2.c, _avxvnni.c, _avx512.c, _dotprod.c or _i8mm.c is
#             compiled with that level's flags below; the kernels choose among them at run time
#             (CPUID on x86-64, getauxval / sysctlbyname on aarch64), so one binary runs on any CPU.
LIB_DIRS := formats kernels grammar engine draft verify api convert eval
LIB_DIRS_X86 := kernels/x86
LIB_DIRS_ARM := kernels/arm
AVX2_FLAGS := -mavx2 -mfma -mf16c
AVXVNNI_FLAGS := $(AVX2_FLAGS) -mavxvnni
AVX512_FLAGS := -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16 -mavx2 -mfma -mf16c
DOTPROD_FLAGS := -march=armv8.2-a+dotprod
I8MM_FLAGS := -march=armv8.2-a+dotprod+i8mm
