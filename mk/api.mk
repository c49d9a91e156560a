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
EXAMPLES := $(BUILD)/examples/chat
all: $(EXAMPLES)
test: $(EXAMPLES)
$(BUILD)/examples/%: examples/%.c $(BUILD)/libpocketflash.a include/pocketflash.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -I.,$(CFLAGS)) -o $@ $< $(BUILD)/libpocketflash.a $(LDLIBS)
