# pocketflash serve: the build switch and the test client.
ifeq ($(SERVE),0)
$(BUILD)/cli/serve_http.o: CFLAGS += -DPF_NO_SERVE
endif

# The serve tests (tests/test_serve.c) talk to the server through the official OpenAI Node SDK,
# installed here into .cache/openai-node. Without npm, or when the install fails (offline), make
# says so in one line and goes on: the tests that need the SDK are then reported skipped by name.
OPENAI_NPM ?= openai@5.23.2
OPENAI_DIR ?= .cache/openai-node
$(OPENAI_DIR)/node_modules/openai/package.json:
	@if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then \
	    mkdir -p $(OPENAI_DIR) && cd $(OPENAI_DIR) && \
	    { [ -f package.json ] || echo '{"private": true}' >package.json; } && \
	    npm install --silent --no-audit --no-fund --fetch-retries=1 $(OPENAI_NPM) >/dev/null 2>&1 || \
	    echo "pocketflash: npm could not install $(OPENAI_NPM) into $(OPENAI_DIR); the serve tests that need it are skipped"; \
	else \
	    echo "pocketflash: no npm/node; the serve tests that need the OpenAI Node SDK are skipped"; \
	fi
test test-data: $(OPENAI_DIR)/node_modules/openai/package.json
test: export PF_OPENAI_DIR := $(abspath $(OPENAI_DIR))
