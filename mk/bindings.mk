# The language bindings (bindings/python, bindings/android; docs/bindings.md): the shared library
# they load, and the tools their tests need (tests/test_bindings.c, tests/api/test_install.c).

# The same sources once more as position-independent objects in $(BUILD)/pic, linked whole.
$(BUILD)/libpocketflash.so: pic-lib
	$(CC) $(CFLAGS) -shared -Wl,-soname,libpocketflash.so -o $@ \
	    -Wl,--whole-archive $(BUILD)/pic/libpocketflash.a -Wl,--no-whole-archive $(LDLIBS)
pic-lib:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/pic OPT="$(OPT) -fPIC" $(BUILD)/pic/libpocketflash.a
libpocketflash.so: $(BUILD)/libpocketflash.so
.PHONY: pic-lib libpocketflash.so

# Tools the tests of the bindings and the CMake package run: javac (the JDK: the Java binding's
# test compiles the class and its JNI file against jni.h), cmake (the find_package consumer test),
# clang (the module map test). What is missing is installed with apt-get when make runs as root;
# otherwise, or when that fails, one line says so and those tests are reported skipped by name.
PF_TEST_TOOLS ?= javac:default-jdk-headless cmake:cmake clang:clang
.PHONY: test-tools
test-tools:
	@missing=""; for tp in $(PF_TEST_TOOLS); do command -v $${tp%%:*} >/dev/null 2>&1 || missing="$$missing $${tp#*:}"; done; \
	[ -z "$$missing" ] && exit 0; \
	if [ "$(DEPS_UID)" = 0 ] && command -v $(APT_GET) >/dev/null 2>&1; then \
	    echo "pocketflash: test tools missing, installing with apt-get:$$missing"; \
	    { DEBIAN_FRONTEND=noninteractive $(APT_GET) update -qq && \
	      DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq --no-install-recommends $$missing; } >/dev/null 2>&1 || \
	    echo "pocketflash: apt-get could not install$$missing; the tests that need them are skipped"; \
	else \
	    echo "pocketflash: test tools missing (apt-get install$$missing); the tests that need them are skipped"; \
	fi
test: $(BUILD)/libpocketflash.so
test test-data: test-tools
