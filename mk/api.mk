# The public API's own tests and packaging (issue 18): the test file compiled against include/
# alone, the example program, make install (library, header, pocketflash.pc) and make tsan.

# tests/api/*.c see include/ only (CFLAGS without -I.); they link into the test runner.
API_TEST_SRC := $(sort $(wildcard tests/api/*.c))
API_TEST_OBJ := $(API_TEST_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ += $(API_TEST_OBJ)
$(BUILD)/tests/run_tests: $(API_TEST_OBJ)
$(BUILD)/tests/api/%.o: tests/api/%.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -I.,$(CFLAGS)) -MMD -MP -c $< -o $@
-include $(API_TEST_OBJ:.o=.d)

# The example program, built by `make` against include/ and the library only.
EXAMPLES := $(BUILD)/examples/chat $(BUILD)/examples/minimal
all: $(EXAMPLES)
test: $(EXAMPLES)
$(BUILD)/examples/%: examples/%.c $(BUILD)/libpocketflash.a include/pocketflash.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -I.,$(CFLAGS)) -o $@ $< $(BUILD)/libpocketflash.a $(LDLIBS)

# make install [PREFIX=/usr/local] [DESTDIR=]: the library, the public header and a pkg-config
# file (static library: its Libs name the run-time libraries too), and the CLI.
PREFIX ?= /usr/local
PF_VERSION := $(shell sed -n 's/^\#define PF_VERSION_STRING "\(.*\)"/\1/p' include/pocketflash.h)
# The template is CMake's too (cmake --install writes the same file).
$(BUILD)/pocketflash.pc: cmake/pocketflash.pc.in include/pocketflash.h mk/api.mk
	@mkdir -p $(dir $@)
	sed -e 's|@PF_PREFIX@|$(PREFIX)|' -e 's|@PF_LIBDIR@|lib|' -e 's|@PF_VERSION@|$(PF_VERSION)|' \
	    -e 's|@PF_LIBS@|$(LDLIBS)|' $< >$@
install: libpocketflash.a pocketflash $(BUILD)/pocketflash.pc
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin
	install -m 644 libpocketflash.a $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/pocketflash.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/pocketflash.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -m 755 pocketflash $(DESTDIR)$(PREFIX)/bin/
.PHONY: install $(BUILD)/pocketflash.pc

# ThreadSanitizer: the concurrency test of the public API (N sessions on N threads sharing a model and a draft)
# in their own build folder.
# The CLI and the examples are built the same way, so T= can select any test.
tsan:
	$(MAKE) BUILD=build-tsan OPT="-O1 -fsanitize=thread" build-tsan/tests/run_tests pocketflash-tsan \
	    build-tsan/examples/chat build-tsan/examples/minimal
	TSAN_OPTIONS=halt_on_error=1 PF_SHARED=$(SHARED) PF_CLI=./pocketflash-tsan PF_EXAMPLE_CHAT=build-tsan/examples/chat \
	    build-tsan/tests/run_tests $(or $(T),api_concurrent)
pocketflash-tsan: $(CLI_SRC:%.c=build-tsan/%.o) build-tsan/gen/serve_page.o build-tsan/libpocketflash.a
	$(CC) $(CFLAGS) -o $@ $^ $(CLI_LDLIBS) $(LDLIBS)
.PHONY: tsan
clean: clean-tsan
clean-tsan:
	rm -rf build-tsan pocketflash-tsan
.PHONY: clean-tsan
