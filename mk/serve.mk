# pocketflash serve: the build switch, its chat page and the test clients.
ifeq ($(SERVE),0)
$(BUILD)/cli/serve_http.o: CFLAGS += -DPF_NO_SERVE
endif

# GET / serves cli/serve_page.html (plain HTML and JavaScript), compiled into the CLI as a C array.
%/gen/serve_page.c: cli/serve_page.html mk/embed.sh
	@mkdir -p $(@D)
	sh mk/embed.sh pf_serve_page $< $@
.PRECIOUS: %/gen/serve_page.c
%/gen/serve_page.o: %/gen/serve_page.c
	$(CC) $(CFLAGS) -c $< -o $@

# $(call pf_npm_install,PACKAGE@VERSION,DIR,WHAT): npm installs the package into DIR. Without npm,
# or when the install fails (offline), make says so in one line and goes on: the tests that need it
# (WHAT) are then reported skipped by name.
pf_npm_install = if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then \
	    mkdir -p $(2) && cd $(2) && \
	    { [ -f package.json ] || echo '{"private": true}' >package.json; } && \
	    npm install --silent --no-audit --no-fund --fetch-retries=1 $(1) >/dev/null 2>&1 || \
	    echo "pocketflash: npm could not install $(1) into $(2); $(3) are skipped"; \
	else \
	    echo "pocketflash: no npm/node; $(3) are skipped"; \
	fi

# The serve tests (tests/test_serve.c) talk to the server through the official OpenAI Node SDK,
# installed here into .cache/openai-node.
OPENAI_NPM ?= openai@5.23.2
OPENAI_DIR ?= .cache/openai-node
$(OPENAI_DIR)/node_modules/openai/package.json:
	@$(call pf_npm_install,$(OPENAI_NPM),$(OPENAI_DIR),the serve tests that need the OpenAI Node SDK)
test test-data: $(OPENAI_DIR)/node_modules/openai/package.json
test: export PF_OPENAI_DIR := $(abspath $(OPENAI_DIR))

# The page's browser test drives Debian's chromium with playwright-core, installed here into
# .cache/playwright-node. `make test` installs chromium too where it runs as root with apt-get (as
# the other test tools); elsewhere, without either, the test is skipped by name.
.PHONY: browser-deps
browser-deps:
	@command -v chromium >/dev/null 2>&1 || [ "$(DEPS_UID)" != 0 ] || ! command -v $(APT_GET) >/dev/null 2>&1 || \
	    { $(call pf_ensure,test dependencies,$(call pf_need,command -v chromium,chromium)); }
test: browser-deps
PLAYWRIGHT_NPM ?= playwright-core@1.65.1
PLAYWRIGHT_DIR ?= .cache/playwright-node
$(PLAYWRIGHT_DIR)/node_modules/playwright-core/package.json:
	@$(call pf_npm_install,$(PLAYWRIGHT_NPM),$(PLAYWRIGHT_DIR),the page's browser tests)
test test-data: $(PLAYWRIGHT_DIR)/node_modules/playwright-core/package.json
test: export PF_PLAYWRIGHT_DIR := $(abspath $(PLAYWRIGHT_DIR))
