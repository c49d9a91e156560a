# The language bindings (bindings/python, bindings/android; docs/bindings.md): the shared library
# they load, and the JDK their tests need (tests/test_bindings.c).

# The same sources once more as position-independent objects in $(BUILD)/pic, linked whole.
$(BUILD)/libpocketflash.so: pic-lib
	$(CC) $(CFLAGS) -shared -Wl,-soname,libpocketflash.so -o $@ \
	    -Wl,--whole-archive $(BUILD)/pic/libpocketflash.a -Wl,--no-whole-archive $(LDLIBS)
pic-lib:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/pic OPT="$(OPT) -fPIC" $(BUILD)/pic/libpocketflash.a
libpocketflash.so: $(BUILD)/libpocketflash.so
.PHONY: pic-lib libpocketflash.so

# The Java test compiles the binding with javac and its JNI file against the JDK's jni.h. A JDK is
# installed with apt-get when make runs as root; otherwise, or when that fails, one line says so
# and the Java test is reported skipped (the Python tests need only python3).
PF_JDK_PACKAGE ?= default-jdk-headless
.PHONY: jdk
jdk:
	@command -v javac >/dev/null 2>&1 && exit 0; \
	if [ "$(DEPS_UID)" = 0 ] && command -v $(APT_GET) >/dev/null 2>&1; then \
	    echo "pocketflash: no JDK for the Java binding's test, installing with apt-get: $(PF_JDK_PACKAGE)"; \
	    { DEBIAN_FRONTEND=noninteractive $(APT_GET) update -qq && \
	      DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq --no-install-recommends $(PF_JDK_PACKAGE); } >/dev/null 2>&1 || \
	    echo "pocketflash: apt-get could not install $(PF_JDK_PACKAGE); the Java binding's test is skipped"; \
	else \
	    echo "pocketflash: no JDK (apt-get install $(PF_JDK_PACKAGE)); the Java binding's test is skipped"; \
	fi
test: $(BUILD)/libpocketflash.so
test test-data: jdk
